"""Section-keyed settled state: the cross-round convergence mechanism.

A section is keyed by its identity (heading text) and an SHA-256 over its text folded
with the standing anchors that exist (Overview, Core Concepts when present). A section is
settled only after an audit of its current bytes came back clean; a settled section whose
hash is unchanged has its findings dropped and its slice may be skipped. Wiring errors are
never dropped.

A blocking finding is placed on a section by its section name, else by its line; one that
names neither (or a section that does not exist, or a line outside every section) keeps
every section of the slice that reported it unsettled, and such a finding from a whole-doc
role (the second check, the comprehension gate) keeps the whole document unsettled.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from pipeline.formats.design_doc import DesignDoc
from pipeline.formats.findings import WIRING_ERROR, Finding
from pipeline.formats.slices import Slice

Action = Literal["skip", "audit"]
Span = tuple[str, int, int]
"""A section's name and its first and last line (1-based, inclusive)."""


def section_hashes(doc: DesignDoc) -> dict[str, str]:
    """SHA-256 per ``#``/``##`` section, folded with the existing standing anchors."""
    doc.require_unique_sections()
    anchor = hashlib.sha256()
    for section in doc.anchors():
        anchor.update(b"\x00anchor\x00" + section.name.encode() + b"\x00" + doc.text_of(section).encode())
    folded = anchor.digest()
    hashes: dict[str, str] = {}
    for section in doc.sections:
        digest = hashlib.sha256(folded)
        digest.update(b"\x00section\x00" + doc.text_of(section).encode())
        hashes[section.name] = digest.hexdigest()
    return hashes


class SectionRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    hash: str
    settled: bool
    round: int


def is_wiring(finding: Finding) -> bool:
    return finding.rule == WIRING_ERROR


def spans_of(doc: DesignDoc) -> list[Span]:
    return [(s.name, s.start, s.end) for s in doc.sections]


def touched(spans: Sequence[Span], part: Slice) -> list[str]:
    """The sections a slice covers, wholly or in part."""
    start, end = part
    return [name for name, first, last in spans if first <= end and last >= start]


def placed(finding: Finding, spans: Sequence[Span], hashes: dict[str, str]) -> str | None:
    """The section a finding is about: the one it names, else the one holding its line. A
    finding whose only place is the title line is about the whole document (formats.md §9:
    a finding that names no place quotes the title), so it is placed on no one section."""
    if finding.section is not None and finding.section in hashes:
        return finding.section
    if finding.line is not None and not (spans and finding.line == spans[0][1]):
        for name, first, last in spans:
            if first <= finding.line <= last and name in hashes:
                return name
    return None


@dataclass(frozen=True, slots=True)
class SliceAudit:
    """One auditor slice that returned a valid review this round, with its kept findings."""

    slice: Slice
    findings: Sequence[Finding]


@dataclass(slots=True)
class SettledState:
    sections: dict[str, SectionRecord] = field(default_factory=dict)

    def decide(self, hashes: dict[str, str]) -> dict[str, Action]:
        """Per section: skip when settled and unchanged, else audit."""
        out: dict[str, Action] = {}
        for name, digest in hashes.items():
            record = self.sections.get(name)
            out[name] = "skip" if record and record.settled and record.hash == digest else "audit"
        return out

    def keeps(self, hashes: dict[str, str], finding: Finding, spans: Sequence[Span] = ()) -> bool:
        """Whether a finding survives: wiring errors and unplaced findings always; others
        unless their section is settled and unchanged."""
        section = placed(finding, spans, hashes)
        if is_wiring(finding) or section is None:
            return True
        return self.decide({section: hashes[section]})[section] != "skip"

    def filter(
        self, hashes: dict[str, str], findings: Iterable[Finding], spans: Sequence[Span] = ()
    ) -> list[Finding]:
        """Drop findings on settled-and-unchanged sections; keep wiring errors always."""
        return [f for f in findings if self.keeps(hashes, f, spans)]

    def update(
        self, hashes: dict[str, str], spans: Sequence[Span], audits: Iterable[SliceAudit], round_: int
    ) -> None:
        """Re-evaluate the sections this round's valid audits covered: a section is settled
        when no open finding of its slice is placed on it and none of its slice is unplaced.
        An open finding placed outside its slice unsettles that section too."""
        audited: set[str] = set()
        dirty: set[str] = set()
        for audit in audits:
            covered = touched(spans, audit.slice)
            audited.update(covered)
            for finding in audit.findings:
                if not finding.blocking:
                    continue
                section = None if is_wiring(finding) else placed(finding, spans, hashes)
                dirty.update(covered if section is None else [section])
        for name in audited | dirty:
            if name in hashes:
                self.sections[name] = SectionRecord(
                    hash=hashes[name], settled=name not in dirty, round=round_
                )
        self.forget(hashes)

    def unsettle(
        self, hashes: dict[str, str], spans: Sequence[Span], findings: Iterable[Finding], round_: int
    ) -> None:
        """A whole-doc role's open findings: the section each is placed on is unsettled; one
        placed on no section unsettles the whole document."""
        for finding in findings:
            if not finding.blocking:
                continue
            section = None if is_wiring(finding) else placed(finding, spans, hashes)
            for name in hashes if section is None else [section]:
                self.sections[name] = SectionRecord(hash=hashes[name], settled=False, round=round_)
        self.forget(hashes)

    def forget(self, hashes: dict[str, str]) -> None:
        for name in list(self.sections):
            if name not in hashes:
                del self.sections[name]

    def unchecked(self, hashes: dict[str, str]) -> list[str]:
        """The sections whose current bytes no clean audit has covered."""
        return [name for name, action in self.decide(hashes).items() if action != "skip"]

    def skippable(self, slices: list[Slice], spans: Sequence[Span], hashes: dict[str, str]) -> list[bool]:
        """A slice may be skipped when every section it touches is settled and unchanged."""
        decisions = self.decide(hashes)
        result: list[bool] = []
        for part in slices:
            names = touched(spans, part)
            if not names:  # only a preamble (stamp, blank lines): nothing to audit
                result.append(True)
                continue
            result.append(all(decisions.get(name) == "skip" for name in names))
        return result

    def to_json(self) -> dict[str, object]:
        return {name: r.model_dump() for name, r in self.sections.items()}

    @classmethod
    def from_json(cls, data: dict[str, dict[str, object]]) -> SettledState:
        try:
            return cls({name: SectionRecord.model_validate(raw) for name, raw in data.items()})
        except ValidationError as exc:
            raise ValueError(f"malformed settled-state record: {exc.errors()[0]['msg']}") from None
