"""Starting a run (validate the inputs, write run.json and the before-snapshot) and loading
one to resume it. The design directory is opened once per process and handed on."""

from __future__ import annotations

import contextlib
import datetime as dt
import secrets
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from pipeline.agents.session import Session, SessionOptions, check_models, open_session
from pipeline.formats.design_dir import DesignDir, open_design_dir
from pipeline.formats.kinds import PHASE1
from pipeline.formats.space import space_error
from pipeline.formats.textio import atomic_write_bytes
from pipeline.runs.events import EventLog
from pipeline.runs.preflight import check_design_dir, check_run_space, check_runs_dir
from pipeline.runs.records import (
    FailOn,
    RunOptions,
    RunRecord,
    locate,
    portable,
    read_record,
    write_record,
)
from pipeline.settings import make_runs_dir


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


BEFORE = "before.md"
"""The run's draft as it was before the run (absent: there was none)."""
BEFORE_COMPANION = "before-companion.md"
"""The companion the run may rewrite, as it was before the run."""


def stored_url(url: str | None) -> str | None:
    """The base URL as the run record keeps it: one that carries credentials is not kept
    (a resumed run then takes the server from OPENAI_BASE_URL)."""
    if url is None:
        return None
    parts = urlsplit(url)
    return None if parts.username or parts.password else url


def new_run_id(kind: str) -> str:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{'p1' if kind == PHASE1 else 'p4'}-{secrets.token_hex(3)}"


@dataclass(slots=True)
class RunPlan:
    """A run checked and ready to start: nothing of it is on disk yet."""

    run_id: str
    kind: str
    design: DesignDir
    target: Path
    session: Session
    options: SessionOptions
    warmup: bool
    fail_on: FailOn = "blocker"
    inputs: str | None = None
    """The fingerprint of the inputs, when the caller took one (a batch does)."""
    design_inputs: str | None = None
    """The fingerprint of the inputs but the code (a batch takes it too)."""
    overwrite: list[str] = field(default_factory=list)
    """Why the run overwrites later work (it was started with --force anyway)."""


def plan_run(
    kind: str,
    directory: Path,
    options: SessionOptions,
    warmup: bool,
    code_root: Path | None = None,
    fail_on: FailOn = "blocker",
) -> RunPlan:
    """Check everything a run will read and write; write nothing."""
    design = open_design_dir(directory, code_root)
    session = open_session(design.repo_root, options)
    check_models(session.runtime)
    check_design_dir(design, kind)
    check_runs_dir(session.runs_dir)
    check_run_space(design, session.runs_dir)
    target = design.design if kind == PHASE1 else design.final
    return RunPlan(new_run_id(kind), kind, design, target, session, options, warmup, fail_on)


def start_run(plan: RunPlan) -> OpenRun:
    """Write run.json, the before-snapshot and the first event. The run directory appears whole
    (it is written under a temporary name and renamed), so a kill never leaves half a run."""
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
        repo_root=str(design.repo_root),
        inputs=plan.inputs,
        design_inputs=plan.design_inputs,
        overwrote=list(plan.overwrite),
    )
    run_dir = session.runs_dir / plan.run_id
    # What the run may overwrite, byte for byte: the draft, and the companion it may rewrite.
    companion = design.mechanics if plan.kind == PHASE1 else design.final_mechanics

    def fill(partial: Path) -> None:
        for source, name in ((plan.target, BEFORE), (companion, BEFORE_COMPANION)):
            if source.is_file():
                atomic_write_bytes(partial / name, source.read_bytes())
                if plan.overwrite:
                    record.kept[design.rel(source)] = design.rel(run_dir / name)
        write_record(partial, record)
        EventLog(partial).emit(
            "run_start", run_kind=plan.kind, directory=record.directory, models=session.runtime.model_specs
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


def prepare_run(
    kind: str,
    directory: Path,
    options: SessionOptions,
    warmup: bool,
    code_root: Path | None = None,
    fail_on: FailOn = "blocker",
) -> OpenRun:
    """Check the inputs, then write run.json and the before-snapshot."""
    return start_run(plan_run(kind, directory, options, warmup, code_root, fail_on))


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
    session = open_session(design.repo_root, options)
    check_models(session.runtime)
    check_design_dir(design, record.kind)
    check_runs_dir(session.runs_dir)
    check_run_space(design, session.runs_dir)
    if max_requests is not None:  # kept, so a later resume goes on with the raised limit
        write_record(run_dir, record)
    return OpenRun(record, run_dir, design, session)
