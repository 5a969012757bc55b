"""Runs on many machines: ``designloop enqueue`` puts one job per run on a pgqueuer queue in the
PostgreSQL store; ``designloop worker`` processes take them (docs/scale.md).

One job is one run (payload and dedupe key: the run id). A worker takes a job, holds the run's
design-directory lock (a session advisory lock) for the whole run, fetches the run directory
from the store and resumes the run from its latest checkpoint (a run with none starts from the
beginning). A worker killed mid-run stops heartbeating; after ``HEARTBEAT`` another worker's
dequeue finds the job stale and takes it, waits for the advisory lock (released the moment
the killed worker's connection closed) and resumes from the last checkpoint: only the calls in
flight at the kill are made again, every finished one is answered from the shared cache. A
worker that is alive but stalled past the heartbeat cannot run the same run twice: the second
taker waits on the lock, then finds the run finished.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg

from pipeline.errors import InputError
from pipeline.graph.batch import Batch, BatchOptions, Row, latest_runs, new_batch_id, unchanged, unfinished
from pipeline.graph.runner import execute
from pipeline.graph.state import PASS
from pipeline.runs.events import EventLog
from pipeline.runs.fingerprint import Fingerprints, outputs_digest
from pipeline.runs.lock import holder_for
from pipeline.runs.pg_lock import asetup_lock, schema_options
from pipeline.runs.pg_store import PgStore
from pipeline.runs.records import portable, read_record
from pipeline.runs.setup import load_run, plan_run, start_run
from pipeline.settings import repo_root

ENTRYPOINT = "designloop_run"
HEARTBEAT = timedelta(seconds=20)
"""A picked job whose heartbeat is older than this is taken by another worker."""
DEQUEUE = timedelta(seconds=10)
"""An idle worker looks for stale jobs at least this often (new jobs arrive by NOTIFY at once)."""


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


async def enqueue(options: BatchOptions, store: PgStore, directories: list[Path]) -> Batch:
    """Check every directory, start (or pick up) its run, and put one job per run on the queue.
    A directory unchanged since its last PASS is skipped; a bad one is reported, never queued."""
    from pgqueuer.db import PsycopgDriver
    from pgqueuer.queries import Queries

    batch = Batch(new_batch_id(options.kind), options.kind)
    previous = latest_runs(store, options.kind)
    fingerprints = Fingerprints(store.runs_dir)
    jobs: list[str] = []
    for directory in directories:
        row = Row(portable(directory, repo_root(directory)))
        batch.rows.append(row)
        try:
            plan = plan_run(options.kind, directory, options.session, options.warmup, None, options.fail_on)
        except InputError as exc:
            row.action, row.exit_code, row.message = "bad", int(exc.exit_code), exc.render()
            continue
        design = plan.design
        row.directory = portable(design.root, design.repo_root)
        inputs = fingerprints.inputs(
            design, options.kind, plan.session.runtime.model_specs, options.session.base_url
        )
        before = previous.get(row.directory)
        if unchanged(before, inputs, design, options.kind):
            assert before is not None
            row.action, row.run_id, row.outcome, row.exit_code = "skipped", before[0].run_id, PASS, 0
            continue
        if unfinished(before):
            assert before is not None
            row.action, row.run_id = "queued", before[0].run_id  # its unfinished run goes on
        else:
            plan.inputs = inputs
            run = start_run(plan)
            store.register(run.run_dir)
            row.action, row.run_id = "queued", run.run_id
        jobs.append(row.run_id)
    conn = await queue_connection(store)
    try:
        queries = Queries(PsycopgDriver(conn))
        for run_id in jobs:
            # A run already queued or being worked on is not queued twice.
            await queries.enqueue(
                ENTRYPOINT, json.dumps({"run_id": run_id}).encode(), dedupe_key=run_id, on_conflict="skip"
            )
    finally:
        await conn.close()
    store.save_batch(batch.batch_id, batch.to_json())
    return batch


class Worker:
    """One worker process: ``jobs`` runs at a time from the queue of ``store``."""

    def __init__(self, store: PgStore, jobs: int, repo: Path, drain: bool = False) -> None:
        self.store = store
        self.jobs = jobs
        self.repo = repo
        self.drain = drain

    async def serve(self) -> None:
        from pgqueuer import PgQueuer
        from pgqueuer.adapters.cli.supervisor import setup_signal_handlers
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
                    payload = json.loads((job.payload or b"{}").decode())
                    await self.run(str(payload["run_id"]), saver)

                await pgq.run(
                    dequeue_timeout=DEQUEUE,
                    heartbeat_timeout=HEARTBEAT,
                    batch_size=1,
                    max_concurrent_tasks=self.jobs,
                    mode=QueueExecutionMode.drain if self.drain else QueueExecutionMode.continuous,
                )
        finally:
            await conn.close()

    async def run(self, run_id: str, saver: Any) -> None:
        """One job: the run, under its directory's lock, from its latest checkpoint."""
        record = read_record(self.store.run_dir(run_id))
        lock = self.store.lock(self.repo / record.directory, record.directory)
        await asyncio.to_thread(lock.acquire, holder_for(run_id), True, None)
        try:
            run_dir = self.store.run_dir(run_id)  # afresh: a previous taker may have got further
            run = load_run(run_dir, repo=self.repo)
            shared = self.store.cache()
            if shared is not None:
                run.session.runtime.cache = shared
            # A run that stops on bad input records why and raises: the job is held as failed.
            result = await execute(run, resume=True, store=self.store, saver=saver)
            state = result.state
            log = EventLog(run.run_dir)
            passed = state is not None and state.outcome is not None and state.outcome.verdict == PASS
            if passed and not log.recorded("outputs"):
                published = self.store.publish(run.run_dir)
                if published is not None:
                    log.subscribe(published)
                log.emit("outputs", digest=outputs_digest(run.design, run.record.kind))
        finally:
            await asyncio.to_thread(lock.release)
