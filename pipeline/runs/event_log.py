"""A run's event log, runs/<run-id>/events.jsonl: append-only, one typed event (runs.events)
per line, each written whole by one write; read back line by line through the events' one
adapter. A last line cut off by a kill is no damage; a line that is not JSON, not an event, or
names a known type without its fields is, named by its file and line."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from pydantic import ValidationError

from pipeline.bounded import Unbounded, load_json
from pipeline.errors import InputError
from pipeline.formats.space import FULL, out_of_space
from pipeline.runs.event_fields import BaseEvent, now

if TYPE_CHECKING:  # read when a log is read: what only lists runs never loads the events
    from pipeline.runs.events import Event

EVENTS = "events.jsonl"
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
        self._watchers: list[Listener] = []
        run_dir.mkdir(parents=True, exist_ok=True)

    def subscribe(self, listener: Listener, *, notices: bool = False) -> None:
        """Tell ``listener`` every event written; with ``notices``, also what is never written
        (a live view's notices). A listener that stores events (a store's publisher) takes none."""
        self._listeners.append(listener)
        if notices:
            self._watchers.append(listener)

    def emit(self, event: E) -> E:
        """Write ``event`` (its time is the moment of writing), then tell every listener."""
        event = event.model_copy(update={"time": now(), "pid": os.getpid()})
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

    def notify(self, event: E) -> E:
        """Tell the listeners that take notices of ``event``, without writing it (what only a
        live view needs): no store ever records it."""
        event = event.model_copy(update={"time": now(), "pid": os.getpid()})
        for listener in self._watchers:
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
    from pipeline.runs.events import event_of_line, parse_event

    lines = data.split(b"\n")
    events: list[tuple[int, Event]] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:  # a whole event, parsed and validated in one step
            events.append((number, event_of_line(raw)))
            continue
        except ValidationError:  # not JSON, not an event, or cut off: the slow path says which
            pass
        try:
            value = load_json(raw, file=path, what="event", hint="", line=number)
        except Unbounded as exc:
            if number == len(lines) and exc.problem.startswith("is not JSON"):
                break  # the file does not end with a newline: a line cut off by a kill
            raise damaged_line(path, number, f"the line {exc.problem}") from None
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
