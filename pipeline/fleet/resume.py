"""What a batch and a worker do alike with a directory's run: start it with its fingerprint in the
store, go on with it (a run that cannot be resumed is never a dead end: a new run starts on its
directory), and record what a finished run left, so that the next batch can tell it unchanged."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from pipeline.fleet.rows import FINISHED
from pipeline.graph.result import RunResult
from pipeline.runs.event_log import EventLog
from pipeline.runs.events import OutputsRecorded
from pipeline.runs.fingerprint import outputs_digest
from pipeline.runs.lock import RunLock, holder_for
from pipeline.runs.records import NotResumable, StartedBy
from pipeline.runs.setup import OpenRun, RunPlan, start_run
from pipeline.runs.store import RunStore, emit

Execute = Callable[[OpenRun, bool], Awaitable[RunResult]]
"""Runs (True: resumes) an open run to its end, its pause or its stop."""
Anew = Callable[[OpenRun, NotResumable], OpenRun]
"""A new run on the directory of one that cannot be resumed."""


def start_new(
    plan: RunPlan, inputs: str, store: RunStore, lock: RunLock | None = None, started_by: StartedBy = "batch"
) -> OpenRun:
    """Start the planned run with its fingerprint, in the store; the directory's lock, when held,
    names it from now on (not a run it replaces). ``started_by``: a batch, or a queue worker."""
    if lock is not None:
        lock.relabel(holder_for(plan.run_id))
    plan.inputs, plan.started_by = inputs, started_by
    run = start_run(plan)
    store.register(run.run_dir)
    return run


def record_outputs(store: RunStore, run: OpenRun) -> None:
    """After a finished run: the digest of the outputs it left (once), so that the next batch can
    tell they are unchanged (runs.fingerprint)."""
    if not EventLog(run.run_dir).recorded(OutputsRecorded):
        emit(store, run.run_dir, OutputsRecorded(digest=outputs_digest(run.design, run.record.kind)))


async def carry_on(
    store: RunStore, run: OpenRun, resume: bool, execute: Execute, anew: Anew
) -> tuple[OpenRun, RunResult]:
    """Run ``run`` (resumed when ``resume``); one whose checkpoint is gone or unreadable is
    replaced by ``anew``'s new run, started from the beginning. A run that finished (PASS,
    SHOULD-FIX REMAINS, BLOCKER REMAINS, DECISION NEEDED) has its outputs recorded. Returns
    the run that ran and its result."""
    try:
        result = await execute(run, resume)
    except NotResumable as exc:
        if not resume:
            raise
        run = anew(run, exc)
        result = await execute(run, False)
    outcome = result.state.outcome if result.state is not None else None
    if outcome is not None and outcome.verdict in FINISHED:
        record_outputs(store, run)
    return run, result
