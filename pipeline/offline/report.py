"""A role's findings, one per (rule, subject) per document, each with its line and exact quote.

The first place a rule meets a subject (a term, an acronym, a sentence) stands; later places
are listed in the finding's message, so one acronym used forty times is one finding.
"""

from __future__ import annotations

from collections.abc import Callable

from pipeline.formats.findings import SEVERITY_ORDER, Finding, Severity, also_note
from pipeline.offline.text import review_finding


class Report:
    def __init__(self, section_at: Callable[[int], str | None]) -> None:
        self.section_at = section_at
        self.items: dict[tuple[str, str], Finding] = {}
        self.also: dict[tuple[str, str], list[int]] = {}

    def __contains__(self, key: tuple[str, str]) -> bool:
        return key in self.items

    def add(
        self,
        rule: str,
        subject: str,
        severity: Severity,
        line: int,
        quote: str,
        message: str,
        fix: str,
        decision_shaped: bool = False,
    ) -> None:
        key = (rule, subject)
        first = self.items.get(key)
        if first is not None:
            if line != first.line and line not in self.also[key]:
                self.also[key].append(line)
            if SEVERITY_ORDER[severity] < SEVERITY_ORDER[first.severity]:
                self.items[key] = first.model_copy(update={"severity": severity})
            return
        self.items[key] = review_finding(
            rule,
            message,
            fix,
            severity=severity,
            section=self.section_at(line),
            quote=quote,
            line=line,
            decision_shaped=decision_shaped,
        )
        self.also[key] = []

    def also_at(self, rule: str, subject: str, line: int) -> None:
        """Another place of a subject already reported (nothing happens when it is not)."""
        key = (rule, subject)
        if key in self.items and line != self.items[key].line and line not in self.also[key]:
            self.also[key].append(line)

    def findings(self) -> list[Finding]:
        out = []
        for key, item in self.items.items():
            also = self.also[key]
            out.append(item.model_copy(update={"message": item.message + also_note(also)}) if also else item)
        return sorted(out, key=lambda f: (f.line or 0, f.rule))
