"""Views of runs replayed from their event logs: ``status`` and ``runs`` consult nothing else.

A run's view is kept beside its log (``VIEW``) by the run that writes the log (``ViewKeeper``),
keyed by the log's inode, size and time and by the code that reads and replays logs: a log that
did not change since is not read, validated and replayed again, so ``designloop runs`` over
hundreds of finished runs reads one small file per run. The kept view is a cache: one that does
not match the log as it is now (another writer added to it, a hand repaired it), was made by
other code or does not parse is not read, and the log is replayed in memory. Reading never
writes anything."""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, cast

from pipeline import __version__
from pipeline.errors import InputError
from pipeline.runs.event_fields import BaseEvent
from pipeline.runs.event_log import EVENTS, numbered_events, to_line
from pipeline.runs.lock import Holder, run_lock
from pipeline.runs.records import locate, read_record
from pipeline.runs.run_view import RunView

if TYPE_CHECKING:
    from pydantic import TypeAdapter

    from pipeline.runs.events import Event

VIEW = ".view.json"
"""A run's view as its log last told it, in the run directory (runs/ is designloop's own)."""
REPLAYED_BY = (
    "runs/views.py",
    "runs/run_view.py",
    "runs/replay.py",
    "runs/events.py",
    "runs/event_fields.py",
    "runs/check_events.py",
    "runs/event_log.py",
    "formats/findings.py",
    "formats/kinds.py",
)
"""The modules whose code decides a view (a change to any of them replays every log again)."""


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
    """A run as its events tell it (as kept beside the log, while the log is unchanged); an
    event that cannot be replayed is named by its line."""
    view = _kept(run_dir) or replayed(run_dir)
    return settle(view, _local_holder(run_dir, view) if view.state == "running" else None)


def replayed(run_dir: Path) -> RunView:
    """The view replayed from the log (the events load only for a replay)."""
    from pipeline.runs.replay import replay

    return replay(run_dir.name, [event for _, event in numbered_events(run_dir)])


@dataclass(slots=True)
class Kept:
    """A view as kept beside its log: what it was replayed from, and the view."""

    log: tuple[int, int, int]
    """The log's inode, size and modification time (ns) when it was read."""
    code: str
    """The digest of the code that read and replayed it (``REPLAYED_BY``)."""
    view: RunView


def _log_key(run_dir: Path) -> tuple[int, int, int] | None:
    try:
        info = (run_dir / EVENTS).stat()
    except OSError:
        return None
    return info.st_ino, info.st_size, info.st_mtime_ns


@cache
def _code() -> str:
    base = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256(__version__.encode())
    for rel in REPLAYED_BY:
        with contextlib.suppress(OSError):
            digest.update(rel.encode() + b"\0" + (base / rel).read_bytes())
    return digest.hexdigest()


@cache
def _adapter() -> TypeAdapter[Kept]:
    from pydantic import TypeAdapter

    return TypeAdapter(Kept)


def _kept(run_dir: Path) -> RunView | None:
    """The kept view, when it was replayed from the log as it is now by this code."""
    key = _log_key(run_dir)
    try:
        data = (run_dir / VIEW).read_bytes()
    except OSError:
        return None
    try:
        kept = _adapter().validate_json(data)
    except ValueError:  # not a kept view (damaged, or of another shape): replayed afresh
        return None
    if key is None or kept.log != key or kept.code != _code() or kept.view.run_id != run_dir.name:
        return None
    return kept.view


class ViewKeeper:
    """A listener of a run's event log that keeps the run's view beside it as the run goes.

    Each event it is told is applied to the view it keeps when the log holds exactly that line
    more than when the view was last kept; otherwise (its first event, or another writer's
    lines in between) the log is replayed whole, its key taken before it is read, so the view
    never holds less than its key says. A view that holds more is never read: an append-only
    log never has that key again. Whatever goes wrong keeps no view; the run goes on."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self._view: RunView | None = None
        self._size = -1
        self._lock = threading.Lock()

    def __call__(self, event: BaseEvent) -> None:
        from pipeline.runs.replay import apply

        with self._lock:
            try:
                key = _log_key(self.run_dir)
                if key is None:
                    return
                if self._view is not None and key[1] == self._size + len(to_line(event)):
                    apply(self._view, cast("Event", event))  # every event the log writes is an Event
                else:
                    self._view = replayed(self.run_dir)
                self._size = key[1]
                _keep(self.run_dir, _adapter().dump_json(Kept(key, _code(), self._view)))
            except (OSError, ValueError, InputError):  # a cache: no view kept, and none held
                self._view = None


def _keep(run_dir: Path, data: bytes) -> None:
    """Write the kept view through a temporary file of this writer's and a rename; a runs
    directory that cannot be written keeps none (the view is replayed each time)."""
    tmp = run_dir / f"{VIEW}.{os.getpid()}-{threading.get_ident()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o666)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, run_dir / VIEW)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


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
