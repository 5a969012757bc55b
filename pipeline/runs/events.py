"""Run records: runs/<run-id>/events.jsonl, append-only, and the views replayed from it.

Every line is one event with a sequence number, a time and a type. ``status`` and ``runs``
derive everything they show by replaying the file; nothing else is consulted.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipeline.errors import InputError

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
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)  # one write of one line: O_APPEND keeps concurrent lines whole
                os.fsync(fd)
            finally:
                os.close(fd)
        for listener in self._listeners:
            listener(event)
        return event


def read_events(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / EVENTS
    if not path.exists():
        raise InputError("no such run", file=run_dir, hint="designloop runs lists the runs")
    events = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            if number == len(path.read_text(encoding="utf-8").splitlines()):
                break  # a line cut off by a kill: everything before it stands
            raise InputError("corrupt run record", file=path, line=number) from None
    return events
