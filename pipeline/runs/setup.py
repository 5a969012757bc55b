"""Starting a run (validate the inputs, write run.json and the before-snapshot) and loading
one to resume it. The design directory is opened once per process and handed on."""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from pipeline.agents.session import Session, SessionOptions, open_session
from pipeline.errors import InputError
from pipeline.formats.design_dir import DesignDir, open_design_dir
from pipeline.formats.kinds import PHASE1
from pipeline.formats.research_log import load_research_log
from pipeline.formats.textio import atomic_write
from pipeline.runs.events import EventLog
from pipeline.runs.records import RECORD, FailOn, RunOptions, RunRecord, read_record, write_record


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


def new_run_id(kind: str) -> str:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{'p1' if kind == PHASE1 else 'p4'}-{secrets.token_hex(3)}"


def prepare_run(
    kind: str,
    directory: Path,
    options: SessionOptions,
    warmup: bool,
    code_root: Path | None = None,
    fail_on: FailOn = "blocker",
) -> OpenRun:
    """Validate the inputs, write run.json and the before-snapshot."""
    design = open_design_dir(directory, code_root)
    if kind == PHASE1:
        load_research_log(design.research_log)  # refuse an unreadable or malformed log up front
        target = design.design
    else:
        if not design.design.is_file():
            raise InputError(
                "phase4-creation needs the frozen phase-1 design",
                file=design.design,
                hint="run designloop create first, or restore _workflow/design.md",
            )
        target = design.final
    session = open_session(design.repo_root, options)  # after validation: bad input leaves nothing behind
    run_id = new_run_id(kind)
    run_dir = session.runs_dir / run_id
    run_dir.mkdir(parents=True)
    if target.is_file():
        atomic_write(run_dir / "before.md", target.read_text(encoding="utf-8"))
    record = RunRecord(
        run_id=run_id,
        kind=kind,
        directory=str(design.root),
        code_root=str(design.code_root),
        created=dt.datetime.now(dt.UTC).isoformat(),
        warmup=warmup,
        options=RunOptions(
            model=options.model,
            role_models=list(options.role_models),
            base_url=stored_url(options.base_url),
            budget_tokens=options.budget_tokens,
            max_cost=options.max_cost,
            runs_dir=str(session.runs_dir),
            fail_on=fail_on,
        ),
        models=session.runtime.model_specs,
        draft=design.rel(target),
    )
    write_record(run_dir, record)
    EventLog(run_dir).emit(
        "run_start", run_kind=kind, directory=str(design.root), models=session.runtime.model_specs
    )
    return OpenRun(record, run_dir, design, session)


def load_run(
    run_dir: Path,
    budget_tokens: int | None = None,
    max_cost: str | None = None,
    fail_on: FailOn | None = None,
) -> OpenRun:
    """Open a recorded run to resume it; a new budget (or --fail-on) replaces the recorded one."""
    record = read_record(run_dir)
    if fail_on is not None:
        record = record.model_copy(update={"options": record.options.model_copy(update={"fail_on": fail_on})})
    opts = record.options
    options = SessionOptions(
        opts.model,
        tuple(opts.role_models),
        opts.base_url,
        budget_tokens if budget_tokens is not None else opts.budget_tokens,
        max_cost if max_cost is not None else opts.max_cost,
        Path(opts.runs_dir),
    )
    design = open_design_dir(Path(record.directory), Path(record.code_root))
    return OpenRun(record, run_dir, design, open_session(design.repo_root, options))


def run_dir_for(runs_dir: Path, run_id: str) -> Path:
    path = runs_dir / run_id
    if not (path / RECORD).is_file():
        raise InputError(f"no run named {run_id!r}", file=runs_dir, hint="designloop runs lists the runs")
    return path
