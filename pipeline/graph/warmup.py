"""The fan-out warm-up (the seed's cache lever), adaptive rather than a fixed sleep.

A round's first auditor spawn goes alone; the others start the moment its first answer has
arrived, when the provider has written the shared prompt prefix to its cache, and never
later than ``[run] warmup_cap``. A provider that keeps no prompt cache (the offline engine,
an OpenAI-compatible server of one's own) gains nothing from waiting, so there the whole
fan-out starts at once. A resumed round whose first spawn already finished does not wait.

The first spawn is handed the gate's opener as an argument (``RunDeps.spawn(first_answer=...)``),
which the request cache calls when the spawn's first answer arrives.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field


@dataclass(slots=True)
class Gate:
    armed: bool = False
    """The round's first spawn is running in this process."""
    answered: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass(slots=True)
class WarmUp:
    gates: dict[int, Gate] = field(default_factory=dict)

    def _gate(self, round_: int) -> Gate:
        return self.gates.setdefault(round_, Gate())

    @contextlib.asynccontextmanager
    async def first(self, round_: int, opened: Callable[[], None]) -> AsyncIterator[Callable[[], None]]:
        """Around the round's first spawn: yields the opener to hand the spawn; its first answer
        (or its end) opens the gate. ``opened`` is told once, in a thread (it writes the run's
        event, off the event loop), and the gate opens once it has been told."""
        gate = self._gate(round_)
        gate.armed = True
        telling: list[asyncio.Task[None]] = []

        async def tell() -> None:
            try:
                await asyncio.to_thread(opened)
            finally:
                gate.answered.set()

        def open_gate() -> None:
            if not telling and not gate.answered.is_set():
                telling.append(asyncio.ensure_future(tell()))

        try:
            yield open_gate
        finally:
            open_gate()
            if telling:
                await telling[0]

    async def wait(self, round_: int, cap: float) -> float:
        """Before any other spawn of the round: the seconds it waited for the gate."""
        await asyncio.sleep(0)  # the round's spawns have all started: the first one is armed
        gate = self.gates.get(round_)
        if gate is None or not gate.armed or cap <= 0:
            return 0.0
        start = time.monotonic()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(gate.answered.wait(), cap)
        return round(time.monotonic() - start, 3)
