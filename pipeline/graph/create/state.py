"""The creation kinds' run state (phase1-creation, phase4-creation): what changes across rounds
of the author's loop, as typed records (the checkpoint format; graph.state has the base)."""

from __future__ import annotations

import operator
from typing import Annotated, Literal

from pydantic import Field

from pipeline.formats.findings import Finding, blocking
from pipeline.formats.kinds import PHASE1, CreationKind, Role, Status, Target
from pipeline.formats.settled import SectionRecord, Span
from pipeline.formats.slices import Slice
from pipeline.graph.state import BaseUpdate, Record, Review, RunStateBase

SecondRole = Literal["absorption-check", "fidelity-check"]
AUTHOR: Role = "design-author"
AUDITOR: Role = "readability-auditor"
COMPREHENSION: Role = "comprehension-review"


def second_role(kind: CreationKind) -> SecondRole:
    """The round's second check: absorption at phase 1, fidelity at phase 4."""
    return "absorption-check" if kind == PHASE1 else "fidelity-check"


class AuthorTurn(Record):
    """Step 1 (and each later round): what the author's spawn left on disk."""

    round: int
    draft_ok: bool
    status: Status
    summary: str = ""
    error: str | None = None
    before: str | None = None
    """The fingerprint of the run's outputs when the turn began (graph.create.author.fingerprint)."""


class SectionSpan(Record):
    name: str
    start: int
    end: int


class FanOut(Record):
    """Step 4's plan for a round: the partition, the settled-state skips, the section map."""

    round: int
    slices: list[Slice]
    skip: list[bool]
    total_lines: int
    hashes: dict[str, str]
    sections: list[SectionSpan]
    digest: str | None = None
    """The SHA-256 of the draft the round's auditors read."""

    def spans(self) -> list[Span]:
        return [(s.name, s.start, s.end) for s in self.sections]


class SliceTask(Record):
    """The Send payload of one auditor spawn."""

    run_id: str
    kind: CreationKind
    round: int
    draft: str
    index: int
    slice: Slice
    slice_count: int
    total_lines: int
    warm: bool


class CheckTask(Record):
    """The Send payload of the round's second check."""

    run_id: str
    kind: CreationKind
    round: int
    draft: str


class Audit(Record):
    """One auditor slice's review."""

    round: int
    index: int
    slice: Slice
    status: Status
    error: str | None = None
    findings: list[Finding] = Field(default_factory=list)
    prompt: str = ""


class SecondCheck(Record):
    """The round's second check: absorption (phase 1) or fidelity (phase 4)."""

    round: int
    role: SecondRole
    status: Status
    error: str | None = None
    findings: list[Finding] = Field(default_factory=list)


class Merged(Record):
    """Step 5: the round's review findings as one deduplicated list, blockers first."""

    round: int
    auditor: list[Finding]
    second: list[Finding]
    inconclusive: list[str]
    prefix_share: float = 1.0


class Evaluation(Record):
    """Step 6: the dual-clean verdict of a round, after the settled-state filter."""

    round: int
    dual_clean: bool
    auditor: list[Finding]
    second: list[Finding]
    inconclusive: list[str]
    surface: list[Finding]
    prefix_share: float = 1.0

    @property
    def blocking(self) -> list[Finding]:
        return blocking(self.auditor) + blocking(self.second)


class Comprehension(Record):
    """Step 4's cold comprehension gate."""

    round: int
    status: Status
    verdict: str
    error: str | None = None
    findings: list[Finding] = Field(default_factory=list)
    output_path: str | None = None
    digest: str | None = None
    """The SHA-256 of the draft (and its companion) the gate read."""


class Inconclusive(Record):
    """A role that returned no valid output twice in a round (the seed's re-run-once rule)."""

    round: int
    role: Role
    where: str = ""
    """The slice, for an auditor."""
    error: str | None = None

    def describe(self) -> str:
        who = f"{self.role} {self.where}".strip()
        why = f": {self.error}" if self.error else ""
        return f"{who} returned no valid output twice in round {self.round}{why}"


class Surfaced(Record):
    """A decision-shaped finding appended to the research log (the S3 loop-back)."""

    round: int
    role: str
    decision: int | None
    marker: str
    message: str


class RoundHistory(Record):
    round: int
    dual_clean: bool
    auditor_findings: int
    second_findings: int
    skipped_slices: int
    slices: int
    inconclusive: list[str]
    prefix_share: float


class RunState(RunStateBase):
    kind: CreationKind = PHASE1
    target: Literal["design", "both"] = "design"
    """both when the run also writes the mechanics companion."""
    author: AuthorTurn | None = None
    author_failures: int = 0
    flagged: list[Finding] = Field(default_factory=list)
    mechanical: list[Finding] = Field(default_factory=list)
    mechanical_target: Target = "design"
    fanout: FanOut | None = None
    audits: Annotated[list[Audit], operator.add] = Field(default_factory=list)
    seconds: Annotated[list[SecondCheck], operator.add] = Field(default_factory=list)
    merged: Merged | None = None
    evaluation: Evaluation | None = None
    settled: dict[str, SectionRecord] = Field(default_factory=dict)
    comprehension: Comprehension | None = None
    surfaced: Annotated[list[Surfaced], operator.add] = Field(default_factory=list)
    inconclusive: Annotated[list[Inconclusive], operator.add] = Field(default_factory=list)
    history: Annotated[list[RoundHistory], operator.add] = Field(default_factory=list)
    stamped: bool = False
    unchanged: Annotated[list[int], operator.add] = Field(default_factory=list)
    """The rounds after the first whose author turn (with the stamp) left the outputs' bytes as
    they were: the review's story says the author left the draft unchanged."""

    def unchanged_rounds(self) -> set[int]:
        return set(self.unchanged)

    def reviews(self) -> list[Review]:
        return [
            *super().reviews(),
            *(Review(a.round, "readability-auditor", a.status, a.findings) for a in self.audits),
            *(Review(c.round, c.role, c.status, c.findings) for c in self.seconds),
        ]

    def this_round_evaluation(self) -> Evaluation | None:
        """The evaluation of this round, if this round's draft got as far as the per-round pair."""
        return self.evaluation if self.evaluation and self.evaluation.round == self.round else None

    def this_round_comprehension(self) -> Comprehension | None:
        c = self.comprehension
        return c if c and c.round == self.round else None


class Update(BaseUpdate, total=False):
    """What a creation node returns: a subset of RunState's fields."""

    kind: CreationKind
    target: Literal["design", "both"]
    author: AuthorTurn
    author_failures: int
    flagged: list[Finding]
    mechanical: list[Finding]
    mechanical_target: Target
    fanout: FanOut
    audits: list[Audit]
    seconds: list[SecondCheck]
    merged: Merged
    evaluation: Evaluation
    settled: dict[str, SectionRecord]
    comprehension: Comprehension
    surfaced: list[Surfaced]
    inconclusive: list[Inconclusive]
    history: list[RoundHistory]
    stamped: bool
    unchanged: list[int]
