"""Runs on many machines: ``designloop enqueue`` puts one job per run on a pgqueuer queue in the
PostgreSQL store; ``designloop worker`` processes take them (docs/scale.md).

One job is one run: its dedupe key is the run id, its payload the run id and the options the
enqueue gave (a budget, a cost cap, --fail-on: a re-queued run goes on under them; a job
still waiting takes those of the latest enqueue). A worker takes a job, holds the run's
design-directory lock (a session advisory lock, and the checkout's file lock) for the whole
run, fetches the run directory from the store and resumes the run from its latest checkpoint
(a run with none starts from the beginning; one that cannot be resumed is replaced by a new
run on its directory). A worker killed mid-run stops heartbeating; after ``[worker] heartbeat``
seconds (params/defaults.toml, 20) another
worker's dequeue finds the job stale and takes it, waits for the advisory lock (released the
moment the killed worker's connection closed) and resumes from the last checkpoint: only the
calls in flight at the kill are made again, every finished one is answered from the shared
cache. A worker that is alive but stalled past the heartbeat cannot run the same run twice:
the second taker waits on the lock, then finds the run finished. A run that loses its lock
stops (graph.watch) and its job is queued again.

``--drain`` exits once no job is queued or picked: a job picked by a worker that died is
still picked, so the drain workers stay until one of them has taken it over and run it.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg

from pipeline.agents.cache import InFlight
from pipeline.agents.session import Sessions
from pipeline.fleet.resume import carry_on, start_new
from pipeline.fleet.rows import (
    Batch,
    BatchOptions,
    Row,
    fingerprint,
    latest_runs,
    new_batch_id,
    plan_row,
    unfinished,
)
from pipeline.formats.job import JobPayload
from pipeline.formats.kinds import is_creation_kind
from pipeline.graph.result import RunResult
from pipeline.graph.runner import execute as execute_run
from pipeline.runs.events import Stopped
from pipeline.runs.fingerprint import Fingerprints
from pipeline.runs.lock import LockLost, RunLock, holder_for
from pipeline.runs.pg_lock import asetup_lock, schema_options
from pipeline.runs.pg_store import PgStore
from pipeline.runs.records import NotResumable, portable
from pipeline.runs.setup import OpenRun, load_run, plan_run, refuse_later, resume_options
from pipeline.runs.store import emit
from pipeline.settings import repo_root, worker_settings

ENTRYPOINT = "designloop_run"
LEFT_SQL = "SELECT COUNT(*) FROM pgqueuer WHERE entrypoint = %s AND status IN ('queued', 'picked')"


async def queue_connection(store: PgStore) -> psycopg.AsyncConnection[Any]:
    """The queue's connection, its tables installed once in the store's schema."""
    from pgqueuer.db import PsycopgDriver
    from pgqueuer.queries import Queries

    with store.db():
        pass  # the schema exists
    conn = await psycopg.AsyncConnection.connect(store.dsn, autocommit=True, options=schema_options())
    queries = Queries(PsycopgDriver(conn))
    async with await psycopg.AsyncConnection.connect(store.dsn, autocommit=True) as guard:
        await asetup_lock(guard)
        if not await queries.schema_is_installed():
            await queries.install(create_schema=False)
    return conn


def _payload(run_id: str, options: BatchOptions) -> bytes:
    session = options.session
    return JobPayload(
        run_id=run_id, budget_tokens=session.budget_tokens, max_cost=session.max_cost, fail_on=options.fail_on
    ).encode()


async def enqueue(
    options: BatchOptions, store: PgStore, directories: list[Path], sessions: Sessions | None = None
) -> Batch:
    """Check every directory, start (or pick up) its run, and put one job per run on the queue.
    A directory unchanged since its last finished run is skipped (one edited since is left
    alone); a bad one is reported, never queued
    (when every one is bad, nothing is written)."""
    from pgqueuer.db import PsycopgDriver
    from pgqueuer.queries import Queries

    batch = Batch(new_batch_id(options.kind), options.kind)
    previous = latest_runs(store, options.kind)
    fingerprints = Fingerprints(store.runs_dir)
    jobs: list[str] = []
    for directory in directories:
        row = Row(portable(directory, repo_root(directory)))
        batch.rows.append(row)
        planned = plan_row(row, directory, options, fingerprints, previous, store, sessions)
        if planned is None:
            continue
        before = planned.before
        try:
            if before is not None and unfinished(before):
                row.action, row.run_id = "queued", before[0].run_id  # its unfinished run goes on
            else:
                row.action, row.run_id = (
                    "queued",
                    start_new(planned.plan, planned.inputs, store, None, "worker").run_id,
                )
        except Exception as exc:  # one directory's failure never stops the others
            row.fail(exc)
            continue
        jobs.append(row.run_id)
    if jobs:
        conn = await queue_connection(store)
        try:
            queries = Queries(PsycopgDriver(conn))
            for run_id in jobs:
                payload = _payload(run_id, options)
                # A run already queued or being worked on is not queued twice; one still waiting
                # takes this enqueue's options.
                added = await queries.enqueue(ENTRYPOINT, payload, dedupe_key=run_id, on_conflict="skip")
                if added == [None]:
                    await conn.execute(
                        "UPDATE pgqueuer SET payload = %s WHERE dedupe_key = %s AND status = 'queued'",
                        (payload, run_id),
                    )
        finally:
            await conn.close()
    batch.save(store)
    return batch


class Worker:
    """One worker process: ``jobs`` runs at a time from the queue of ``store``."""

    def __init__(self, store: PgStore, jobs: int, repo: Path, drain: bool = False) -> None:
        self.store = store
        self.jobs = jobs
        self.repo = repo
        self.drain = drain
        self.inflight = InFlight()
        self.sessions = Sessions()
        """The set-up the worker's runs share, per repository and options."""
        """One registry of requests being asked, for every job this worker runs at once."""
        settings = worker_settings(repo)
        self.heartbeat = timedelta(seconds=settings.heartbeat)
        """A picked job whose heartbeat is older than this is taken by another worker."""
        self.dequeue = timedelta(seconds=settings.dequeue)
        """An idle worker looks for stale jobs at least this often (new jobs arrive by NOTIFY at
        once); a drain worker looks this often whether any job is left."""

    async def serve(self) -> None:
        from pgqueuer import PgQueuer
        from pgqueuer.adapters.cli.supervisor import setup_signal_handlers
        from pgqueuer.errors import RetryRequested
        from pgqueuer.models import Job
        from pgqueuer.types import QueueExecutionMode

        conn = await queue_connection(self.store)
        try:
            async with self.store.checkpointer() as saver:
                pgq = PgQueuer.from_psycopg_connection(conn)
                # SIGTERM or SIGINT: take no new job, let the runs in hand finish, record them, exit.
                setup_signal_handlers(pgq.shutdown)

                @pgq.entrypoint(ENTRYPOINT, on_failure="hold")
                async def run_job(job: Job) -> None:
                    try:
                        await self.run(JobPayload.decode(job.payload, job.id), saver)
                    except LockLost as exc:  # stopped, resumable: the queue takes it up again
                        raise RetryRequested(delay=self.heartbeat, reason=exc.message) from exc

                # pgqueuer's own drain mode counts only queued jobs: a dead worker's picked job
                # would be left behind. The drain here waits until none is queued or picked.
                watcher = asyncio.create_task(self._drained(pgq.shutdown)) if self.drain else None
                try:
                    await pgq.run(
                        dequeue_timeout=self.dequeue,
                        heartbeat_timeout=self.heartbeat,
                        batch_size=1,
                        max_concurrent_tasks=self.jobs,
                        mode=QueueExecutionMode.continuous,
                    )
                finally:
                    if watcher is not None:
                        watcher.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await watcher
        finally:
            await conn.close()

    async def _drained(self, shutdown: asyncio.Event) -> None:
        """Stop the worker once no job of ours is queued or picked by any worker."""
        while not shutdown.is_set():
            if await asyncio.to_thread(self._left) == 0:
                shutdown.set()
                return
            await asyncio.sleep(self.dequeue.total_seconds())

    def _left(self) -> int:
        with self.store.db() as db:
            row = db.execute(LEFT_SQL, (ENTRYPOINT,)).fetchone()
        return int(row[0]) if row else 0

    async def run(self, job: JobPayload, saver: Any) -> None:
        """One job: the run, under its directory's lock, from its latest checkpoint."""
        run_id = job.run_id
        record = self.store.record(run_id)
        lock = self.store.lock(self.repo / record.directory, record.directory)
        await asyncio.to_thread(lock.acquire, holder_for(run_id), True, None)
        try:
            if self.store.view(run_id).state == "discarded":
                return  # withdrawn while it waited on the queue: never resumed
            budget, cost, fail_on = job.budget_tokens, job.max_cost, job.fail_on
            run_dir = self.store.run_dir(run_id)  # afresh: a previous taker may have got further
            run = load_run(run_dir, budget, cost, fail_on, repo=self.repo, sessions=self.sessions)
            # Taking a run over never overwrites what was recorded after it started.
            refuse_later(run, self.store, f"designloop resume {run_id} --force")

            async def execute(run: OpenRun, resume: bool) -> RunResult:
                run.session.runtime.inflight = self.inflight
                return await execute_run(
                    run, resume=resume, store=self.store, saver=saver, lock=lock, requested_by="worker"
                )

            def anew(old: OpenRun, exc: NotResumable) -> OpenRun:
                return self._anew(old, exc, lock, budget, cost)

            # A run that stops on bad input records why and raises: the job is held as failed.
            await carry_on(self.store, run, True, execute, anew)
        finally:
            await asyncio.to_thread(lock.release)

    def _anew(self, run: OpenRun, exc: NotResumable, lock: RunLock, budget: Any, cost: Any) -> OpenRun:
        """A new run on the directory of a run that cannot be resumed, with its options."""
        record = run.record
        if not is_creation_kind(record.kind):  # only creation runs are queued
            raise exc
        options = resume_options(record, run.run_dir, budget, cost)
        plan = plan_run(
            record.kind,
            run.design.root,
            options,
            record.warmup,
            run.design.code_root,
            record.options.fail_on,
            self.sessions,
        )
        fingerprints = Fingerprints(self.store.runs_dir)
        plan.design_inputs = fingerprint(plan, fingerprints, code=False)
        new = start_new(plan, fingerprint(plan, fingerprints), self.store, lock, "worker")
        message = f"cannot be resumed ({exc.message}); run {new.run_id} started anew"
        emit(self.store, run.run_dir, Stopped(message=message))
        return new
