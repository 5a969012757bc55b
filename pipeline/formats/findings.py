"""The one Finding: from a role's typed output and the mechanical checks, through the settled
state and the evaluation, to the review log, ``--json``, SARIF and the live view.

The fields a role returns are the review output contract (docs/formats.md §9). ``file``,
``auto_applicable``, ``fix`` and ``role`` are filled in by the orchestrator and never shown to
a model: they are left out of the JSON schema a model is given.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

Severity = Literal["blocker", "should-fix", "suggestion"]
SEVERITY_ORDER: dict[str, int] = {"blocker": 0, "should-fix": 1, "suggestion": 2}
WIRING_ERROR = "wiring-error"
MECHANICAL: Final = "mechanical"


class Fix(BaseModel):
    """An exact replacement: on ``line``, at 1-based ``column``, ``expect`` becomes ``insert``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    line: int
    column: int
    expect: str
    insert: str

    def to_json(self) -> dict[str, object]:
        return {"line": self.line, "column": self.column, "delete": self.expect, "insert": self.insert}


class Finding(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    severity: Severity
    section: str | None = Field(default=None, description="the heading text of the section it is in")
    line: int | None = Field(
        default=None, ge=1, description="the line number the read tool shows before the tab (1-based)"
    )
    quote: str | None = Field(
        default=None, description="words copied exactly from that line's text after the tab"
    )
    rule: str = Field(min_length=1, description="the rule ID")
    message: str = Field(min_length=1, description="what is wrong")
    suggested_fix: str = Field(default="", description="the concrete change")
    decision_shaped: bool = Field(default=False, description="true only where the procedure says so")
    file: SkipJsonSchema[str | None] = None
    """The reviewed file, as the orchestrator shows it (relative to the repository root)."""
    auto_applicable: SkipJsonSchema[bool] = False
    fix: SkipJsonSchema[Fix | None] = None
    role: SkipJsonSchema[str | None] = None
    """Who reported it: a role's name, or ``mechanical``."""
    unlocated: SkipJsonSchema[bool] = False
    """The orchestrator could not find the quote in the reviewed file (formats.md §9)."""

    @property
    def blocking(self) -> bool:
        return self.severity in ("blocker", "should-fix")

    def sort_key(self) -> tuple[int, str, int, str]:
        return (SEVERITY_ORDER[self.severity], self.file or "", self.line or 0, self.rule)

    def located(self, file: str | None = None, role: str | None = None) -> Finding:
        """This finding with the orchestrator's fields filled in."""
        update: dict[str, object] = {}
        if file is not None and self.file is None:
            update["file"] = file
        if role is not None and self.role is None:
            update["role"] = role
        return self.model_copy(update=update) if update else self

    def where(self) -> str:
        """``§"section" (line N)`` as far as it is known."""
        parts = []
        if self.section:
            parts.append(f'§"{self.section}"')
        if self.line:
            parts.append(f"line {self.line}")
        return " ".join(parts)

    def describe(self) -> str:
        """One line for the review log and the live view: rule, place, message and quote."""
        where = self.where()
        text = f"{self.rule}" + (f" {where}" if where else "") + f": {self.message}"
        if self.quote and self.quote not in self.message:
            text += f' — "{" ".join(self.quote.split())}"'
        if self.unlocated:
            text += " (unlocated: the quote is not in the file)"
        return text

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "rule": self.rule,
            "severity": self.severity,
            "file": self.file,
            "line": self.line,
            "section": self.section,
            "quote": self.quote,
            "message": self.message,
            "suggested_fix": self.suggested_fix,
            "auto_applicable": self.auto_applicable,
        }
        if self.decision_shaped:
            data["decision_shaped"] = True
        if self.unlocated:
            data["unlocated"] = True
        if self.role is not None:
            data["role"] = self.role
        if self.fix is not None:
            data["fix"] = self.fix.to_json()
        return data


def blocking(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if f.blocking]


def has_blocker(findings: Iterable[Finding]) -> bool:
    return any(f.severity == "blocker" for f in findings)


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    return sorted(findings, key=Finding.sort_key)


def _subject(f: Finding) -> tuple[object, ...]:
    """What a finding is about: its rule, file and quote (an acronym, a term, a sentence)."""
    quote = " ".join((f.quote or "").split()).lower()
    return (f.rule, f.file, quote) if quote else (f.rule, f.file, f.section, f.line, f.message)


ALSO_SHOWN = 8
ALSO_RE = re.compile(r" \(also on lines? ([0-9, ]+?)(?:, \.\.\.)?\)$")


def also_note(lines: Sequence[int]) -> str:
    """`` (also on lines 7, 9)``: the other places of one finding's subject, the first eight."""
    shown = ", ".join(str(n) for n in lines[:ALSO_SHOWN]) + (", ..." if len(lines) > ALSO_SHOWN else "")
    return f" (also on line{'s' if len(lines) > 1 else ''} {shown})"


def with_also(message: str, lines: Iterable[int]) -> str:
    """``message`` with its "also on" note naming ``lines`` as well (one note, never two)."""
    match = ALSO_RE.search(message)
    listed = [int(n) for n in match.group(1).split(", ")] if match else []
    every = sorted(set(listed) | set(lines))
    if every == listed:
        return message
    return (message[: match.start()] if match else message) + also_note(every)


RESTATES: dict[str, tuple[tuple[str, str], ...]] = {
    # review rule -> (mechanical rule, a word its message carries) it can only restate
    "cr-no-overview": (("dsc-section-shape", "Overview"),),
    "cr-dangling-ref": (("dsc-mechanics-link", ""), ("dsc-full-design-link", ""), ("dsc-reverse-ref", "")),
    "cr-tldr-mismatch": (("dsc-section-shape", "TL;DR"),),
    "fid-missing-symbol": (("clm-unresolved", ""),),
    "fid-missing-path": (("clm-unresolved", ""),),
}
"""A reviewer's finding that says what a mechanical check already says of the same place."""


def _restated(f: Finding, mechanical: list[Finding]) -> bool:
    """Whether ``f`` repeats a mechanical finding: a rule that can only restate it, about the
    same file and (where the reviewer names one) the same line or section."""
    for rule, word in RESTATES.get(f.rule, ()):
        for m in mechanical:
            if m.rule != rule or m.file != f.file or word not in m.message:
                continue
            if f.rule == "cr-no-overview" or f.line == m.line or (f.section and f.section == m.section):
                return True
    return False


def merge(findings: Iterable[Finding]) -> list[Finding]:
    """One deduplicated list, blockers first (the seed's Step 5).

    Findings about the same subject (same rule, file and quote), such as one acronym reported
    by several auditor slices, become one: the most severe, earliest one stands and lists the
    other lines in its message. A reviewer's finding that restates a mechanical one (same
    place, same shape of rule: ``RESTATES``) is reported once, as the mechanical finding.
    """
    every = list(findings)
    mechanical = [f for f in every if f.rule.startswith(("dsc-", "clm-"))]
    groups: dict[tuple[object, ...], list[Finding]] = {}
    for f in every:
        if mechanical and _restated(f, mechanical):
            continue
        groups.setdefault(_subject(f), []).append(f)
    out: list[Finding] = []
    for group in groups.values():
        first = min(group, key=lambda f: (SEVERITY_ORDER[f.severity], f.line or 0))
        others = {f.line for f in group if f.line is not None and f.line != first.line}
        if others:
            message = with_also(first.message, others)
            if message != first.message:
                first = first.model_copy(update={"message": message})
        out.append(first)
    return sorted(out, key=lambda f: SEVERITY_ORDER[f.severity])
