"""The interactive kinds' run state: the single-agent loop's typed records (the checkpoint format).

It shares the state base (graph.state) with the creation kinds; what differs is the loop: one
inline apply, the cold-read scope, a cold read per round and the editor's fixes.
"""

from __future__ import annotations

import operator
from typing import Annotated, Literal

from pydantic import Field

from pipeline.formats.edit_request import EditRequest
from pipeline.formats.findings import Finding, blocking
from pipeline.formats.kinds import EditKind, Status, Target
from pipeline.graph.state import BaseUpdate, Record, Review, RunStateBase

ColdScope = Literal["bounded", "whole-doc", "skipped"]
ColdReader = Literal["comprehension-review", "readability-auditor"]


class Applied(Record):
    """Step 1 (and 1.5): what the edit changed on disk."""

    applied: bool
    files: list[str]
    """Files the edit changed, relative to the repository root."""
    created: list[str] = Field(default_factory=list)
    changed_section: str | None = None
    summary: str
    editor: str | None = None
    """The inline editor's own summary, when it ran (its words, shown as its note)."""
    declined: list[str] = Field(default_factory=list)
    """The parts of the user's instruction the inline editor declined (its own list)."""
    missed: str | None = None
    """Why the edit counts as not applied although files changed: an instruction that left
    the section it names as it was."""
    touched_mechanics: bool = False
    references: list[str] = Field(default_factory=list)


class SyncDelta(Record):
    """Step 1.5: the companion's changes since the last sync."""

    since: int | None
    """The review-log entry of the last sync (or phase1-creation)."""
    baseline: bool
    """Whether the companion as it was at the last sync was on record."""
    mechanics_edits: int
    changes: list[str]
    zero: bool
    passages: list[Finding] = Field(default_factory=list)
    """What the editor was asked to distill; each is checked against design.md every round."""


class Scope(Record):
    """Step 2: the cold-read scope and the mechanical check's flags."""

    cold_read: ColdScope
    sections: list[str] = Field(default_factory=list)
    escalated: bool = False
    """The periodic whole-doc counter made this read whole-doc."""
    periodic_count: int = 0
    """This mutation's place among the counted entries (all but mechanics-edit)."""
    target: Target
    mechanical_scope: Literal["bounded", "whole-doc"]
    changed_section: str | None = None
    prose_pass: bool = False


class ColdRead(Record):
    """Step 4: one review role's cold read in one round."""

    round: int
    role: ColdReader
    status: Status
    verdict: str
    error: str | None = None
    findings: list[Finding] = Field(default_factory=list)


class FixTurn(Record):
    """Step 6: one round's fixes, exact and through the editor."""

    round: int
    auto: int
    editor: list[str] = Field(default_factory=list)
    """The editor's summaries, one per file it worked on."""
    changed: bool


class EditRound(Record):
    round: int
    mechanical: int
    cold_read: int
    inconclusive: list[str] = Field(default_factory=list)


class EditState(RunStateBase):
    kind: EditKind
    request: EditRequest
    applied: Applied | None = None
    sync: SyncDelta | None = None
    scope: Scope | None = None
    mechanical: list[Finding] = Field(default_factory=list)
    reads: Annotated[list[ColdRead], operator.add] = Field(default_factory=list)
    merged: list[Finding] = Field(default_factory=list)
    fixes: Annotated[list[FixTurn], operator.add] = Field(default_factory=list)
    history: Annotated[list[EditRound], operator.add] = Field(default_factory=list)
    sync_suggestion: str | None = None

    def reviews(self) -> list[Review]:
        return [*super().reviews(), *(Review(r.round, r.role, r.status, r.findings) for r in self.reads)]

    def this_round_reads(self) -> list[ColdRead]:
        return [r for r in self.reads if r.round == self.round]

    def open_findings(self) -> list[Finding]:
        """This round's blockers and should-fix findings, blockers first."""
        return blocking(self.merged)


class EditUpdate(BaseUpdate, total=False):
    applied: Applied
    sync: SyncDelta
    scope: Scope
    mechanical: list[Finding]
    reads: list[ColdRead]
    merged: list[Finding]
    fixes: list[FixTurn]
    history: list[EditRound]
    sync_suggestion: str
