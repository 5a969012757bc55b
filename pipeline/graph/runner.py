"""Running and resuming a run of either kind: the checkpointer, the graph for its kind, where the
graph starts from, and how the run ends (finished, paused at the gate, or stopped)."""

from __future__ import annotations

import contextlib
import datetime as dt
import shutil
import sqlite3
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command
from pydantic import ValidationError

from pipeline.agents.resolve import roles_played
from pipeline.agents.usage import BudgetExceeded, Usage
from pipeline.errors import ExitCode, InputError, WiringError
from pipeline.formats.kinds import CREATION_KINDS, Kind, is_creation_kind
from pipeline.formats.space import OutOfSpace, space_error
from pipeline.graph.create.build import build_graph
from pipeline.graph.create.state import RunState
from pipeline.graph.deps import RunDeps, build_deps
from pipeline.graph.edit.build import build_edit_graph
from pipeline.graph.edit.state import EditState
from pipeline.graph.result import RunResult, exit_code_for
from pipeline.graph.watch import watched
from pipeline.runs.checkpoints import Saver
from pipeline.runs.event_fields import Spent
from pipeline.runs.event_log import EventLog, Listener, read_events
from pipeline.runs.events import Finished, Paused, RunStarted, Started, Stopped
from pipeline.runs.lock import LockLost, RunLock
from pipeline.runs.records import RUN_FORMAT, FailOn, NotResumable, predates
from pipeline.runs.setup import OpenRun, load_run
from pipeline.runs.store import LocalStore, RunStore
from pipeline.runs.views import ViewKeeper
from pipeline.settings import CHECKPOINTS

LAUNCH_EVENTS = (RunStarted, Started, Stopped, Paused)
"""Events written before the graph's first checkpoint: any other means a checkpoint exists."""
Graph = CompiledStateGraph[Any, Any, Any, Any]
State = RunState | EditState


def graph_for(kind: Kind, saver: Saver | None = None) -> Graph:
    """The graph a run of ``kind`` runs: the creation graph or the interactive kinds' graph."""
    return build_graph(saver) if kind in CREATION_KINDS else build_edit_graph(saver)


def _stale(values: dict[str, Any]) -> bool:
    """A state written by an earlier format. The first checkpoint holds only LangGraph's own
    channels (the input is still a pending write): that is no state at all, not an old one."""
    fields = [k for k in values if not k.startswith("__")]
    return bool(fields) and values.get("format") != RUN_FORMAT


def _ran(run: OpenRun) -> bool:
    """Whether the run's events show it got past the graph's first checkpoint."""
    return any(not isinstance(e, LAUNCH_EVENTS) for e in read_events(run.run_dir))


def _no_checkpoint(run: OpenRun, store: RunStore) -> NotResumable:
    path = store.url or str(run.session.runs_dir / CHECKPOINTS)
    return NotResumable(
        f"run {run.run_id} has no checkpoint in {path}, though its events show it ran: the "
        "checkpoint store was deleted, emptied or replaced",
        file=path,
        hint="restore the checkpoint store from a backup to resume it, or start a new run on the "
        "same directory (designloop create or final): finished model calls are answered from the cache",
    )


def _state(run: OpenRun, values: dict[str, Any]) -> State | None:
    """The checkpoint's values as the kind's state; a state of an earlier format is refused."""
    if not values:
        return None
    if values.get("format") != RUN_FORMAT:
        raise predates(run.run_id, values.get("format", 1))
    try:
        if run.record.kind not in CREATION_KINDS:
            return EditState.model_validate(values)
        return RunState.model_validate(values)
    except ValidationError as exc:
        raise _unreadable(run, exc) from None


def _unreadable(run: OpenRun, exc: ValidationError) -> NotResumable:
    error = exc.errors()[0]
    return NotResumable(
        f"the checkpoint of run {run.run_id} does not hold a readable run state: "
        f"{'.'.join(map(str, error['loc']))}: {error['msg']}",
        hint="the run cannot be resumed; start a new run on the same directory",
    )


def _initial(run: OpenRun) -> State:
    record, budget = run.record, run.session.limits.iteration_budget
    if record.edit is not None:
        return EditState(
            run_id=run.run_id, kind=record.edit.kind, request=record.edit, budget=budget, draft=record.draft
        )
    if not is_creation_kind(record.kind):
        raise WiringError(f"run {run.run_id} of kind {record.kind} records no edit", hint="start a new run")
    return RunState(run_id=run.run_id, kind=record.kind, budget=budget, draft=record.draft)


async def execute(
    run: OpenRun | Path,
    *,
    resume: bool,
    budget_tokens: int | None = None,
    max_cost: str | None = None,
    listener: Listener | None = None,
    configure: Callable[[RunDeps], None] | None = None,
    store: RunStore | None = None,
    saver: Saver | None = None,
    lock: RunLock | None = None,
    requested_by: str = "cli",
) -> RunResult:
    """Run (or resume) the graph for a run until it finishes, pauses or stops.

    ``store`` is where the run lives (the local store of its runs directory by default), and
    its cache, when it has one, answers the run's requests;
    ``saver`` is a checkpointer already open on it, shared by concurrent runs. A finished
    run's thread keeps only its latest checkpoint (retention). ``lock``, the directory's lock
    the caller holds, is watched for the whole run and checked before the finish's writes
    (graph.watch): a run that loses it stops with LockLost. A resume that cannot go on at all
    raises NotResumable before it writes anything. ``requested_by`` (cli, batch, worker) is
    recorded with the revisions the run leaves."""
    if isinstance(run, Path):
        run = load_run(run, budget_tokens, max_cost)
    store = store or LocalStore(run.session.runs_dir)
    shared = store.cache()  # a shared store's cache answers every run (the local one is the run's own)
    if shared is not None:
        run.session.runtime.cache = shared
    try:

        def equip(deps: RunDeps) -> None:
            deps.revisions, deps.requested_by = store.revisions(), requested_by
            if configure is not None:
                configure(deps)

        if saver is not None:
            result = await _execute(run, resume, listener, equip, store, saver, lock)
        else:
            async with _open(run, resume, store) as opened:
                result = await _execute(run, resume, listener, equip, store, opened, lock)
        ran = {item.role for item in result.state.usage} if result.state is not None else set()
        result.models = roles_played(ran, run.session.runtime.model_specs)
        return result
    except Exception as exc:
        full = space_error(exc, run.session.runs_dir)
        if full is None:
            raise
        raise _after_full_disk(run, store, full) from None
    finally:
        if run.session.runtime.cache is not None:
            run.session.runtime.cache.close()


async def _saved(
    run: OpenRun, graph: Graph, saver: Saver, config: RunnableConfig
) -> tuple[Any, Any, State | None]:
    """The run's last checkpoint, the graph's snapshot of it and the state it holds."""
    saved = await saver.aget_tuple(config)
    # Check the format before LangGraph reads the state into RunState for its next tasks.
    values = saved.checkpoint["channel_values"] if saved else {}
    if _stale(values):
        raise predates(run.run_id, values.get("format", 1))
    try:
        snapshot = await graph.aget_state(config)
    except ValidationError as exc:
        raise _unreadable(run, exc) from None
    # A checkpoint that holds only the pending input (the run stopped before its first step was
    # saved: a kill, a full disk) holds no state: the run starts from its input.
    if not any(not k.startswith("__") for k in values):
        return saved, snapshot, None
    return saved, snapshot, _state(run, dict(snapshot.values or {}))


def _after_full_disk(run: OpenRun, store: RunStore, full: OutOfSpace) -> OutOfSpace:
    """A run the disk filled under: one with a checkpoint stays resumable (the message says how);
    one without is removed whole, leaving nothing behind (run it again once there is room)."""
    if _checkpointed(run, store):
        with contextlib.suppress(Exception):  # the disk may still have no room for it
            EventLog(run.run_dir).emit(Stopped(message=full.message))
        return full.then(f"designloop resume {run.run_id} (it goes on from its last completed step)")
    shutil.rmtree(run.run_dir, ignore_errors=True)
    return full.then("run again (this run had not begun: nothing of it was kept)")


def _checkpointed(run: OpenRun, store: RunStore) -> bool:
    """Whether the store holds a checkpoint of the run (one it cannot ask is taken to)."""
    if not isinstance(store, LocalStore):
        return True
    path = store.runs_dir / CHECKPOINTS
    if not path.is_file():
        return False
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=0)) as db:
            query = "SELECT 1 FROM checkpoints WHERE thread_id = ? LIMIT 1"
            return db.execute(query, (run.run_id,)).fetchone() is not None
    except sqlite3.Error as exc:
        return "no such table" not in str(exc)


def _open(run: OpenRun, resume: bool, store: RunStore) -> AbstractAsyncContextManager[Saver]:
    if resume and not store.has_checkpoints() and _ran(run):
        raise _no_checkpoint(run, store)  # deleted or emptied: named before the store is opened
    return store.checkpointer()


def _deps(
    run: OpenRun,
    store: RunStore,
    listener: Listener | None,
    configure: Callable[[RunDeps], None] | None,
    lock: RunLock | None,
) -> RunDeps:
    """The run's services: its events published to the store and told to ``listener``."""
    session = run.session
    deps = build_deps(
        session.runtime, run.design, session.limits, session.run, run.run_dir, run.record.warmup
    )
    if lock is not None:
        deps.fence = lock.check
    deps.events.subscribe(ViewKeeper(run.run_dir))  # status and runs read it, not the log
    published = store.publish(run.run_dir)
    if published is not None:
        deps.events.subscribe(published)
    if listener is not None:
        deps.events.subscribe(listener, notices=True)
    if configure is not None:
        configure(deps)
    return deps


async def _start_from(
    run: OpenRun, graph: Graph, config: RunnableConfig, snapshot: Any, state: State | None, resume: bool
) -> Any:
    """What the graph is given: the run's input (a new run, or one with no state yet), the
    gate's answer (a pause), or nothing (it goes on from its last checkpoint: a task whose
    writes were saved before the process died is not run again; its writes are applied)."""
    if not resume or state is None:
        return _initial(run).model_dump(mode="json")
    if snapshot.interrupts:
        return Command(resume={"resumed_at": dt.datetime.now(dt.UTC).isoformat()})
    at_end = not snapshot.next and not snapshot.tasks
    if at_end or (state.review_entry is not None and state.entry is None):
        # A finish cut short is run again from the outcome (every finish step is idempotent);
        # so is one whose state has no entry to present (saved by an earlier designloop).
        await graph.aupdate_state(config, None, as_node="step6_outcome")
    return None


async def _execute(
    run: OpenRun,
    resume: bool,
    listener: Listener | None,
    configure: Callable[[RunDeps], None] | None,
    store: RunStore,
    saver: Saver,
    lock: RunLock | None = None,
) -> RunResult:
    record = run.record
    deps = _deps(run, store, listener, configure, lock)
    config: RunnableConfig = {"configurable": {"thread_id": record.run_id}, "recursion_limit": 400}
    graph = graph_for(record.kind, saver)
    saved, snapshot, state = await _saved(run, graph, saver, config)
    for item in state.usage if state else []:
        deps.runtime.ledger.add(item.round, item.role, item.usage)
    if resume and saved is None and _ran(run):
        raise _no_checkpoint(run, store)  # a store replaced by another is named, never silently restarted
    at_end = state is not None and not snapshot.interrupts and not snapshot.next and not snapshot.tasks
    if resume and at_end and deps.events.recorded(Finished):
        await store.prune(saver, record.run_id)  # its outcome is on record: the run is over
        return _result(run, state)
    graph_input = await _start_from(run, graph, config, snapshot, state, resume)
    deps.events.emit(
        Started(type="resume" if resume else "start", budget_tokens=run.session.runtime.budget.max_tokens)
    )
    try:
        await watched(lock, graph.ainvoke(graph_input, config, context=deps, durability="sync"))
    except LockLost as exc:
        with contextlib.suppress(Exception):  # the store may be what went away
            deps.events.emit(Stopped(message=exc.message))
        raise
    except BudgetExceeded as exc:
        return await _stopped(run, graph, config, deps, exc)
    except (WiringError, InputError) as exc:
        deps.events.emit(Stopped(message=exc.message))
        raise
    return await _ended(run, graph, config, deps, store, saver)


async def _stopped(
    run: OpenRun, graph: Graph, config: RunnableConfig, deps: RunDeps, exc: BudgetExceeded
) -> RunResult:
    """A run a budget stopped: resumable with a larger one (the result names the flag)."""
    spent = deps.runtime.ledger.total()
    deps.refresh_claims(run.record.kind)  # the draft it stopped on, with its claims ledger
    deps.record_wrote(run.record.kind)
    # What the stopped spawn had spent: no spawn event records it, so this one does.
    partial = Spent.model_validate((exc.spent or Usage()).to_json())
    deps.events.emit(
        Stopped(
            message=exc.message, usage=Spent.model_validate(spent.to_json()), partial=partial, flag=exc.flag
        )
    )
    state = _state(run, dict((await graph.aget_state(config)).values or {}))
    return RunResult(
        run.run_id, run.record.kind, ExitCode.BUDGET, state, message=exc.render(), spent=spent, flag=exc.flag
    )


async def _ended(
    run: OpenRun, graph: Graph, config: RunnableConfig, deps: RunDeps, store: RunStore, saver: Saver
) -> RunResult:
    """The graph returned: paused at the S3 gate, or finished (its thread pruned to the latest
    checkpoint)."""
    snapshot = await graph.aget_state(config)
    state = _state(run, dict(snapshot.values or {}))
    if snapshot.interrupts:
        paused = snapshot.interrupts[0].value
        gate = paused.get("gate", {}) if isinstance(paused, dict) else {}
        deps.refresh_claims(run.record.kind)
        deps.record_wrote(run.record.kind)
        deps.events.emit(Paused(gate=gate.get("state"), message=gate.get("message")))
        message = gate.get("message") if gate else str(paused)
        return RunResult(
            run.run_id, run.record.kind, ExitCode.GATE_PAUSED, state, paused=paused, message=message
        )
    await store.prune(saver, run.run_id)
    return _result(run, state)


def _result(run: OpenRun, state: State | None) -> RunResult:
    outcome = state.outcome if state else None
    edit = run.record.edit
    # --fail-on should-fix given to the run, or to the edit it records, turns the warning into 1.
    fail_on: FailOn = (
        "should-fix" if edit is not None and edit.fail_on == "should-fix" else run.record.options.fail_on
    )
    code = exit_code_for(outcome.verdict, fail_on) if outcome else ExitCode.FINDINGS
    return RunResult(run.run_id, run.record.kind, code, state, message=state.summary if state else None)
