"""Views of runs replayed from their event logs: ``status`` and ``runs`` consult nothing else."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pipeline.errors import InputError
from pipeline.runs.events import EVENTS, damaged_line, numbered_events
from pipeline.runs.lock import Holder, run_lock
from pipeline.runs.records import locate, read_record


@dataclass(slots=True)
class SpawnView:
    round: int
    role: str
    slice: list[int] | None
    status: str
    cache_hits: int
    calls: int
    tokens: int
    findings: int
    skipped: bool = False


@dataclass(slots=True)
class RunView:
    """A run as its events tell it."""

    run_id: str
    kind: str = "?"
    directory: str = "?"
    started: str = ""
    state: str = "running"
    round: int = 0
    outcome: str | None = None
    review_log_entry: int | None = None
    spawns: dict[str, SpawnView] = field(default_factory=dict)
    checks: list[dict[str, Any]] = field(default_factory=list)
    tokens: int = 0
    cost: float = 0.0
    cache_hits: int = 0
    message: str | None = None
    outputs: str | None = None
    """The digest of what a finished batch run left on disk (runs.fingerprint)."""
    wrote: dict[str, str | None] = field(default_factory=dict)
    """Each document the run wrote, by its repository-relative path, with the SHA-256 it had
    when the run last recorded it (at its finish, pause, stop or discard)."""
    findings: list[dict[str, Any]] = field(default_factory=list)
    """What remained at the finish (each finding's fields, formats.findings.Finding)."""
    revisions: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The revision the run recorded of each document (number, sha256, path); none in runs
    recorded before revisions were."""

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "kind": self.kind,
            "directory": self.directory,
            "started": self.started,
            "state": self.state,
            "round": self.round,
            "outcome": self.outcome,
            "review_log_entry": self.review_log_entry,
            "tokens": self.tokens,
            "cost_usd": round(self.cost, 6),
            "cache_hits": self.cache_hits,
            "message": self.message,
            "revisions": self.revisions,
            "spawns": [asdict(s) for s in self.spawns.values()],
            "checks": self.checks,
        }


def replay(run_id: str, events: list[dict[str, Any]]) -> RunView:
    view = RunView(run_id)
    for event in events:
        apply(view, event)
    return view


def apply(view: RunView, event: dict[str, Any]) -> None:
    """One event's effect on the view."""
    kind = event.get("type")
    if kind == "run_start":
        view.kind, view.directory = event.get("run_kind", "?"), event.get("directory", "?")
        view.started = view.started or event.get("time", "")
        view.state = "running"
    elif kind in ("start", "resume") and view.outcome is None and view.state != "discarded":
        view.state, view.message = "running", None  # a paused or stopped run going on again
    elif kind == "round":
        view.round = int(event.get("round", view.round))
    elif kind == "spawn":
        key = f"{event['round']}:{event['role']}:{event.get('slice')}"
        view.spawns[key] = SpawnView(
            event["round"],
            event["role"],
            event.get("slice"),
            event["status"],
            event.get("cache_hits", 0),
            event.get("calls", 0),
            event.get("tokens", 0),
            event.get("findings", 0),
        )
        view.tokens += int(event.get("tokens", 0))
        view.cost += float(event.get("cost_usd", 0) or 0)
        view.cache_hits += int(event.get("cache_hits", 0))
    elif kind == "slice_skipped":
        key = f"{event['round']}:readability-auditor:{event.get('slice')}"
        view.spawns[key] = SpawnView(
            event["round"], "readability-auditor", event.get("slice"), "skipped", 0, 0, 0, 0, True
        )
    elif kind == "check":
        view.checks.append({k: v for k, v in event.items() if k not in ("time", "pid", "type")})
    elif kind == "paused":
        view.state, view.message = "paused", event.get("message")
    elif kind == "stopped":
        view.state, view.message = "stopped", event.get("message")
        partial = event.get("partial") or {}  # what the stopped spawn had spent by then
        view.tokens += int(partial.get("total_tokens", 0))
        view.cost += float(partial.get("cost_usd", 0) or 0)
    elif kind == "review_log":
        view.review_log_entry = event.get("entry")
    elif kind == "outcome":
        view.outcome, view.state = event.get("outcome"), "finished"
        view.findings = list(event.get("findings") or [])
    elif kind == "outputs":
        view.outputs = event.get("digest")
    elif kind == "wrote":
        view.wrote.update(event.get("files") or {})
    elif kind == "discarded":
        view.state, view.message = "discarded", event.get("message")
    elif kind == "revision":
        view.revisions = dict(event.get("files") or {})


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
    view = RunView(run_dir.name)
    for line, event in numbered_events(run_dir):
        try:
            apply(view, event)
        except (KeyError, TypeError, ValueError) as exc:
            raise damaged_line(run_dir / EVENTS, line, f"{event.get('type')} event: {exc!r}") from None
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
