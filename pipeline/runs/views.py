"""Views of runs replayed from their event logs: ``status`` and ``runs`` consult nothing else."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

from pipeline.errors import InputError
from pipeline.formats.findings import Finding
from pipeline.formats.kinds import Kind, Role, Status
from pipeline.runs.check_events import CheckEvent
from pipeline.runs.event_log import EVENTS, numbered_events
from pipeline.runs.events import (
    Discarded,
    Event,
    Finished,
    OutputsRecorded,
    Paused,
    ReviewLogged,
    RevisionRecorded,
    RevisionRef,
    RoundStarted,
    RunStarted,
    SliceSkipped,
    Spawned,
    Started,
    Stopped,
    Wrote,
)
from pipeline.runs.lock import Holder, run_lock
from pipeline.runs.records import locate, read_record


@dataclass(slots=True)
class SpawnView:
    round: int
    role: Role
    slice: tuple[int, int] | None
    status: Status | Literal["skipped"]
    cache_hits: int
    calls: int
    tokens: int
    findings: int
    skipped: bool = False


@dataclass(slots=True)
class RunView:
    """A run as its events tell it."""

    run_id: str
    kind: Kind | None = None
    """None until the run's first event says it (a log cut short before it)."""
    directory: str = "?"
    started: str = ""
    state: str = "running"
    round: int = 0
    outcome: str | None = None
    review_log_entry: int | None = None
    spawns: dict[str, SpawnView] = field(default_factory=dict)
    checks: list[dict[str, Any]] = field(default_factory=list)
    tokens: int = 0
    cost: Decimal = Decimal(0)
    unpriced: list[str] = field(default_factory=list)
    """Models that made requests without a known price (their cost is not in ``cost``)."""
    cache_hits: int = 0
    message: str | None = None
    outputs: str | None = None
    """The digest of what a finished batch run left on disk (runs.fingerprint)."""
    wrote: dict[str, str | None] = field(default_factory=dict)
    """Each document the run wrote, by its repository-relative path, with the SHA-256 it had
    when the run last recorded it (at its finish, pause, stop or discard)."""
    findings: list[Finding] = field(default_factory=list)
    """What remained at the finish."""
    declined: list[str] = field(default_factory=list)
    """The parts of the user's instruction the inline editor declined."""
    revisions: dict[str, RevisionRef] = field(default_factory=dict)
    """The revision the run recorded of each document (number, sha256, path); none in runs
    recorded before revisions were."""

    def shown_outcome(self) -> str:
        """The outcome as a line shows it: with how many parts of the instruction were declined."""
        if not self.outcome or not self.declined:
            return self.outcome or "-"
        return f"{self.outcome}, {len(self.declined)} part(s) of the instruction declined"

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "kind": self.kind or "?",
            "directory": self.directory,
            "started": self.started,
            "state": self.state,
            "round": self.round,
            "outcome": self.outcome,
            "declined": self.declined,
            "review_log_entry": self.review_log_entry,
            "tokens": self.tokens,
            "cost_usd": str(self.cost),
            "unpriced": self.unpriced,
            "cache_hits": self.cache_hits,
            "message": self.message,
            "revisions": {k: v.model_dump() for k, v in self.revisions.items()},
            "spawns": [asdict(s) for s in self.spawns.values()],
            "checks": self.checks,
        }


def replay(run_id: str, events: list[Event]) -> RunView:
    view = RunView(run_id)
    for event in events:
        apply(view, event)
    return view


def apply(view: RunView, event: Event) -> None:
    """One event's effect on the view."""
    match event:
        case RunStarted():
            view.kind, view.directory = event.run_kind, event.directory
            view.started = view.started or event.time
            view.state = "running"
        case Started() if view.outcome is None and view.state != "discarded":
            view.state, view.message = "running", None  # a paused or stopped run going on again
        case RoundStarted():
            view.round = event.round
        case Spawned():
            _spawned(view, event)
        case SliceSkipped():
            key = f"{event.round}:readability-auditor:{list(event.slice)}"
            view.spawns[key] = SpawnView(
                event.round, "readability-auditor", event.slice, "skipped", 0, 0, 0, 0, True
            )
        case CheckEvent():
            view.checks.append(event.details())
        case Paused():
            view.state, view.message = "paused", event.message
        case Stopped():
            view.state, view.message = "stopped", event.message
            if event.partial is not None:  # what the stopped spawn had spent by then
                view.tokens += event.partial.total_tokens
                view.cost += event.partial.cost_usd
        case Discarded():
            view.state, view.message = "discarded", event.message
        case _:
            _recorded(view, event)


def _recorded(view: RunView, event: Event) -> None:
    """What the finish and a batch record of what the run left: its entry, outcome and files."""
    match event:
        case ReviewLogged():
            view.review_log_entry = event.entry
        case Finished():
            view.outcome, view.state = event.outcome, "finished"
            view.findings = list(event.findings)
            view.declined = list(event.declined)
        case OutputsRecorded():
            view.outputs = event.digest
        case Wrote():
            view.wrote.update(event.files)
        case RevisionRecorded():
            view.revisions = dict(event.files)


def _spawned(view: RunView, event: Spawned) -> None:
    key = f"{event.round}:{event.role}:{list(event.slice) if event.slice else None}"
    view.spawns[key] = SpawnView(
        event.round,
        event.role,
        event.slice,
        event.status,
        event.cache_hits,
        event.calls,
        event.tokens,
        event.findings,
    )
    view.tokens += event.tokens
    view.cost += event.cost_usd
    view.cache_hits += event.cache_hits
    priced = not event.calls or event.cost_usd or event.model in ("", "offline")
    if not priced and event.model not in view.unpriced:  # a model with no known price: never $0
        view.unpriced.append(event.model)


def settle(view: RunView, holder: Holder | None) -> RunView:
    """A run its events show as running but whose directory's lock no process of it holds
    is ``interrupted``."""
    if view.state == "running" and (holder is None or holder.run_id != view.run_id):
        view.state = "interrupted"
        view.message = (
            f"no process is running it; designloop resume {view.run_id} continues it "
            "from its last completed step"
        )
    return view


def _local_holder(run_dir: Path, view: RunView) -> Holder | None:
    """The holder of the run's design directory lock in this checkout."""
    try:
        _, directory, _ = locate(read_record(run_dir), run_dir)
    except InputError:
        if view.directory == "?" or not Path(view.directory).is_absolute():
            return None
        directory = Path(view.directory)
    return run_lock(directory).holder()


def read_view(run_dir: Path) -> RunView:
    """A run as its events tell it; an event that cannot be replayed is named by its line."""
    view = replay(run_dir.name, [event for _, event in numbered_events(run_dir)])
    return settle(view, _local_holder(run_dir, view) if view.state == "running" else None)


def list_runs(runs_dir: Path, warn: Callable[[InputError], None] | None = None) -> list[RunView]:
    """Every run in ``runs_dir``; a damaged one is skipped and reported to ``warn``."""
    if not runs_dir.is_dir():
        return []
    views = []
    for child in sorted(runs_dir.iterdir()):
        if (child / EVENTS).is_file():
            try:
                views.append(read_view(child))
            except InputError as exc:
                if warn is None:
                    raise
                warn(exc)
    return sorted(views, key=lambda v: v.started)
