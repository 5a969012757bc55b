"""A run never goes on without its design directory's lock.

While a run works, ``watched`` asks the lock every ``WATCH_SECONDS`` whether this process still
holds it (on the PostgreSQL store that is a query on the lock's own session, which also keeps
the session from ever being idle: an ``idle_session_timeout`` never ends it). When the lock is
gone, the run is cancelled (a model call in flight is abandoned; an offline spawn, which runs
in a thread, finishes first) and ``LockLost`` says why: it stopped where it was, its last
checkpoint stands, and it is resumed like any interrupted run. The same check is the fence the
finish calls right before its writes that cannot be taken back (the stamp, the review-log
entry), so a lock lost between two watches is caught there.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TypeVar

from pipeline.runs.lock import LockLost, RunLock

T = TypeVar("T")
WATCH_SECONDS = 5.0


async def watched(lock: RunLock | None, work: Awaitable[T], every: float | None = None) -> T:
    """``work``, cancelled with LockLost as soon as ``lock`` is found lost (checked every
    ``every`` seconds, ``WATCH_SECONDS`` by default)."""
    if lock is None:
        return await work
    interval = every if every is not None else WATCH_SECONDS
    task = asyncio.ensure_future(work)
    found: list[LockLost] = []

    async def watch() -> None:
        while not task.done():
            await asyncio.sleep(interval)
            try:
                await asyncio.to_thread(lock.check)
            except LockLost as exc:
                found.append(exc)
                task.cancel()
                return
            except Exception:  # not an answer either way: ask again next time (the fence asks too)
                continue

    watcher = asyncio.create_task(watch())
    try:
        return await task
    except asyncio.CancelledError:
        if found and task.cancelled():
            raise found[0] from None
        raise
    finally:
        watcher.cancel()
        # The watcher's own end never replaces the work's result.
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await watcher
