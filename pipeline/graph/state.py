"""The run state: what changes across rounds, as typed records. It is the checkpoint format.

Checkpoints hold these records as plain JSON (nodes return them dumped, see
``build.node``) and every node and router reads them validated back into the models below,
so a typo in a field name is a type error, not a KeyError in the middle of a paid run.
``format`` tells a state written by an earlier designloop apart (runs.records.RUN_FORMAT).
"""

from __future__ import annotations

import operator
from typing import Annotated, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from pipeline.agents.usage import RoleUsage
from pipeline.formats.findings import Finding, blocking
from pipeline.formats.kinds import RunVerdict, Status
from pipeline.formats.settled import SectionRecord, Span
from pipeline.formats.slices import Slice
from pipeline.runs.records import RUN_FORMAT

PASS: RunVerdict = "PASS"
BLOCKER_REMAINS: RunVerdict = "BLOCKER REMAINS"
SHOULD_FIX_REMAINS: RunVerdict = "SHOULD-FIX REMAINS"
INCONCLUSIVE: RunVerdict = "INCONCLUSIVE"
"""A required role never returned a valid review (or the author never wrote a draft)."""
DECISION_NEEDED: RunVerdict = "DECISION NEEDED"
"""Phase 4 found a decision-shaped gap; only a phase-0 decision can settle it."""


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AuthorTurn(Record):
    """Step 1 (and each later round): what the author's spawn left on disk."""

    round: int
    draft_ok: bool
    status: Status
    summary: str = ""
    error: str | None = None


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
    kind: str
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
    kind: str
    round: int
    draft: str


class Audit(Record):
    """One auditor slice's review."""

    round: int
    index: int
    slice: Slice
    status: Status
    error: str | None = None
    findings: list[Finding] = []
    prompt: str = ""


class SecondCheck(Record):
    """The round's second check: absorption (phase 1) or fidelity (phase 4)."""

    round: int
    role: str
    status: Status
    error: str | None = None
    findings: list[Finding] = []


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
    findings: list[Finding] = []
    output_path: str | None = None
    digest: str | None = None
    """The SHA-256 of the draft (and its companion) the gate read."""


class Inconclusive(Record):
    """A role that returned no valid output twice in a round (the seed's re-run-once rule)."""

    round: int
    role: str
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


class FileDiff(Record):
    """What a run changed in one file, from the file's bytes before and after (never from what
    a model said it did)."""

    file: str
    """Relative to the repository root."""
    created: bool = False
    deleted: bool = False
    added: list[str] = []
    removed: list[str] = []
    changed: list[str] = []
    """The ``##`` sections (and ``# Part`` headings) added, removed and changed."""
    lines_added: int = 0
    lines_removed: int = 0

    def describe(self) -> str:
        name = self.file.rsplit("/", 1)[-1]
        if self.created or self.deleted:
            what = "created" if self.created else "deleted"
            return f"{name} {what} ({self.lines_added or self.lines_removed} lines)"
        parts = [
            f"{verb} " + ", ".join(f'§"{n}"' for n in names)
            for verb, names in (("added", self.added), ("removed", self.removed), ("changed", self.changed))
            if names
        ]
        lines = f"+{self.lines_added} -{self.lines_removed} lines"
        return f"{name}: " + ("; ".join(parts) + f" ({lines})" if parts else lines)

    def to_json(self) -> dict[str, object]:
        return {
            "file": self.file,
            "created": self.created,
            "deleted": self.deleted,
            "sections": {"added": self.added, "removed": self.removed, "changed": self.changed},
            "lines_added": self.lines_added,
            "lines_removed": self.lines_removed,
        }


class RoleReport(Record):
    """What a check raised in one round, for the checks whose latest result is all the loop
    keeps (the mechanical checks, the comprehension gate): the review's story (graph.story)."""

    round: int
    role: str
    status: Status = "ok"
    findings: list[Finding] = []


class Outcome(Record):
    """How the loop exited, and what remains."""

    verdict: RunVerdict
    remaining: list[Finding] = []


class RunState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: int = RUN_FORMAT
    run_id: str
    kind: str = "phase1-creation"
    round: int = 1
    budget: int = 3
    draft: str = ""
    """The document the run writes, relative to the repository root."""
    target: Literal["design", "both"] = "design"
    """both when the run also writes the mechanics companion."""
    author: AuthorTurn | None = None
    author_failures: int = 0
    flagged: list[Finding] = []
    mechanical: list[Finding] = []
    mechanical_target: str = "design"
    fanout: FanOut | None = None
    audits: Annotated[list[Audit], operator.add] = Field(default_factory=list)
    seconds: Annotated[list[SecondCheck], operator.add] = Field(default_factory=list)
    merged: Merged | None = None
    evaluation: Evaluation | None = None
    settled: dict[str, SectionRecord] = {}
    comprehension: Comprehension | None = None
    surfaced: Annotated[list[Surfaced], operator.add] = Field(default_factory=list)
    inconclusive: Annotated[list[Inconclusive], operator.add] = Field(default_factory=list)
    notes: Annotated[list[str], operator.add] = Field(default_factory=list)
    usage: Annotated[list[RoleUsage], operator.add] = Field(default_factory=list)
    history: Annotated[list[RoundHistory], operator.add] = Field(default_factory=list)
    reports: Annotated[list[RoleReport], operator.add] = Field(default_factory=list)
    outcome: Outcome | None = None
    review_entry: int | None = None
    diff: list[FileDiff] = []
    """The real diff of every file the run changed (the review log and --json say it)."""
    stamped: bool = False
    summary: str | None = None

    def budget_left(self) -> bool:
        return self.round < self.budget

    def this_round_evaluation(self) -> Evaluation | None:
        """The evaluation of this round, if this round's draft got as far as the per-round pair."""
        return self.evaluation if self.evaluation and self.evaluation.round == self.round else None

    def this_round_comprehension(self) -> Comprehension | None:
        c = self.comprehension
        return c if c and c.round == self.round else None


class Update(TypedDict, total=False):
    """What a node returns: a subset of RunState's fields (lists are appended, not replaced)."""

    kind: str
    round: int
    budget: int
    draft: str
    target: Literal["design", "both"]
    author: AuthorTurn
    author_failures: int
    flagged: list[Finding]
    mechanical: list[Finding]
    mechanical_target: str
    fanout: FanOut
    audits: list[Audit]
    seconds: list[SecondCheck]
    merged: Merged
    evaluation: Evaluation
    settled: dict[str, SectionRecord]
    comprehension: Comprehension
    surfaced: list[Surfaced]
    inconclusive: list[Inconclusive]
    notes: list[str]
    usage: list[RoleUsage]
    history: list[RoundHistory]
    reports: list[RoleReport]
    outcome: Outcome
    review_entry: int
    diff: list[FileDiff]
    stamped: bool
    summary: str
