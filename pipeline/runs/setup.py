"""Starting a run (every input checked first, then run.json, the before-snapshot and the first
event, all at once) and loading one to resume it. One start for every kind: ``plan_run`` checks
a creation run, ``plan_edit`` an interactive edit (validated whole, its stale quote settled),
and ``start_run`` starts either. The design directory is opened once per process and handed on."""

from __future__ import annotations

import contextlib
import datetime as dt
import secrets
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from pipeline.agents.session import Session, SessionOptions, Sessions
from pipeline.errors import InputError
from pipeline.formats.design_dir import DesignDir, open_design_dir
from pipeline.formats.edit_ops import plan_edit as plan_operation
from pipeline.formats.edit_plan import EditPlan, read_live
from pipeline.formats.edit_request import Choice, EditRequest
from pipeline.formats.kinds import CREATION_KINDS, MECHANICS_EDIT, PHASE1, PHASE4, CreationKind, Kind
from pipeline.formats.review_log import parse_entries
from pipeline.formats.space import space_error
from pipeline.formats.stamp import stamp_line
from pipeline.formats.sync_reconcile import StaleQuestion, detect, resolve
from pipeline.runs.event_log import EventLog
from pipeline.runs.events import RunStarted, Stopped
from pipeline.runs.overwrite import Overwrite, since_started
from pipeline.runs.preflight import check_design_dir, check_run_space, check_runs_dir
from pipeline.runs.records import (
    FailOn,
    RunOptions,
    RunRecord,
    StartedBy,
    locate,
    portable,
    read_record,
    write_record,
)
from pipeline.runs.snapshot import take_snapshot
from pipeline.runs.store import RunStore, emit
from pipeline.settings import make_runs_dir

PLACEHOLDER_STAMP = stamp_line("0" * 40)
Chooser = Callable[[StaleQuestion], Choice]


@dataclass(slots=True)
class OpenRun:
    """A run's record with the design directory and the session it runs in."""

    record: RunRecord
    run_dir: Path
    design: DesignDir
    session: Session

    @property
    def run_id(self) -> str:
        return self.record.run_id


def stored_url(url: str | None) -> str | None:
    """The base URL as the run record keeps it: one that carries credentials is not kept
    (a resumed run then takes the server from OPENAI_BASE_URL)."""
    if url is None:
        return None
    parts = urlsplit(url)
    return None if parts.username or parts.password else url


def new_run_id(kind: Kind) -> str:
    """``<UTC time>-<p1, p4 or the edit's kind>-<random>``: sorted by name, runs sort by start."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    label = "p1" if kind == PHASE1 else "p4" if kind == PHASE4 else kind
    return f"{stamp}-{label}-{secrets.token_hex(3)}"


@dataclass(slots=True)
class RunPlan:
    """A run checked and ready to start: nothing of it is on disk yet."""

    run_id: str
    kind: Kind
    design: DesignDir
    target: Path
    """The document the run writes (an edit: design.md, or the companion for mechanics-edit)."""
    session: Session
    options: SessionOptions
    warmup: bool
    fail_on: FailOn = "blocker"
    edit: EditRequest | None = None
    """An interactive kind's change, validated whole."""
    inputs: str | None = None
    """The fingerprint of the inputs, when the caller took one (a batch does)."""
    design_inputs: str | None = None
    """The fingerprint of the inputs but the code (a batch takes it too)."""
    overwrite: list[str] = field(default_factory=list)
    """Why the run overwrites later work (it was started with --force anyway)."""
    started_by: StartedBy = "cli"


def _session(design: DesignDir, kind: Kind, options: SessionOptions, sessions: Sessions | None) -> Session:
    """The run's session (over the set-up of its repository a batch shares: ``sessions``), with
    everything it will read and write checked. The runs directory's stores are checked once per
    process, until the check passes: reading their headers opens their files, and closing a file
    drops every SQLite lock this process holds on it, so they are not opened that way again once
    a run of this process may have them open (a batch plans beside its runs, and its worker
    processes write the same stores)."""
    sessions = sessions or Sessions()
    session = sessions.open(design.repo_root, options)
    check_design_dir(design, kind)
    sessions.check_once(session.runs_dir, check_runs_dir)
    check_run_space(design, session.runs_dir)
    return session


def plan_run(
    kind: CreationKind,
    directory: Path,
    options: SessionOptions,
    warmup: bool,
    code_root: Path | None = None,
    fail_on: FailOn = "blocker",
    sessions: Sessions | None = None,
) -> RunPlan:
    """Check everything a creation run will read and write; write nothing."""
    design = open_design_dir(directory, code_root)
    session = _session(design, kind, options, sessions)
    target = design.design if kind == PHASE1 else design.final
    return RunPlan(new_run_id(kind), kind, design, target, session, options, warmup, fail_on)


def settle(req: EditRequest, d: DesignDir, choose: Chooser | None) -> EditRequest:
    """Ask the staleness question when the edit's quote is stale (formats.sync_reconcile)."""
    question = detect(req, d, read_live)
    if question is None:
        return req
    if choose is None:
        raise InputError(
            question.text(),
            file=d.mechanics,
            hint="answer with --stale-choice a|b|c (run on a terminal to be asked)",
        )
    return resolve(req, question, choose(question))


def plan_edit(
    req: EditRequest,
    directory: Path,
    options: SessionOptions,
    choose: Chooser | None = None,
    run_id: str | None = None,
) -> RunPlan:
    """Validate the edit whole (a malformed one exits 2 and changes nothing) and check
    everything its run will read and write; write nothing."""
    design = open_design_dir(directory)
    req.validate_form()
    parse_entries(design.mutations)  # a malformed review log is refused before anything else
    req = settle(req, design, choose)
    plan_operation(req.model_copy(), design, EditPlan(read_live), PLACEHOLDER_STAMP)
    session = _session(design, req.kind, options, None)
    target = design.mechanics if req.kind == MECHANICS_EDIT else design.design
    return RunPlan(
        run_id or new_run_id(req.kind), req.kind, design, target, session, options, False, req.fail_on, req
    )


def start_run(plan: RunPlan) -> OpenRun:
    """Write run.json, the before-snapshot (runs.snapshot) and the first event. The run
    directory appears whole (it is written under a temporary name and renamed), so a kill never
    leaves half a run."""
    design, session, options = plan.design, plan.session, plan.options
    record = RunRecord(
        run_id=plan.run_id,
        kind=plan.kind,
        directory=portable(design.root, design.repo_root),
        code_root=portable(design.code_root, design.repo_root),
        created=dt.datetime.now(dt.UTC).isoformat(),
        warmup=plan.warmup,
        options=RunOptions(
            model=options.model,
            role_models=list(options.role_models),
            base_url=stored_url(options.base_url),
            budget_tokens=options.budget_tokens,
            max_cost=options.max_cost,
            runs_dir=portable(session.runs_dir, design.repo_root),
            fail_on=plan.fail_on,
            max_requests=options.max_requests,
        ),
        models=session.runtime.model_specs,
        draft=design.rel(plan.target),
        edit=plan.edit,
        repo_root=str(design.repo_root),
        inputs=plan.inputs,
        design_inputs=plan.design_inputs,
        overwrote=list(plan.overwrite),
        started_by=plan.started_by,
    )
    run_dir = session.runs_dir / plan.run_id

    def fill(partial: Path) -> None:
        kept = take_snapshot(design, partial, plan.kind)
        if plan.overwrite and plan.kind in CREATION_KINDS:  # what it overwrites, byte for byte
            for source, copy in kept.items():
                record.kept[design.rel(source)] = design.rel(run_dir / copy.relative_to(partial))
        write_record(partial, record)
        EventLog(partial).emit(
            RunStarted(run_kind=plan.kind, directory=record.directory, models=session.runtime.model_specs)
        )

    appear_whole(run_dir, fill)
    return OpenRun(record, run_dir, design, session)


def appear_whole(run_dir: Path, fill: Callable[[Path], None]) -> None:
    """Make ``run_dir`` under a temporary name, ``fill`` it, and rename it into place: a kill
    never leaves half a run, and a failure (a full disk) leaves nothing at all."""
    partial = run_dir.parent / f".{run_dir.name}.partial"
    made = not run_dir.parent.exists()
    try:
        make_runs_dir(run_dir.parent)
        partial.mkdir()
        fill(partial)
        partial.rename(run_dir)
    except BaseException as exc:
        shutil.rmtree(partial, ignore_errors=True)
        if made:  # the runs directory made for it goes too, its .gitignore with it
            with contextlib.suppress(OSError):
                (run_dir.parent / ".gitignore").unlink(missing_ok=True)
                run_dir.parent.rmdir()
        full = space_error(exc, run_dir.parent) if isinstance(exc, Exception) else None
        if full is not None:
            raise full from None
        raise


def resume_options(
    record: RunRecord,
    run_dir: Path,
    budget_tokens: int | None,
    max_cost: str | None,
    max_requests: int | None = None,
) -> SessionOptions:
    """The recorded run's session options, a new budget, cost cap or request limit replacing the
    recorded one; its runs directory is the one it was found in."""
    opts = record.options
    return SessionOptions(
        opts.model,
        tuple(opts.role_models),
        opts.base_url,
        budget_tokens if budget_tokens is not None else opts.budget_tokens,
        max_cost if max_cost is not None else opts.max_cost,
        run_dir.resolve().parent,
        max_requests=max_requests if max_requests is not None else opts.max_requests,
    )


def load_run(
    run_dir: Path,
    budget_tokens: int | None = None,
    max_cost: str | None = None,
    fail_on: FailOn | None = None,
    repo: Path | None = None,
    max_requests: int | None = None,
    sessions: Sessions | None = None,
) -> OpenRun:
    """Open a recorded run to resume it, checked like a new one; a new budget (or --fail-on)
    replaces the recorded one. The run's paths are found in this checkout (records.locate), so
    a run resumes from a copy of the repository at another path; its runs directory is the
    one it was found in."""
    record = read_record(run_dir)
    if fail_on is not None:
        record = record.model_copy(update={"options": record.options.model_copy(update={"fail_on": fail_on})})
    if max_requests is not None:
        record = record.model_copy(
            update={"options": record.options.model_copy(update={"max_requests": max_requests})}
        )
    options = resume_options(record, run_dir, budget_tokens, max_cost)
    _, directory, code_root = locate(record, run_dir, repo)
    design = open_design_dir(directory, code_root)
    session = _session(design, record.kind, options, sessions)
    if max_requests is not None:  # kept, so a later resume goes on with the raised limit
        write_record(run_dir, record)
    return OpenRun(record, run_dir, design, session)


def refuse_later(run: OpenRun, store: RunStore, command: str) -> None:
    """Before a resumed run goes on: refuse (runs.overwrite.LaterWork, naming the newer runs and
    edits) when work was recorded after it started that it would overwrite. Every way a run
    continues checks this: ``resume``, a batch, a worker taking a run over. ``command`` is what
    goes on anyway (``--force``: :func:`anew_over`)."""
    later = since_started(run.design, run.record, store)
    if later:
        raise later.refusal("resume", run.design.root, command)


def anew_over(run: OpenRun, store: RunStore, later: Overwrite) -> OpenRun:
    """``--force`` where later work stands in the way of a run: the run cannot go on over bytes
    it did not write (its reviews read others), so a new run of its kind (an edit: its change)
    starts over the later work, keeping those documents under its directory as ``create
    --force`` does; the old run is stopped, naming the new one. What its roles already asked is
    answered from the request cache."""
    record = run.record
    options = resume_options(record, run.run_dir, None, None)
    if record.kind in CREATION_KINDS:
        kind: CreationKind = record.kind  # type: ignore[assignment]
        plan = plan_run(
            kind, run.design.root, options, record.warmup, run.design.code_root, record.options.fail_on
        )
    elif record.edit is not None:
        plan = plan_edit(record.edit.model_copy(), run.design.root, options)
    else:
        raise later.refusal("resume", run.design.root)
    plan.overwrite, plan.started_by = list(later.reasons), record.started_by
    new = start_run(plan)
    store.register(new.run_dir)
    emit(store, run.run_dir, Stopped(message=f"started anew over later work as run {new.run_id}"))
    return new
