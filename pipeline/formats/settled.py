"""Section-keyed settled state: the cross-round convergence mechanism.

A section is keyed by its identity (heading text) and an SHA-256 over its text folded
with the standing anchors that exist (Overview, Core Concepts when present). A section
that returned clean is settled; a settled section whose hash is unchanged has its
findings dropped and its slice may be skipped. Wiring errors are never dropped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from pipeline.formats.design_doc import DesignDoc
from pipeline.formats.findings import WIRING_ERROR, Finding
from pipeline.formats.slices import Slice

Action = Literal["skip", "audit"]


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

    def keeps(self, hashes: dict[str, str], finding: Finding) -> bool:
        """Whether a finding survives: wiring errors always; others unless settled and unchanged."""
        section = finding.section
        if is_wiring(finding) or section is None or section not in hashes:
            return True
        return self.decide({section: hashes[section]})[section] != "skip"

    def filter(self, hashes: dict[str, str], findings: Iterable[Finding]) -> list[Finding]:
        """Drop findings on settled-and-unchanged sections; keep wiring errors always."""
        return [f for f in findings if self.keeps(hashes, f)]

    def update(
        self, hashes: dict[str, str], audited: Iterable[str], findings: Iterable[Finding], round_: int
    ) -> None:
        """Re-evaluate the sections audited this round: settled when no open finding."""
        dirty = {f.section for f in findings if f.blocking and f.section is not None and not is_wiring(f)}
        for name in audited:
            if name in hashes:
                self.sections[name] = SectionRecord(
                    hash=hashes[name], settled=name not in dirty, round=round_
                )
        for name in list(self.sections):
            if name not in hashes:
                del self.sections[name]

    def skippable(self, slices: list[Slice], doc: DesignDoc, hashes: dict[str, str]) -> list[bool]:
        """A slice may be skipped when every section it touches is settled and unchanged."""
        decisions = self.decide(hashes)
        result: list[bool] = []
        for start, end in slices:
            touched = {s.name for s in doc.sections if s.start <= end and s.end >= start}
            if not touched:  # only a preamble (stamp, blank lines): nothing to audit
                result.append(True)
                continue
            result.append(all(decisions.get(name) == "skip" for name in touched))
        return result

    def to_json(self) -> dict[str, object]:
        return {name: r.model_dump() for name, r in self.sections.items()}

    @classmethod
    def from_json(cls, data: dict[str, dict[str, object]]) -> SettledState:
        try:
            return cls({name: SectionRecord.model_validate(raw) for name, raw in data.items()})
        except ValidationError as exc:
            raise ValueError(f"malformed settled-state record: {exc.errors()[0]['msg']}") from None
