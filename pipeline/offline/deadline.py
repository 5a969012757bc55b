"""The spawn's deadline, as the offline engine keeps it: ``[run] spawn_timeout`` binds a rule as
it binds a model.

A model's request is awaited, so the agent's own time-out ends it. An offline role is Python
code in a worker thread, which no time-out can stop from outside: the awaiting side gives up
only when the thread returns. So the engine keeps the deadline itself. The runtime opens each
attempt of an offline spawn with :func:`spawn_deadline`; the engines call :func:`checkpoint`
between steps (a block, a section, a finding), and every step is linear in its input
(docs/offline.md, "Size"), so an engine past its deadline stops within one step of it, with
:class:`EngineTimeout`: the spawn is re-run once, then INCONCLUSIVE, naming the role.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from pipeline.offline.observe import EngineError


@dataclass(frozen=True, slots=True)
class Deadline:
    role: str
    seconds: float
    """The limit as configured (``[run] spawn_timeout``), for the message."""
    at: float
    """``time.monotonic()`` past which the engine stops."""


class EngineTimeout(EngineError):
    """An offline role ran past its spawn's time-out."""

    def __init__(self, role: str, seconds: float) -> None:
        super().__init__(overdue(role, seconds))
        self.role = role
        self.seconds = seconds


def overdue(role: str, seconds: float) -> str:
    """What a run records of an offline role that ran past its time-out."""
    return f"the offline {role} ran past [run] spawn_timeout ({seconds:g} s) and was stopped"


DEADLINE: ContextVar[Deadline | None] = ContextVar("designloop_offline_deadline", default=None)
"""The deadline of the offline spawn being run: set per attempt by the runtime, read in the
engine's worker thread (the thread runs in a copy of the spawn's context)."""


@contextmanager
def spawn_deadline(role: str, seconds: float) -> Iterator[Deadline]:
    """One attempt of an offline spawn: its engine stops ``seconds`` from now."""
    deadline = Deadline(role, seconds, time.monotonic() + seconds)
    token = DEADLINE.set(deadline)
    try:
        yield deadline
    finally:
        DEADLINE.reset(token)


def checkpoint() -> None:
    """Stop the engine when its spawn's deadline has passed (nothing happens outside a spawn)."""
    deadline = DEADLINE.get()
    if deadline is not None and time.monotonic() > deadline.at:
        raise EngineTimeout(deadline.role, deadline.seconds)
