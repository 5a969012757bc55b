"""The research log: its Decision Log entries and its adversarial gate record (docs/formats.md §3-4)."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pipeline.errors import InputError
from pipeline.formats.markdown import Field, Heading, Structure, parse_fields, parse_structure
from pipeline.formats.textio import TextFile, read_text

DECISION_LOG = "Decision Log"
GATE_RECORD = "Adversarial gate record"
ENTRY_RE = re.compile(r"^D(?P<num>\d+):\s*(?P<title>\S.*)$")
GATE_HEAD_RE = re.compile(r"^(?P<date>\d{4}-\d{2}-\d{2})\s*(?:—|--|-)\s*(?P<verdict>PASS|NEEDS REVISION)\s*$")
ITEM_RE = re.compile(
    r"^\s*[-*]\s+\[(?P<mark>[ xX])\]\s+(?P<kind>blocker|should-fix|suggestion)\s*:\s*(?P<text>.*)$",
    re.IGNORECASE,
)
NOT_A_FORK = frozenset({"", "none", "n/a", "na", "-", "—"})

GateState = Literal["resolved", "open", "not-run"]
GateVerdict = Literal["PASS", "NEEDS REVISION"]
"""A gate entry's verdict (the adversarial review's, in the research log)."""


@dataclass(frozen=True, slots=True)
class Decision:
    number: int
    title: str
    line: int
    fields: dict[str, Field]

    @property
    def id(self) -> str:
        return f"D{self.number}"

    def value(self, name: str) -> str | None:
        found = self.fields.get(name)
        return found.value if found else None

    @property
    def load_bearing(self) -> bool:
        """True when ``**Alternatives rejected:**`` names a real fork."""
        value = self.value("Alternatives rejected")
        if value is None:
            return False
        return value.strip().rstrip(".").strip().lower() not in NOT_A_FORK


@dataclass(frozen=True, slots=True)
class GateItem:
    checked: bool
    severity: str
    text: str
    line: int


@dataclass(frozen=True, slots=True)
class GateEntry:
    date: dt.date
    verdict: GateVerdict
    line: int
    items: tuple[GateItem, ...]

    @property
    def open_items(self) -> list[GateItem]:
        return [i for i in self.items if not i.checked and i.severity in ("blocker", "should-fix")]

    @property
    def is_open(self) -> bool:
        return self.verdict == "NEEDS REVISION" and bool(self.open_items)


@dataclass(frozen=True, slots=True)
class Gate:
    state: GateState
    entry: GateEntry | None
    has_section: bool

    @property
    def open_items(self) -> list[GateItem]:
        return self.entry.open_items if self.entry and self.state == "open" else []

    def message(self) -> str:
        if self.state == "resolved":
            return "the adversarial gate is resolved"
        if self.state == "open":
            assert self.entry is not None
            return (
                f"the adversarial gate entry of {self.entry.date.isoformat()} is open "
                f"with {len(self.open_items)} unchecked blocker/should-fix item(s)"
            )
        if self.has_section:
            return "the adversarial gate record has no entries: the gate has not run"
        return "the research log has no '## Adversarial gate record' section: the gate has not run"

    def to_json(self) -> dict[str, object]:
        entry = None
        if self.entry is not None:
            entry = {
                "date": self.entry.date.isoformat(),
                "verdict": self.entry.verdict,
                "line": self.entry.line,
            }
        return {
            "state": self.state,
            "entry": entry,
            "open_items": [{"severity": i.severity, "text": i.text, "line": i.line} for i in self.open_items],
            "message": self.message(),
        }


@dataclass(slots=True)
class ResearchLog:
    file: TextFile
    structure: Structure
    decisions: list[Decision]
    gate_entries: list[GateEntry]
    has_gate_section: bool

    @property
    def path(self) -> Path:
        return self.file.path

    def decision(self, number: int) -> Decision | None:
        return next((d for d in self.decisions if d.number == number), None)

    def load_bearing(self) -> list[Decision]:
        return [d for d in self.decisions if d.load_bearing]

    def gate(self) -> Gate:
        if not self.gate_entries:
            return Gate("not-run", None, self.has_gate_section)
        # Latest date decides; on equal dates the later one in the file.
        latest = max(self.gate_entries, key=lambda e: (e.date, e.line))
        return Gate("open" if latest.is_open else "resolved", latest, True)


def section_span(structure: Structure, name: str) -> tuple[int, int] | None:
    heads = structure.headings
    for index, head in enumerate(heads):
        if head.level == 2 and head.text.strip().lower() == name.lower():
            end = len(structure.lines)
            for later in heads[index + 1 :]:
                if later.level <= 2:
                    end = later.line - 1
                    break
            return head.line, end
    return None


def _subheads(structure: Structure, span: tuple[int, int]) -> list[Heading]:
    return [h for h in structure.headings if h.level == 3 and span[0] < h.line <= span[1]]


def _parse_decisions(file: TextFile, structure: Structure) -> list[Decision]:
    span = section_span(structure, DECISION_LOG)
    if span is None:
        return []
    heads = _subheads(structure, span)
    decisions: list[Decision] = []
    seen: dict[int, int] = {}
    for index, head in enumerate(heads):
        match = ENTRY_RE.match(head.text)
        if not match:
            raise InputError(
                f'malformed Decision Log heading "### {head.text}"',
                file=file.path,
                line=head.line,
                hint='write each entry as "### D<n>: <title>", for example "### D3: Cache reads"',
            )
        number = int(match.group("num"))
        if number in seen:
            raise InputError(
                f"duplicate decision ID D{number} (first at line {seen[number]}, again at line {head.line})",
                file=file.path,
                line=head.line,
                hint=f"give one of the two D{number} entries a new, unused number",
            )
        seen[number] = head.line
        end = heads[index + 1].line - 1 if index + 1 < len(heads) else span[1]
        decisions.append(
            Decision(
                number, match.group("title").strip(), head.line, parse_fields(structure, head.line + 1, end)
            )
        )
    return decisions


def _parse_gate(file: TextFile, structure: Structure) -> tuple[list[GateEntry], bool]:
    span = section_span(structure, GATE_RECORD)
    if span is None:
        return [], False
    heads = _subheads(structure, span)
    entries: list[GateEntry] = []
    for index, head in enumerate(heads):
        match = GATE_HEAD_RE.match(head.text)
        if not match:
            raise InputError(
                f'malformed gate record heading "### {head.text}"',
                file=file.path,
                line=head.line,
                hint='write "### YYYY-MM-DD — PASS" or "### YYYY-MM-DD — NEEDS REVISION"',
            )
        try:
            date = dt.date.fromisoformat(match.group("date"))
        except ValueError:
            raise InputError(
                f'gate record heading has an impossible date "{match.group("date")}"',
                file=file.path,
                line=head.line,
                hint="use a real calendar date in YYYY-MM-DD form",
            ) from None
        end = heads[index + 1].line - 1 if index + 1 < len(heads) else span[1]
        items: list[GateItem] = []
        for number in range(head.line + 1, end + 1):
            if structure.in_code(number):
                continue
            item = ITEM_RE.match(structure.lines[number - 1])
            if item:
                items.append(
                    GateItem(
                        checked=item.group("mark") in "xX",
                        severity=item.group("kind").lower(),
                        text=item.group("text").strip(),
                        line=number,
                    )
                )
        verdict: GateVerdict = "PASS" if match.group("verdict") == "PASS" else "NEEDS REVISION"
        entries.append(GateEntry(date, verdict, head.line, tuple(items)))
    return entries, True


def parse_research_log(file: TextFile) -> ResearchLog:
    structure = parse_structure(file.text, file.lines, file.path)
    entries, has_gate = _parse_gate(file, structure)
    return ResearchLog(file, structure, _parse_decisions(file, structure), entries, has_gate)


def load_research_log(path: Path) -> ResearchLog:
    return parse_research_log(read_text(path, what="research log"))
