"""What a run records as it goes: one typed event per thing that happened, each a line of
runs/<run-id>/events.jsonl (runs.event_log writes and reads the file).

Every event has a time, the writer's pid, and a ``type`` that names one of the models below (a
``check`` event names its check as well: runs.check_events). ``Event`` is the union of them all,
discriminated on ``type``, read through one ``TypeAdapter``, so every view (status, runs,
report, a batch's rows, the live view, resume) reads attributes that mypy checks, never
``event.get("...")``. An event of a type this designloop does not know (a log written by
another version) is kept as it is, a ``RawEvent``; a field a newer version added has a
default, so an older log stays readable.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Literal

from pydantic import ConfigDict, Discriminator, Field, Tag, TypeAdapter

from pipeline.formats.kinds import Kind, Role, RunVerdict, Status
from pipeline.runs.check_events import AnyCheck
from pipeline.runs.event_fields import RAW, BaseEvent, Cost, Findings, RevisionRef, Spent, field_of


class RunStarted(BaseEvent):
    """The run directory was made: its record and before-snapshot are on disk."""

    type: Literal["run_start"] = "run_start"
    run_kind: Kind
    directory: str
    models: dict[str, str] = Field(default_factory=dict)


class Started(BaseEvent):
    """A process began working on the run: ``start`` the first time, ``resume`` after."""

    type: Literal["start", "resume"]
    budget_tokens: int | None = None


class RoundStarted(BaseEvent):
    type: Literal["round"] = "round"
    round: int
    budget: int = 0


class Spawned(BaseEvent):
    """One role's spawn, with what it spent and what it read."""

    type: Literal["spawn"] = "spawn"
    round: int
    role: Role
    status: Status
    slice: tuple[int, int] | None = None
    model: str = ""
    cache_hits: int = 0
    calls: int = 0
    tokens: int = 0
    cost_usd: Cost = Decimal(0)
    findings: int = 0
    attempts: int = 1
    params: str = ""
    """The params file, relative to the repository root."""
    error: str | None = None
    refusals: list[str] = Field(default_factory=list)
    reads: list[str] = Field(default_factory=list)
    started: str = ""
    warmup_wait: float | None = None
    """For an auditor of a fan-out: the seconds it waited for the first spawn's first answer."""

    @property
    def played_by(self) -> str:
        """The model that played the role, ``offline`` for any of the offline engine's names
        (empty when the event names none)."""
        return "offline" if self.model.startswith("offline") else self.model


class SliceSkipped(BaseEvent):
    """An auditor slice whose sections are settled and unchanged."""

    type: Literal["slice_skipped"] = "slice_skipped"
    round: int
    slice: tuple[int, int]
    index: int = 0


class Warmed(BaseEvent):
    """The round's first auditor has its first answer: the others start."""

    type: Literal["warmed"] = "warmed"
    round: int = 0


class Stamped(BaseEvent):
    """The workflow-sha stamp on line 1 of a document (Step 1)."""

    type: Literal["stamp"] = "stamp"
    path: str
    round: int | None = None
    sha: str | None = None
    kept: bool = False
    """The stamp the document had before the run was kept, byte for byte."""
    wrote: bool = True
    """Whether line 1 was written now (False: it already held the stamp)."""


class Settled(BaseEvent):
    type: Literal["settled"] = "settled"
    round: int
    sections: list[str] = Field(default_factory=list)


class Surfaced(BaseEvent):
    """A decision-shaped finding appended to the research log (the S3 loop-back)."""

    type: Literal["surfaced"] = "surfaced"
    round: int
    role: str
    decision: int | None = None
    message: str = ""


class ReviewLogged(BaseEvent):
    """Step 7's entry in the review log (``appended`` False: it was there already)."""

    type: Literal["review_log"] = "review_log"
    entry: int
    appended: bool = True
    withheld: list[str] = Field(default_factory=list)
    """The entry's lines as they were before the research log's words were withheld."""


class Finished(BaseEvent):
    """The finish's record, written last and once: the run's outcome and what remained."""

    type: Literal["outcome"] = "outcome"
    outcome: RunVerdict
    line: str = ""
    rounds: int = 0
    review_log_entry: int | None = None
    findings: Findings = Field(default_factory=list)
    declined: list[str] = Field(default_factory=list)
    """The parts of the user's instruction the inline editor declined."""


class Wrote(BaseEvent):
    """The documents the run writes, as they are now (SHA-256 by repository-relative path)."""

    type: Literal["wrote"] = "wrote"
    files: dict[str, str | None] = Field(default_factory=dict)


class ClaimsLedgered(BaseEvent):
    """The claims ledger of every document the run writes, refreshed by the finish from the
    bytes on disk and the code (grounding.ledger): how many claims each holds, and what
    the resolution skipped (a code file not UTF-8 or too big)."""

    type: Literal["claims"] = "claims"
    files: dict[str, int] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)


class RevisionRecorded(BaseEvent):
    """The revisions the finish recorded of the documents the run leaves (docs/lifecycle.md),
    by document (design, mechanics, final, final-mechanics); at phase 4 also the design.md it
    finalised (``<number or ->:<sha256>``)."""

    type: Literal["revision"] = "revision"
    files: dict[str, RevisionRef] = Field(default_factory=dict)
    finalised: str | None = None


class Stopped(BaseEvent):
    type: Literal["stopped"] = "stopped"
    message: str = ""
    usage: Spent | None = None
    partial: Spent | None = None
    """What the spawn that was stopped had spent (no spawn event records it)."""
    flag: str | None = None
    """The option that lets ``resume`` go on (--budget, --max-requests ...)."""


class Paused(BaseEvent):
    """Paused at the S3 gate."""

    type: Literal["paused"] = "paused"
    gate: str | None = None
    message: str | None = None


class Discarded(BaseEvent):
    type: Literal["discarded"] = "discarded"
    message: str = ""


class OutputsRecorded(BaseEvent):
    """The digest of what a finished batch run left on disk (runs.fingerprint)."""

    type: Literal["outputs"] = "outputs"
    digest: str


class EditApplied(BaseEvent):
    type: Literal["edit_applied"] = "edit_applied"
    files: list[str] = Field(default_factory=list)


class SyncSuggested(BaseEvent):
    type: Literal["sync_suggested"] = "sync_suggested"
    count: int
    message: str = ""


class Fixed(BaseEvent):
    """An interactive kind's fix round (Step 6)."""

    type: Literal["fix"] = "fix"
    round: int
    auto: int = 0
    editor: int = 0


class SpawnBegun(BaseEvent):
    """A spawn has begun: told to the run's listeners (the live view) and never written, since
    its ``Spawned`` event records it whole once it ends."""

    type: Literal["spawn_begun"] = "spawn_begun"
    round: int
    role: Role
    slice: tuple[int, int] | None = None
    model: str = ""


class RawEvent(BaseEvent):
    """A line of a type this designloop does not know, kept as it is."""

    model_config = ConfigDict(extra="allow", frozen=True)

    type: str


TYPES: dict[str, str] = {
    "run_start": "run_start",
    "start": "start",
    "resume": "start",
    "round": "round",
    "spawn": "spawn",
    "slice_skipped": "slice_skipped",
    "warmed": "warmed",
    "check": "check",
    "stamp": "stamp",
    "settled": "settled",
    "surfaced": "surfaced",
    "review_log": "review_log",
    "outcome": "outcome",
    "wrote": "wrote",
    "claims": "claims",
    "revision": "revision",
    "stopped": "stopped",
    "paused": "paused",
    "discarded": "discarded",
    "outputs": "outputs",
    "edit_applied": "edit_applied",
    "sync_suggested": "sync_suggested",
    "fix": "fix",
}


def _type_tag(value: object) -> str:
    return TYPES.get(str(field_of(value, "type")), RAW)


Event = Annotated[
    Annotated[RunStarted, Tag("run_start")]
    | Annotated[Started, Tag("start")]
    | Annotated[RoundStarted, Tag("round")]
    | Annotated[Spawned, Tag("spawn")]
    | Annotated[SliceSkipped, Tag("slice_skipped")]
    | Annotated[Warmed, Tag("warmed")]
    | Annotated[AnyCheck, Tag("check")]
    | Annotated[Stamped, Tag("stamp")]
    | Annotated[Settled, Tag("settled")]
    | Annotated[Surfaced, Tag("surfaced")]
    | Annotated[ReviewLogged, Tag("review_log")]
    | Annotated[Finished, Tag("outcome")]
    | Annotated[Wrote, Tag("wrote")]
    | Annotated[ClaimsLedgered, Tag("claims")]
    | Annotated[RevisionRecorded, Tag("revision")]
    | Annotated[Stopped, Tag("stopped")]
    | Annotated[Paused, Tag("paused")]
    | Annotated[Discarded, Tag("discarded")]
    | Annotated[OutputsRecorded, Tag("outputs")]
    | Annotated[EditApplied, Tag("edit_applied")]
    | Annotated[SyncSuggested, Tag("sync_suggested")]
    | Annotated[Fixed, Tag("fix")]
    | Annotated[RawEvent, Tag(RAW)],
    Discriminator(_type_tag),
]
"""Any line of the log."""
EVENT: TypeAdapter[Event] = TypeAdapter(Event)


def parse_event(data: object) -> Event:
    """One event from its JSON data (a line of the log, or a row of a shared store)."""
    return EVENT.validate_python(data)


def event_of_line(line: bytes) -> Event:
    """One event from a line of the log, parsed and validated in one step (``parse_event`` of
    the line's JSON, at twice its speed: replaying the logs is what ``runs`` spends its time on)."""
    return EVENT.validate_json(line)
