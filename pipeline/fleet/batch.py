"""One creation run per design directory, many at once (``designloop batch``): in one process,
or, when every role runs on the offline engine, also in worker processes beside it.

Every directory is checked like a single run, and its inputs fingerprinted, one after another
in a planner thread; each directory's run starts as soon as it is planned (within ``--jobs``),
while the rest are still being planned. A bad one is reported (exit 2) and the others go on (a
batch whose every directory is bad input writes nothing at all). The set-up every run shares
(settings, roles, prompts, models, and where no role reads: agents.session.Sessions) is made
once per repository, and the code each root holds is digested once (runs.fingerprint).

A directory whose inputs and outputs are unchanged since its last run passed is skipped without
a request (runs.fingerprint); one whose last run did not finish (interrupted, paused, stopped by
a budget) is resumed; any other starts a new run.

Each run holds its directory's lock for its whole length (the store's lock: across processes,
and across machines on the PostgreSQL store), and the decision is made again once the lock is
held, so a batch that waited (--wait) for another run never repeats what that run did. A run
that loses its lock stops (graph.watch). The runs share one checkpointer, one model-call cache
and, when given, the batch's budget. A run that fails, pauses or stops never stops the others:
whatever goes wrong in one directory is that directory's row.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipeline.agents.cache import InFlight, LazyCache, RequestCache
from pipeline.agents.pool import Pool, PooledBudget
from pipeline.agents.resolve import OFFLINE
from pipeline.agents.session import Sessions, SetUp
from pipeline.errors import DesignloopError, ExitCode, InputError
from pipeline.fleet.processes import WorkerPool
from pipeline.fleet.resume import carry_on, start_new
from pipeline.fleet.rows import (
    Batch,
    BatchOptions,
    Planned,
    Previous,
    Row,
    decide,
    latest_runs,
    new_batch_id,
    plan_row,
    unfinished,
)
from pipeline.graph.deps import RunDeps
from pipeline.graph.result import RunResult
from pipeline.graph.runner import execute
from pipeline.runs.event_fields import BaseEvent
from pipeline.runs.events import RoundStarted, Spawned, Started
from pipeline.runs.fingerprint import Fingerprints
from pipeline.runs.lifecycle import approve_if_ready
from pipeline.runs.lock import Holder, RunLock, RunLocked, holder_for
from pipeline.runs.overwrite import LaterWork, Overwrite
from pipeline.runs.records import NotResumable, portable
from pipeline.runs.setup import OpenRun, RunPlan, load_run, refuse_later
from pipeline.runs.store import LocalStore, RunStore
from pipeline.settings import CACHE_DIR, repo_root

__all__ = ["Batch", "BatchOptions", "BatchRunner", "Row"]


class SharedCache:
    """The batch's one model-call cache, handed to every run; only the batch closes it."""

    def __init__(self, inner: RequestCache) -> None:
        self.inner = inner

    def get(self, key: str) -> Any:
        return self.inner.get(key)

    def set(self, key: str, value: bytes) -> Any:
        return self.inner.set(key, value)

    def close(self) -> None:
        return None


Progress = Callable[[Row, BaseEvent | None], None]


class BatchRunner:
    """Runs one batch: ``run(directories)`` returns the batch with one row per directory."""

    def __init__(
        self,
        options: BatchOptions,
        store: RunStore,
        progress: Progress | None = None,
        configure: Callable[[RunDeps], None] | None = None,
        sessions: Sessions | None = None,
        workers: int = 0,
    ) -> None:
        self.options = options
        self.workers = workers
        """Worker processes to run directories in besides this one (fleet.processes), which
        then runs one at a time; 0: every run in this process, ``--jobs`` at once."""
        self._processes: WorkerPool | None = None
        self.configure = configure
        self.store = store
        self.sessions = sessions or Sessions()
        """The set-up the batch's runs share, per repository (the CLI's check of the flags made
        the first one)."""
        self.progress = progress or (lambda row, event: None)
        self.pool = Pool(options.batch_tokens, options.batch_cost)
        self.fingerprints = Fingerprints(store.runs_dir, options.outputs, private=self._private)
        self.cache: RequestCache | None = None
        self.inflight = InFlight()
        """One registry of requests being asked for every run: an identical request of two
        runs is sent once."""
        self.batch = Batch(new_batch_id(options.kind), options.kind)

    def _private(self, repo_root: Path) -> tuple[Path, ...]:
        """Where no role reads in the repository, as its set-up found it (one walk per batch)."""
        return self.sessions.set_up(repo_root, self.options.session).private_dirs

    async def run(self, directories: list[Path]) -> Batch:
        self.batch.rows = [Row(portable(d, repo_root(d))) for d in directories]
        shared = self.store.cache()
        self.cache = SharedCache(shared or LazyCache(self.store.runs_dir / CACHE_DIR))
        try:
            await self._plan_and_run(directories)
        except BaseException:  # interrupted: the workers' jobs not started yet are dropped
            if self._processes is not None:
                self._processes.close(cancel=True)
                self._processes = None
            raise
        finally:
            if self._processes is not None:
                self._processes.close()
            (shared or self.cache.inner).close()
        self.batch.save(self.store)
        return self.batch

    async def _plan_and_run(self, directories: list[Path]) -> None:
        previous = await asyncio.to_thread(latest_runs, self.store, self.options.kind)
        slots: asyncio.Queue[str] = asyncio.Queue()
        for slot in [HERE] * (1 if self.workers else max(1, self.options.jobs)) + [ELSEWHERE] * self.workers:
            slots.put_nowait(slot)
        running: list[asyncio.Task[None]] = []
        async with contextlib.AsyncExitStack() as stack:
            saver: Any = None
            try:
                for index, (row, directory) in enumerate(zip(self.batch.rows, directories, strict=True)):
                    # Planned in a thread: the runs already started go on meanwhile.
                    planned = await asyncio.to_thread(self._plan, row, directory, previous)
                    if planned is None:
                        self._say(row)
                        continue
                    if saver is None:  # nothing to run: no checkpoint store is opened (or created)
                        saver = await stack.enter_async_context(self.store.checkpointer())
                        if self.workers:  # the worker processes start while the first run goes on
                            self._worker_processes().warm()
                    job = self._slotted(slots, index, directory, planned, saver)
                    running.append(asyncio.create_task(job))
            except BaseException:  # interrupted: the runs started stop before the checkpointer closes
                for task in running:
                    task.cancel()
                await asyncio.gather(*running, return_exceptions=True)
                raise
            await asyncio.gather(*running)

    async def _slotted(
        self, slots: asyncio.Queue[str], index: int, directory: Path, planned: Planned, saver: Any
    ) -> None:
        """The directory's run, here or in a worker process, whichever is free first."""
        row = self.batch.rows[index]
        slot = await slots.get()
        try:
            if slot == HERE:
                await self._directory(row, planned, saver)
            else:
                await self._elsewhere(index, row, directory)
        finally:
            slots.put_nowait(slot)

    def _worker_processes(self) -> WorkerPool:
        if self._processes is None:
            rows = self.batch.rows

            def relay(item: tuple[int, Row, BaseEvent | None]) -> None:
                index, row, event = item
                _copy(row, rows[index])
                self._say(rows[index], event)

            setup = (self.options, self.store.runs_dir)
            self._processes = WorkerPool(self.workers, PRELOAD, _start_worker, setup, relay)
        return self._processes

    async def _elsewhere(self, index: int, row: Row, directory: Path) -> None:
        """The directory planned again and run in a worker process (fleet.processes); its row as
        the worker reports it, on the way and at the end."""
        try:
            _copy(await self._worker_processes().run(_run_one, index, row, directory), row)
        except Exception as exc:  # the worker itself failed: the row says how
            row.fail(exc)
            self._say(row)

    async def one(self, row: Row, directory: Path) -> None:
        """Plan and run one directory, with a checkpointer of its own: a worker process's share
        of a batch (fleet.processes). The cache's files are closed when it is done."""
        shared = self.store.cache()
        self.cache = SharedCache(shared or LazyCache(self.store.runs_dir / CACHE_DIR))
        try:
            previous = latest_runs(self.store, self.options.kind, row.directory)
            planned = self._plan(row, directory, previous)
            if planned is None:
                self._say(row)
                return
            async with self.store.checkpointer() as saver:
                await self._directory(row, planned, saver)
        finally:
            (shared or self.cache.inner).close()

    def _say(self, row: Row, event: BaseEvent | None = None) -> None:
        self.progress(row, event)

    def _plan(self, row: Row, directory: Path, previous: dict[str, Previous]) -> Planned | None:
        """Check the directory and fingerprint its inputs; None when its row is already done
        (bad input, an error, or skipped as unchanged)."""
        return plan_row(row, directory, self.options, self.fingerprints, previous, self.store, self.sessions)

    async def _directory(self, row: Row, planned: Planned, saver: Any) -> None:
        """One directory, under its lock: whatever goes wrong is its row, never the batch's end."""
        lock = self.store.lock(planned.plan.design.root, row.directory)
        try:
            await self._locked(row, planned, saver, lock)
        except DesignloopError as exc:
            action = "bad" if isinstance(exc, InputError) else row.action if row.run_id else "failed"
            self._end(row, action, exc.exit_code, exc.render())
        except Exception as exc:  # one directory's failure never stops the others
            action = row.action if row.run_id is not None else "failed"
            self._end(row, action, ExitCode.INTERNAL, f"internal error: {type(exc).__name__}: {exc}")
        finally:
            lock.release()

    async def _locked(self, row: Row, planned: Planned, saver: Any, lock: RunLock) -> None:
        plan, before = planned.plan, planned.before
        # The lock names the run that will work on the directory (status tells it is running).
        named = before[0].run_id if before is not None and unfinished(before) else plan.run_id
        try:
            await self._acquire(lock, holder_for(named), row)
        except RunLocked as exc:
            self._end(row, "busy", ExitCode.BAD_INPUT, exc.render())
            return
        row.message = None
        # Decided again under the lock: a run this batch waited for may have finished,
        # paused or stopped on these very inputs meanwhile, or an edit landed.
        before = latest_runs(self.store, self.options.kind, row.directory).get(row.directory)
        if decide(row, plan, planned.inputs, before, self.options, self.store) is not None:
            self._say(row)
            return
        try:
            run, resume = self._open(plan, before, planned.inputs, row, lock)
        except LaterWork as exc:
            row.edited(exc.overwrite or Overwrite([exc.message]))
            self._say(row)
            return
        if resume and run.run_id != named:  # another unfinished run than the one named
            lock.relabel(holder_for(run.run_id))
        row.run_id, row.action = run.run_id, "resumed" if resume else "new"
        row.started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        self._say(row)

        def anew(old: OpenRun, exc: NotResumable) -> OpenRun:
            row.message = f"run {old.run_id} could not be resumed ({exc.message}); started anew"
            new = self._start(plan, planned.inputs, lock)
            row.run_id, row.action = new.run_id, "new"
            self._say(row)
            return new

        async def execute(run: OpenRun, resume: bool) -> RunResult:
            return await self._execute(run, resume, row, saver, lock)

        run, result = await carry_on(self.store, run, resume, execute, anew)
        self._ended(row, run, result, lock)

    def _ended(self, row: Row, run: OpenRun, result: RunResult, lock: RunLock) -> None:
        outcome = result.state.outcome if result.state is not None else None
        if outcome is None:
            row.outcome = "PAUSED" if result.paused else "STOPPED"
        else:
            row.outcome, row.findings = outcome.verdict, list(outcome.remaining)
            if run.record.kept:
                kept = ", ".join(f"{f} at {c}" for f, c in run.record.kept.items())
                row.message = (
                    row.message + "; " if row.message else ""
                ) + f"overwrote later work, kept {kept}"
        code = result.exit_code
        if self.options.approve_if_ready:  # under the lock the run held
            approval = approve_if_ready(run.design, self.store, run.run_id, lock, "batch")
            row.approval = approval.to_json()
            code = approval.exit_code(code)
        self._end(row, row.action, code, row.message or result.message)

    async def _acquire(self, lock: RunLock, holder: Holder, row: Row) -> None:
        if not self.options.wait:
            lock.acquire(holder, False, None)
            return

        def waiting(current: Holder | None) -> None:
            row.message = f"waiting for {current.describe() if current else 'another run'}"
            self._say(row)

        await asyncio.to_thread(lock.acquire, holder, True, waiting)

    def _open(
        self, plan: RunPlan, before: Previous | None, inputs: str, row: Row, lock: RunLock
    ) -> tuple[OpenRun, bool]:
        """The unfinished run of the directory, or a new one."""
        opts = self.options.session
        if before is not None and unfinished(before):
            try:
                run_dir = self.store.run_dir(before[0].run_id)
                run = load_run(
                    run_dir,
                    opts.budget_tokens,
                    opts.max_cost,
                    self.options.fail_on,
                    plan.design.repo_root,
                    sessions=self.sessions,
                )
                refuse_later(run, self.store, "designloop batch create|final DIR --force")
                return self._equip(run), True
            except LaterWork as exc:
                if not self.options.force or exc.overwrite is None:
                    raise  # never started anew over it: the row says edited
                plan.overwrite = exc.overwrite.reasons
                row.message = f"run {before[0].run_id} not resumed over later work; started anew"
            except InputError as exc:  # a run that cannot be resumed never blocks its directory
                row.message = f"run {before[0].run_id} could not be resumed ({exc.message}); started anew"
        return self._start(plan, inputs, lock), False

    def _start(self, plan: RunPlan, inputs: str, lock: RunLock) -> OpenRun:
        return self._equip(start_new(plan, inputs, self.store, lock))

    def _equip(self, run: OpenRun) -> OpenRun:
        runtime = run.session.runtime
        runtime.cache = self.cache
        runtime.inflight = self.inflight
        own = runtime.budget
        runtime.budget = PooledBudget(own.max_tokens, own.max_cost, own.max_requests, self.pool)
        return run

    async def _execute(self, run: OpenRun, resume: bool, row: Row, saver: Any, lock: RunLock) -> RunResult:
        def listen(event: BaseEvent) -> None:
            match event:
                case Started():  # the ledger holds the run's earlier spending by now
                    self.pool.track(run.session.runtime.ledger)
                case RoundStarted():
                    row.round = event.round
                case Spawned():
                    row.spawns += 1
                    row.tokens += event.tokens
                    row.cost += event.cost_usd
                    row.cache_hits += event.cache_hits
                    if event.model:
                        row.models[event.role] = event.played_by
            self._say(row, event)

        return await execute(
            run,
            resume=resume,
            listener=listen,
            configure=self.configure,
            store=self.store,
            saver=saver,
            lock=lock,
            requested_by="batch",
        )

    def _end(self, row: Row, action: str, code: ExitCode, message: str | None) -> None:
        row.end(action, code, message)
        self._say(row)


HERE, ELSEWHERE = "here", "elsewhere"
"""Where a directory's run goes: this process, or a worker process."""
PRELOAD = ("pipeline.fleet.batch", "pipeline.offline.engines")
"""What the worker processes' server imports once: the runner and the offline engine."""
_worker: list[tuple[BatchRunner, Any]] = []
"""A worker process's runner and its report queue (fleet.processes): set up once, for every
directory the process is handed."""


def _start_worker(options: BatchOptions, runs_dir: Path, queue: Any) -> None:
    _worker.append((BatchRunner(options, LocalStore(runs_dir)), queue))


def _run_one(index: int, row: Row, directory: Path) -> Row:
    """A job of a worker process: one directory planned and run; each step reported back."""
    runner, queue = _worker[0]

    def report(row: Row, event: BaseEvent | None) -> None:
        queue.put((index, row, event))

    runner.progress = report
    asyncio.run(runner.one(row, directory))
    return row


def _copy(source: Row, target: Row) -> None:
    for name in Row.__dataclass_fields__:
        setattr(target, name, getattr(source, name))


def worker_processes(options: BatchOptions, setup: SetUp, store: RunStore, directories: int) -> int:
    """How many worker processes a batch runs directories in besides its own (fleet.processes):
    with its own, one per directory up to ``--jobs`` and the cores this process may use, when
    every role runs on the offline engine (its work holds the interpreter's lock, there is no
    request in flight to share and no budget to pool) and the runs live in the local store;
    else none, and the runs are tasks of one event loop, waiting on their models together."""
    offline = all(spec == OFFLINE for spec in setup.specs.values())
    pooled = options.batch_tokens is not None or options.batch_cost is not None
    if not offline or pooled or not isinstance(store, LocalStore):
        return 0
    return max(0, min(options.jobs, directories, _cores()) - 1)


def _cores() -> int:
    """The cores this process may run on (its affinity where the system tells it)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
