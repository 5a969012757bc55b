"""Starting an interactive edit: validate the whole edit before anything is written, settle a
stale quote, snapshot the files it may touch, write run.json."""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Callable
from pathlib import Path

from pipeline.agents.session import SessionOptions, check_models, open_session
from pipeline.errors import InputError
from pipeline.formats.design_dir import DesignDir, open_design_dir
from pipeline.formats.edit_ops import plan_edit, plan_files
from pipeline.formats.edit_plan import EditPlan, Reader, read_live
from pipeline.formats.edit_request import Choice, EditRequest
from pipeline.formats.review_log import parse_entries
from pipeline.formats.staleness import StaleQuestion, detect, resolve
from pipeline.formats.stamp import stamp_line
from pipeline.formats.textio import atomic_write_bytes
from pipeline.runs.events import EventLog, RunStarted
from pipeline.runs.preflight import check_design_dir, check_run_space, check_runs_dir
from pipeline.runs.records import RunOptions, RunRecord, portable, write_record
from pipeline.runs.setup import OpenRun, appear_whole, stored_url

BEFORE = "before"
PLACEHOLDER_STAMP = stamp_line("0" * 40)
Chooser = Callable[[StaleQuestion], Choice]


def new_edit_id(kind: str) -> str:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{kind}-{secrets.token_hex(3)}"


def touched_files(d: DesignDir) -> list[Path]:
    """Every file an interactive edit may write."""
    return [d.design, d.mechanics, *plan_files(d)]


def snapshot(d: DesignDir, run_dir: Path) -> None:
    for path in touched_files(d):
        if path.is_file():
            atomic_write_bytes(run_dir / BEFORE / path.relative_to(d.root), path.read_bytes())


def snapshot_reader(d: DesignDir, run_dir: Path) -> Reader:
    """Reads each file as it was when the edit started (absent then: None)."""

    def read(path: Path) -> bytes | None:
        try:
            copy = run_dir / BEFORE / path.relative_to(d.root)
        except ValueError:
            return read_live(path)
        try:
            return copy.read_bytes()
        except FileNotFoundError:
            return None

    return read


def settle(req: EditRequest, d: DesignDir, choose: Chooser | None) -> EditRequest:
    """Ask the staleness question when the edit's quote is stale (formats.staleness)."""
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


def prepare_edit(
    req: EditRequest,
    directory: Path,
    options: SessionOptions,
    choose: Chooser | None = None,
    run_id: str | None = None,
) -> OpenRun:
    """Validate the edit (a malformed one exits 2 and changes nothing), then start its run.
    The run directory appears whole: it is written under a temporary name and renamed."""
    design = open_design_dir(directory)
    req.validate_form()
    parse_entries(design.mutations)  # a malformed review log is refused before anything else
    req = settle(req, design, choose)
    plan_edit(req.model_copy(), design, EditPlan(read_live), PLACEHOLDER_STAMP)
    session = open_session(design.repo_root, options)
    check_models(session.runtime)
    check_design_dir(design, req.kind)
    check_runs_dir(session.runs_dir)
    check_run_space(design, session.runs_dir)
    run_id = run_id or new_edit_id(req.kind)
    run_dir = session.runs_dir / run_id
    primary = design.mechanics if req.kind == "mechanics-edit" else design.design
    record = RunRecord(
        run_id=run_id,
        kind=req.kind,
        directory=portable(design.root, design.repo_root),
        code_root=portable(design.code_root, design.repo_root),
        created=dt.datetime.now(dt.UTC).isoformat(),
        warmup=False,
        options=RunOptions(
            model=options.model,
            role_models=list(options.role_models),
            base_url=stored_url(options.base_url),
            budget_tokens=options.budget_tokens,
            max_cost=options.max_cost,
            runs_dir=portable(session.runs_dir, design.repo_root),
            max_requests=options.max_requests,
        ),
        models=session.runtime.model_specs,
        draft=design.rel(primary),
        edit=req,
        repo_root=str(design.repo_root),
    )

    def fill(partial: Path) -> None:
        snapshot(design, partial)
        write_record(partial, record)
        EventLog(partial).emit(
            RunStarted(run_kind=req.kind, directory=record.directory, models=session.runtime.model_specs)
        )

    appear_whole(run_dir, fill)
    return OpenRun(record, run_dir, design, session)
