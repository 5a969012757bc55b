"""What both kinds of run keep: the state base and the records its finish works from.

A run's state is its checkpoint. Nodes return typed updates that are stored as plain JSON
(``graph.node``) and every node and router reads them validated back into the models, so a
typo in a field name is a type error, not a KeyError in the middle of a paid run. ``format``
tells a state written by an earlier designloop apart (runs.records.RUN_FORMAT).

``RunStateBase`` holds what every run has: its id and kind, the round and the budget, the
document it writes, its notes, usage and checks, and the finish's records (the outcome, the
review-log entry as appended, the real diff, the outcome line). The creation kinds' state
(``graph.create.state.RunState``) and the interactive kinds' (``graph.edit.state.EditState``)
add what their loops change; each says which reviews it ran (``reviews``), so the review's
story (``graph.story``) is told from either.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Annotated, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from pipeline.agents.usage import RoleUsage
from pipeline.formats.findings import Finding
from pipeline.formats.kinds import Kind, Role, RunVerdict, Status
from pipeline.runs.records import RUN_FORMAT

PASS: RunVerdict = "PASS"
BLOCKER_REMAINS: RunVerdict = "BLOCKER REMAINS"
SHOULD_FIX_REMAINS: RunVerdict = "SHOULD-FIX REMAINS"
INCONCLUSIVE: RunVerdict = "INCONCLUSIVE"
"""A required role never returned a valid review (or the author never wrote a draft)."""
DECISION_NEEDED: RunVerdict = "DECISION NEEDED"
"""Phase 4 found a decision-shaped gap; only a phase-0 decision can settle it."""

Reviewer = Role | Literal["mechanical"]
"""Who raised a finding: a role, or the mechanical checks (formats.findings.MECHANICAL)."""


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


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
    role: Reviewer
    status: Status = "ok"
    findings: list[Finding] = []


class Outcome(Record):
    """How the loop exited, and what remains."""

    verdict: RunVerdict
    remaining: list[Finding] = []
    declined: list[str] = []
    """The parts of the user's instruction the inline editor declined: a flag on any verdict,
    so a run that did only part of what was asked never ends a plain PASS."""


@dataclass(frozen=True, slots=True)
class Review:
    """One review one role made in one round (an auditor's slice is one of several)."""

    round: int
    role: Reviewer
    status: Status
    findings: list[Finding]


class RunStateBase(BaseModel):
    """What every run's state holds; each kind's state adds its loop's records."""

    model_config = ConfigDict(extra="forbid")

    format: int = RUN_FORMAT
    run_id: str
    kind: Kind
    round: int = 1
    budget: int = 3
    draft: str = ""
    """The document the run writes, relative to the repository root."""
    notes: Annotated[list[str], operator.add] = Field(default_factory=list)
    usage: Annotated[list[RoleUsage], operator.add] = Field(default_factory=list)
    reports: Annotated[list[RoleReport], operator.add] = Field(default_factory=list)
    outcome: Outcome | None = None
    review_entry: int | None = None
    entry: str | None = None
    """The review-log entry as the run appended it (or found it appended): what Step 9 shows."""
    diff: list[FileDiff] = Field(default_factory=list)
    """The real diff of every file the run changed (the review log and --json say it)."""
    summary: str | None = None

    def budget_left(self) -> bool:
        return self.round < self.budget

    def unchanged_rounds(self) -> set[int]:
        """The rounds whose author (or editor) turn changed no byte of what the run writes."""
        return set()

    def reviews(self) -> list[Review]:
        """Every review of every round: the mechanical checks and the gates kept as reports;
        each kind adds the reviews its loop keeps in records of their own."""
        return [Review(r.round, r.role, r.status, r.findings) for r in self.reports]


class BaseUpdate(TypedDict, total=False):
    """What a node returns: a subset of the state's fields (lists are appended, not replaced)."""

    round: int
    budget: int
    draft: str
    notes: list[str]
    usage: list[RoleUsage]
    reports: list[RoleReport]
    outcome: Outcome
    review_entry: int
    entry: str
    diff: list[FileDiff]
    summary: str
