"""Run records: runs/<run-id>/events.jsonl, append-only, and the typed events it holds.

Every line is one event: a time, the writer's pid, and a ``type`` that names one of the models
below (a ``check`` event names its check as well). ``EventLog.emit`` takes a model and writes it
as one JSON line; ``read_events`` reads the lines back through one ``TypeAdapter`` of the
discriminated union, so every view (status, runs, report, a batch's rows, the live view,
resume) reads attributes that mypy checks, never ``event.get("...")``. A line of a type this
designloop does not know (a log written by another version) is kept as it is, a ``RawEvent``;
a field a newer version added has a default, so an older log stays readable. A line that
names a known type but does not hold its fields is damage, named by its file and line.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import json
import os
import threading
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
    ValidationError,
)

from pipeline.errors import InputError
from pipeline.formats.findings import Finding
from pipeline.formats.kinds import Kind, Role, RunVerdict, Status, Target
from pipeline.formats.space import FULL, out_of_space

EVENTS = "events.jsonl"


def _cost(value: object) -> object:
    """US dollars as written: a decimal string (an older log may hold a number, or nothing)."""
    if value is None or value == "":
        return Decimal(0)
    if isinstance(value, float | int):
        return Decimal(str(value))
    return value


Cost = Annotated[Decimal, BeforeValidator(_cost)]
"""Every cost in the log, parsed one way: a ``Decimal``, written as its string."""


def _findings(value: object) -> object:
    """The findings of an older log that still read as today's Finding (the rest are left out)."""
    if not isinstance(value, list):
        return value
    kept = []
    for item in value:
        try:
            kept.append(Finding.model_validate(item))
        except ValidationError:
            continue
    return kept


Findings = Annotated[list[Finding], BeforeValidator(_findings)]


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


class BaseEvent(BaseModel):
    """What every line holds: when, which process, what happened."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    time: str = Field(default_factory=_now)
    pid: int = Field(default_factory=os.getpid)


class Spent(BaseModel):
    """Usage as a stop records it (agents.usage.Usage.to_json)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cost_usd: Cost = Decimal(0)
    calls: int = 0
    cache_hits: int = 0


class RunStarted(BaseEvent):
    """The run directory was made: its record and before-snapshot are on disk."""

    type: Literal["run_start"] = "run_start"
    run_kind: Kind
    directory: str
    models: dict[str, str] = {}


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
    refusals: list[str] = []
    reads: list[str] = []
    started: str = ""
    warmup_wait: float | None = None
    """For an auditor of a fan-out: the seconds it waited for the first spawn's first answer."""


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


class CheckEvent(BaseEvent):
    type: Literal["check"] = "check"
    round: int = 0

    def details(self) -> dict[str, Any]:
        """The check's own fields (what the live view and ``status --json`` show)."""
        return self.model_dump(mode="json", exclude={"time", "pid", "type"})


class MechanicalCheck(CheckEvent):
    check: Literal["mechanical"] = "mechanical"
    findings: int = 0
    blockers: int = 0
    target: Target | None = None
    scope: str | None = None
    found: Findings = []


class DualCleanCheck(CheckEvent):
    """Step 6's evaluation of a round's per-round pair."""

    check: Literal["dual-clean"] = "dual-clean"
    clean: bool = False
    auditor: int = 0
    second: int = 0
    inconclusive: list[str] = []
    prefix_share: float = 1.0
    found: Findings = []


class ComprehensionCheck(CheckEvent):
    """The creation kinds' comprehension gate."""

    check: Literal["comprehension"] = "comprehension"
    verdict: str = ""
    findings: int = 0
    found: Findings = []


class ColdReadCheck(CheckEvent):
    """An interactive kind's cold read, named by its role."""

    check: Literal["comprehension-review", "readability-auditor"]
    verdict: str = ""
    findings: int = 0


class GateCheck(CheckEvent):
    """The S3 gate found the research log's adversarial gate resolved."""

    check: Literal["s3-gate"] = "s3-gate"
    state: str = ""


class ScopeCheck(CheckEvent):
    """An interactive kind's cold-read scope (Step 2)."""

    check: Literal["scope"] = "scope"
    cold_read: str = ""
    sections: list[str] = []
    escalated: bool = False
    target: Target | None = None


class MergedCheck(CheckEvent):
    """An interactive kind's round, merged (Step 5)."""

    check: Literal["merged"] = "merged"
    open: int = 0
    inconclusive: list[str] = []
    findings: Findings = []


class VerdictCheck(CheckEvent):
    """Step 6: the verdict the finish is about to record."""

    check: Literal["outcome"] = "outcome"
    outcome: RunVerdict
    remaining: int = 0


class OtherCheck(CheckEvent):
    """A check this designloop does not know (a log written by another version), as it is."""

    model_config = ConfigDict(extra="allow", frozen=True)

    check: str


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
    sections: list[str] = []


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
    withheld: list[str] = []
    """The entry's lines as they were before the research log's words were withheld."""


class Finished(BaseEvent):
    """The finish's record, written last and once: the run's outcome and what remained."""

    type: Literal["outcome"] = "outcome"
    outcome: RunVerdict
    line: str = ""
    rounds: int = 0
    review_log_entry: int | None = None
    findings: Findings = []


class Wrote(BaseEvent):
    """The documents the run writes, as they are now (SHA-256 by repository-relative path)."""

    type: Literal["wrote"] = "wrote"
    files: dict[str, str | None] = {}


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
    files: list[str] = []


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


class RawEvent(BaseEvent):
    """A line of a type this designloop does not know, kept as it is."""

    model_config = ConfigDict(extra="allow", frozen=True)

    type: str


RAW = "raw"
CHECKS: dict[str, str] = {
    "mechanical": "mechanical",
    "dual-clean": "dual-clean",
    "comprehension": "comprehension",
    "comprehension-review": "cold-read",
    "readability-auditor": "cold-read",
    "s3-gate": "s3-gate",
    "scope": "scope",
    "merged": "merged",
    "outcome": "outcome",
}


def _field(value: object, name: str) -> object:
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)


def _check_tag(value: object) -> str:
    return CHECKS.get(str(_field(value, "check")), RAW)


AnyCheck = Annotated[
    Annotated[MechanicalCheck, Tag("mechanical")]
    | Annotated[DualCleanCheck, Tag("dual-clean")]
    | Annotated[ComprehensionCheck, Tag("comprehension")]
    | Annotated[ColdReadCheck, Tag("cold-read")]
    | Annotated[GateCheck, Tag("s3-gate")]
    | Annotated[ScopeCheck, Tag("scope")]
    | Annotated[MergedCheck, Tag("merged")]
    | Annotated[VerdictCheck, Tag("outcome")]
    | Annotated[OtherCheck, Tag(RAW)],
    Discriminator(_check_tag),
]
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
    "stopped": "stopped",
    "paused": "paused",
    "discarded": "discarded",
    "outputs": "outputs",
    "edit_applied": "edit_applied",
    "sync_suggested": "sync_suggested",
    "fix": "fix",
}


def _type_tag(value: object) -> str:
    return TYPES.get(str(_field(value, "type")), RAW)


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
Listener = Callable[[BaseEvent], None]
E = TypeVar("E", bound=BaseEvent)


def to_line(event: BaseEvent) -> bytes:
    return (json.dumps(event.model_dump(mode="json"), ensure_ascii=False) + "\n").encode()


class EventLog:
    """Appends events to a run's events.jsonl; each event is one write of one whole line."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.path = run_dir / EVENTS
        self._lock = threading.Lock()
        self._listeners: list[Listener] = []
        run_dir.mkdir(parents=True, exist_ok=True)

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def emit(self, event: E) -> E:
        """Write ``event`` (its time is the moment of writing), then tell every listener."""
        event = event.model_copy(update={"time": _now(), "pid": os.getpid()})
        line = to_line(event)
        with self._lock:
            fd = os.open(  # 0o666 less the umask, as any other program's file
                self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o666
            )
            try:
                _append(fd, line, self.path)
            finally:
                os.close(fd)
        for listener in self._listeners:
            listener(event)
        return event

    def recorded(self, kind: type[BaseEvent]) -> bool:
        """Whether an event of ``kind`` is already in the log (a finish records its outcome once)."""
        return self.path.exists() and any(isinstance(e, kind) for e in read_events(self.run_dir))


def _append(fd: int, line: bytes, path: Path) -> None:
    """One write of one line (O_APPEND keeps concurrent lines whole); a line the disk had no room
    for is taken back whole, so the log never ends in half an event."""
    end = os.lseek(fd, 0, os.SEEK_END)
    try:
        if os.write(fd, line) != len(line):
            raise OSError(errno.ENOSPC, "the line was cut short", str(path))
        os.fsync(fd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, end)
        if exc.errno in FULL:
            raise out_of_space(path, len(line)) from exc
        raise


def damaged_line(path: Path, line: int, what: str) -> InputError:
    return InputError(
        f"the run's event log is damaged: {what}",
        file=path,
        line=line,
        hint="each line is one JSON event object; delete or repair that line (a copy of the file "
        "keeps the original), then run the command again",
    )


def parse_event(data: object) -> Event:
    """One event from its JSON data (a line of the log, or a row of a shared store)."""
    return EVENT.validate_python(data)


def numbered_events(run_dir: Path) -> list[tuple[int, Event]]:
    """The events with their line numbers. A last line cut off by a kill (no newline) is dropped."""
    path = run_dir / EVENTS
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(
            "the run has no event log", file=path, hint="designloop runs lists the runs it can show"
        ) from None
    except OSError as exc:
        raise InputError(
            f"the run's event log could not be read: {exc.strerror}", file=path, hint="fix its permissions"
        ) from None
    lines = data.split(b"\n")
    events: list[tuple[int, Event]] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            if number == len(lines):
                break  # the file does not end with a newline: a line cut off by a kill
            raise damaged_line(path, number, f"not a JSON line ({type(exc).__name__})") from None
        if not isinstance(value, dict) or not isinstance(value.get("type"), str):
            raise damaged_line(path, number, "not an event object with a type")
        try:
            events.append((number, parse_event(value)))
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error["loc"][1:]) or "?"
            raise damaged_line(path, number, f"{value['type']} event: {where}: {error['msg']}") from None
    return events


def read_events(run_dir: Path) -> list[Event]:
    return [event for _, event in numbered_events(run_dir)]


def events_of(run_dir: Path, kind: type[E]) -> list[E]:
    """The events of one type, in order."""
    return [e for e in read_events(run_dir) if isinstance(e, kind)]
