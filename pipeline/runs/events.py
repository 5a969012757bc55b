"""Run records: runs/<run-id>/events.jsonl, append-only, and the views replayed from it.

Every line is one event with a sequence number, a time and a type. ``status`` and ``runs``
derive everything they show by replaying the file; nothing else is consulted.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipeline.errors import InputError
from pipeline.formats.space import FULL, out_of_space

EVENTS = "events.jsonl"


class EventLog:
    """Appends events to a run's events.jsonl; each event is one write of one whole line."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.path = run_dir / EVENTS
        self._lock = threading.Lock()
        self._listeners: list[Callable[[dict[str, Any]], None]] = []
        run_dir.mkdir(parents=True, exist_ok=True)

    def subscribe(self, listener: Callable[[dict[str, Any]], None]) -> None:
        self._listeners.append(listener)

    def emit(self, kind: str, **data: Any) -> dict[str, Any]:
        event = {
            "time": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
            "pid": os.getpid(),
            "type": kind,
            **data,
        }
        line = (json.dumps(event, ensure_ascii=False, default=str) + "\n").encode()
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

    def recorded(self, kind: str) -> bool:
        """Whether an event of ``kind`` is already in the log (a finish records its outcome once)."""
        return self.path.exists() and any(e["type"] == kind for e in read_events(self.run_dir))


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


def numbered_events(run_dir: Path) -> list[tuple[int, dict[str, Any]]]:
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
    events: list[tuple[int, dict[str, Any]]] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            event = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            if number == len(lines):
                break  # the file does not end with a newline: a line cut off by a kill
            raise damaged_line(path, number, f"not a JSON line ({type(exc).__name__})") from None
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            raise damaged_line(path, number, "not an event object with a type")
        events.append((number, event))
    return events


def read_events(run_dir: Path) -> list[dict[str, Any]]:
    return [event for _, event in numbered_events(run_dir)]
