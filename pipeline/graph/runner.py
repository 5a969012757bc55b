"""Running, resuming and finishing a creation run: the checkpointer, the outcome, exit codes."""

from __future__ import annotations

import contextlib
import datetime as dt
import shutil
import sqlite3
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command
from pydantic import ValidationError

from pipeline.agents.usage import BudgetExceeded, Usage
from pipeline.errors import ExitCode, InputError, WiringError
from pipeline.formats.kinds import CREATION_KINDS
from pipeline.formats.space import OutOfSpace, space_error
from pipeline.graph import story
from pipeline.graph.build import build_graph
from pipeline.graph.deps import RunDeps, build_deps
from pipeline.graph.edit_build import build_edit_graph
from pipeline.graph.edit_state import EditState
from pipeline.graph.entry import describe_diff
from pipeline.graph.state import (
    BLOCKER_REMAINS,
    DECISION_NEEDED,
    INCONCLUSIVE,
    PASS,
    SHOULD_FIX_REMAINS,
    RunState,
    Verdict,
)
from pipeline.graph.watch import watched
from pipeline.runs.events import EventLog, read_events
from pipeline.runs.lock import LockLost, RunLock
from pipeline.runs.records import RUN_FORMAT, FailOn, NotResumable, predates
from pipeline.runs.setup import OpenRun, load_run
from pipeline.runs.store import LocalStore, RunStore, Saver
from pipeline.settings import CHECKPOINTS

LAUNCH_EVENTS = frozenset({"run_start", "start", "resume", "stopped", "paused"})
"""Events written before the graph's first checkpoint: any other means a checkpoint exists."""
OUTCOME_EXIT: dict[Verdict, ExitCode] = {
    PASS: ExitCode.OK,
    BLOCKER_REMAINS: ExitCode.FINDINGS,
    SHOULD_FIX_REMAINS: ExitCode.OK,  # the seed's "completes with a warning"
    INCONCLUSIVE: ExitCode.INCONCLUSIVE,
    DECISION_NEEDED: ExitCode.FINDINGS,
}


def exit_code_for(verdict: Verdict, fail_on: FailOn) -> ExitCode:
    """The exit code of a finished run; ``--fail-on should-fix`` turns the warning into 1."""
    if verdict == SHOULD_FIX_REMAINS and fail_on == "should-fix":
        return ExitCode.FINDINGS
    return OUTCOME_EXIT[verdict]


@dataclass(slots=True)
class RunResult:
    run_id: str
    kind: str
    exit_code: ExitCode
    state: RunState | EditState | None
    paused: dict[str, Any] | None = None
    message: str | None = None
    spent: Usage | None = None
    """This process's own ledger, when it knows more than the checkpoint (a stop mid-node)."""
    flag: str | None = None
    """For a stopped run, the option that lets ``resume`` go on (--budget, --max-requests ...)."""

    def to_json(self) -> dict[str, Any]:
        state = self.state
        usage = Usage()
        for item in state.usage if state else []:
            usage.merge(item.usage)
        if self.spent is not None and self.spent.total_tokens > usage.total_tokens:
            usage = self.spent
        outcome = state.outcome if state else None
        return {
            "run_id": self.run_id,
            "kind": self.kind,
            "outcome": outcome.verdict if outcome else ("PAUSED" if self.paused else "STOPPED"),
            "exit_code": int(self.exit_code),
            "rounds": state.round if state else None,
            "findings": story.findings_json(state, outcome.remaining) if state and outcome else [],
            "blocking": sum(1 for f in outcome.remaining if f.blocking) if outcome else 0,
            "usage": usage.to_json(),
            "review_log_entry": state.review_entry if state else None,
            "draft": state.draft if state else None,
            "history": [h.model_dump() for h in state.history] if state else [],
            "notes": state.notes if state else [],
            "diff": {
                "summary": describe_diff(state.diff if state else []),
                "files": [d.to_json() for d in state.diff] if state else [],
            },
            "paused": self.paused,
            "message": self.message,
        } | (edit_json(state) if isinstance(state, EditState) else {})


def edit_json(state: EditState) -> dict[str, Any]:
    """What an interactive edit adds to --json: its scope, files, sync suggestion."""
    scope = state.scope
    applied = state.applied
    return {
        "scope": scope.model_dump(mode="json") if scope else {"cold_read": "skipped"},
        "files": applied.files if applied else [],
        "changed_section": applied.changed_section if applied else None,
        "sync": state.sync.model_dump(mode="json", exclude={"passages"}) if state.sync else None,
        "sync_suggestion": state.sync_suggestion,
    }


def _stale(values: dict[str, Any]) -> bool:
    """A state written by an earlier format. The first checkpoint holds only LangGraph's own
    channels (the input is still a pending write): that is no state at all, not an old one."""
    fields = [k for k in values if not k.startswith("__")]
    return bool(fields) and values.get("format") != RUN_FORMAT


def _ran(run: OpenRun) -> bool:
    """Whether the run's events show it got past the graph's first checkpoint."""
    return any(e["type"] not in LAUNCH_EVENTS for e in read_events(run.run_dir))


def _no_checkpoint(run: OpenRun, store: RunStore) -> NotResumable:
    path = store.url or str(run.session.runs_dir / CHECKPOINTS)
    return NotResumable(
        f"run {run.run_id} has no checkpoint in {path}, though its events show it ran: the "
        "checkpoint store was deleted, emptied or replaced",
        file=path,
        hint="restore the checkpoint store from a backup to resume it, or start a new run on the "
        "same directory (designloop create or final): finished model calls are answered from the cache",
    )


def _state(run: OpenRun, values: dict[str, Any]) -> RunState | EditState | None:
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


def _initial(run: OpenRun) -> RunState | EditState:
    if run.record.edit is not None:
        return EditState(
            run_id=run.run_id,
            kind=run.record.kind,
            request=run.record.edit,
            budget=run.session.limits.iteration_budget,
            draft=run.record.draft,
        )
    return RunState(
        run_id=run.run_id,
        kind=run.record.kind,
        round=1,
        budget=run.session.limits.iteration_budget,
        draft=run.record.draft,
    )


async def execute(
    run: OpenRun | Path,
    *,
    resume: bool,
    budget_tokens: int | None = None,
    max_cost: str | None = None,
    listener: Callable[[dict[str, Any]], None] | None = None,
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
            return await _execute(run, resume, listener, equip, store, saver, lock)
        async with _open(run, resume, store) as opened:
            return await _execute(run, resume, listener, equip, store, opened, lock)
    except Exception as exc:
        full = space_error(exc, run.session.runs_dir)
        if full is None:
            raise
        raise _after_full_disk(run, store, full) from None
    finally:
        if run.session.runtime.cache is not None:
            run.session.runtime.cache.close()


async def _saved(
    run: OpenRun, graph: Any, saver: Saver, config: RunnableConfig
) -> tuple[Any, Any, RunState | EditState | None]:
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
            EventLog(run.run_dir).emit("stopped", message=full.message)
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


async def _execute(
    run: OpenRun,
    resume: bool,
    listener: Callable[[dict[str, Any]], None] | None,
    configure: Callable[[RunDeps], None] | None,
    store: RunStore,
    saver: Saver,
    lock: RunLock | None = None,
) -> RunResult:
    session, record = run.session, run.record
    deps = build_deps(session.runtime, run.design, session.limits, session.run, run.run_dir, record.warmup)
    if lock is not None:
        deps.fence = lock.check
    published = store.publish(run.run_dir)
    if published is not None:
        deps.events.subscribe(published)
    if listener is not None:
        deps.events.subscribe(listener)
    if configure is not None:
        configure(deps)
    config: RunnableConfig = {
        "configurable": {"thread_id": record.run_id, "deps": deps},
        "recursion_limit": 400,
    }
    graph = build_graph(saver) if record.kind in CREATION_KINDS else build_edit_graph(saver)
    saved, snapshot, state = await _saved(run, graph, saver, config)
    for item in state.usage if state else []:
        deps.runtime.ledger.add(item.round, item.role, item.usage)
    graph_input: Any = None
    if resume and saved is None and _ran(run):
        raise _no_checkpoint(run, store)  # a store replaced by another is named, never silently restarted
    if not resume or state is None:
        graph_input = _initial(run).model_dump(mode="json")
    elif snapshot.interrupts:
        graph_input = Command(resume={"resumed_at": dt.datetime.now(dt.UTC).isoformat()})
    elif not snapshot.next and not snapshot.tasks:
        # The graph is at its end. Its outcome counts only once the finish is on record; a
        # finish cut short is run again from the outcome (every finish step is idempotent).
        if deps.events.recorded("outcome"):
            await store.prune(saver, record.run_id)
            return _result(run, state)
        await graph.aupdate_state(config, None, as_node="step6_outcome")
    # Otherwise: continue from the last checkpoint. A task whose writes were saved before
    # the process died is not run again; its writes are applied and the graph goes on.
    deps.events.emit("resume" if resume else "start", budget_tokens=session.runtime.budget.max_tokens)
    try:
        await watched(lock, graph.ainvoke(graph_input, config, durability="sync"))
    except LockLost as exc:
        with contextlib.suppress(Exception):  # the store may be what went away
            deps.events.emit("stopped", message=exc.message)
        raise
    except BudgetExceeded as exc:
        spent = deps.runtime.ledger.total()
        deps.record_wrote(record.kind)
        # What the stopped spawn had spent: no spawn event records it, so this one does.
        partial = (exc.spent or Usage()).to_json()
        deps.events.emit(
            "stopped", message=exc.message, usage=spent.to_json(), partial=partial, flag=exc.flag
        )
        state = _state(run, dict((await graph.aget_state(config)).values or {}))
        return RunResult(
            record.run_id,
            record.kind,
            ExitCode.BUDGET,
            state,
            message=exc.render(),
            spent=spent,
            flag=exc.flag,
        )
    except (WiringError, InputError) as exc:
        deps.events.emit("stopped", message=exc.message)
        raise
    snapshot = await graph.aget_state(config)
    state = _state(run, dict(snapshot.values or {}))
    if snapshot.interrupts:
        paused = snapshot.interrupts[0].value
        gate = paused.get("gate", {}) if isinstance(paused, dict) else {}
        deps.record_wrote(record.kind)
        deps.events.emit("paused", gate=gate.get("state"), message=gate.get("message"))
        return RunResult(
            record.run_id,
            record.kind,
            ExitCode.GATE_PAUSED,
            state,
            paused=paused,
            message=gate.get("message") if gate else str(paused),
        )
    await store.prune(saver, record.run_id)
    return _result(run, state)


def _result(run: OpenRun, state: RunState | EditState | None) -> RunResult:
    outcome = state.outcome if state else None
    edit = run.record.edit
    # --fail-on should-fix given to the run, or to the edit it records, turns the warning into 1.
    fail_on: FailOn = (
        "should-fix" if edit is not None and edit.fail_on == "should-fix" else run.record.options.fail_on
    )
    code = exit_code_for(outcome.verdict, fail_on) if outcome else ExitCode.FINDINGS
    return RunResult(run.run_id, run.record.kind, code, state, message=state.summary if state else None)
