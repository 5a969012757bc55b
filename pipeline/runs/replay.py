"""A run's view replayed from its events (runs.views keeps what this returns beside the log)."""

from __future__ import annotations

from pipeline.runs.check_events import CheckEvent
from pipeline.runs.events import (
    Discarded,
    Event,
    Finished,
    OutputsRecorded,
    Paused,
    ReviewLogged,
    RevisionRecorded,
    RoundStarted,
    RunStarted,
    SliceSkipped,
    Spawned,
    Started,
    Stopped,
    Wrote,
)
from pipeline.runs.run_view import RunView, SpawnView


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
