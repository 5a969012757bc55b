"""Worker processes for CPU-bound runs: a pool whose processes are forked from a server that
imported the runtime once, each set up once, with what their jobs report relayed back.

The offline engine, the mechanical checks and the graph's own work are Python that holds the
interpreter's lock: runs that share one process share one core, whatever ``--jobs`` says. A
batch whose every role runs on the offline engine (fleet.batch) runs directories in these
processes beside its own. They are made by multiprocessing's forkserver: the server imports the
modules named once, and each worker is a fork of it, so no worker pays the imports again and
none inherits the batch's threads (the planner, the cache's, the event loop's executor).

A worker is set up once (``initializer(*initargs, queue)``); a job is a call in a worker whose
result comes back as its return value; what a job puts on the queue on its way reaches
``relay`` in this process, in order, on a thread of its own, before the pool closes.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from types import TracebackType
from typing import Any, TypeVar

T = TypeVar("T")
_END = None
"""What ends the relay: the pool's workers are gone, nothing more can be reported."""


class WorkerPool:
    def __init__(
        self,
        workers: int,
        preload: Sequence[str],
        initializer: Callable[..., None],
        initargs: tuple[Any, ...],
        relay: Callable[[Any], None],
    ) -> None:
        self.workers = workers
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(list(preload))
        self.queue: Any = context.Queue()
        self.relay = relay
        self.executor: ProcessPoolExecutor | None = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=context,
            initializer=initializer,
            initargs=(*initargs, self.queue),
        )
        self._reader = threading.Thread(target=self._read, name="designloop-relay", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while (item := self.queue.get()) is not _END:
            self.relay(item)

    def _open(self) -> ProcessPoolExecutor:
        if self.executor is None:
            raise RuntimeError("the worker pool is closed")
        return self.executor

    def warm(self) -> None:
        """Start the workers now (the server imports, each worker sets up), before any job."""
        for _ in range(self.workers):
            self._open().submit(_ready)

    async def run(self, job: Callable[..., T], *args: Any) -> T:
        """``job(*args)`` in a worker (one job at a time per worker, in the order given)."""
        return await asyncio.wrap_future(self._open().submit(job, *args))

    def close(self, cancel: bool = False) -> None:
        """Stop the workers (the jobs not started yet are dropped with ``cancel``), then let
        everything they reported reach ``relay``. The pool's queues and their semaphores are let
        go of here: a command leaves through ``os._exit`` (pipeline.cli.run), where no
        finalizer would run."""
        executor, self.executor = self.executor, None
        if executor is None:
            return
        executor.shutdown(wait=True, cancel_futures=cancel)
        del executor
        self.queue.put(_END)
        self._reader.join()
        self.queue.close()
        self.queue.join_thread()
        self.queue = None

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close(cancel=exc is not None)


def _ready() -> None:
    """A job that does nothing: it makes a worker start (``WorkerPool.warm``)."""
