"""A run's record, runs/<run-id>/run.json: what it runs on and how, written once at the start.

The record carries the run format. A run written by an earlier format of designloop is
refused with a clear message rather than resumed into a state it cannot read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from pipeline.bounded import Unbounded, load_json
from pipeline.errors import InputError
from pipeline.formats.edit_request import EditRequest
from pipeline.formats.kinds import Kind
from pipeline.formats.textio import atomic_write

RUN_FORMAT = 2
RECORD = "run.json"


FailOn = Literal["blocker", "should-fix"]


class RunOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    role_models: list[str] = []
    base_url: str | None = None
    budget_tokens: int | None = None
    max_cost: str | None = None
    runs_dir: str
    """Relative to the repository root when inside it (portable), else absolute."""
    fail_on: FailOn = "blocker"
    """The least severe finding that makes a finished run exit 1 (SHOULD-FIX REMAINS exits 0 otherwise)."""
    max_requests: int | None = None
    """``--max-requests``: the per-spawn request limit (None: ``[run] spawn_requests``)."""


StartedBy = Literal["cli", "batch", "worker", "studio"]


class RunRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: int = RUN_FORMAT
    run_id: str
    kind: Kind
    directory: str
    """The design directory, relative to the repository root (absolute in records written before
    paths were portable: such a run resumes only where it started)."""
    code_root: str
    """The code root, relative to the repository root (absolute in older records)."""
    created: str
    warmup: bool = True
    options: RunOptions
    models: dict[str, str]
    draft: str
    """The document the run writes, relative to the repository root."""
    edit: EditRequest | None = None
    """An interactive kind's change (section, old/new text, content, instruction ...)."""
    repo_root: str = ""
    """Where the repository was when the run started: only a last resort when the run is
    resumed from a runs directory outside the repository (see ``portable``)."""
    inputs: str | None = None
    """The fingerprint of the run's inputs when it started (runs.fingerprint)."""
    design_inputs: str | None = None
    """The same without the code (``batch --stale-only`` goes by it and the claims ledgers)."""
    overwrote: list[str] = []
    """Why this run (started with --force) overwrote later work (runs.overwrite)."""
    kept: dict[str, str] = {}
    """Each document the run was about to overwrite, and where its bytes are kept (both
    relative to the repository root)."""
    started_by: StartedBy = "cli"
    """Who started the run: a person's command (``cli``), a ``batch``, a queue ``worker``
    (``enqueue`` hands runs to workers), LangGraph ``studio``."""


def portable(path: Path, repo_root: Path) -> str:
    """``path`` as records store it: relative to the repository root when inside it."""
    path = path.resolve()
    return path.relative_to(repo_root).as_posix() if path.is_relative_to(repo_root) else str(path)


def repo_candidates(record: RunRecord, run_dir: Path, repo: Path | None) -> list[Path]:
    """Where the run's repository may be now, most telling first: the one named by the caller,
    the one the runs directory sits in (its recorded relative path says how deep), the current
    directory's, and the one the run started in."""
    from pipeline.settings import repo_root

    found: list[Path] = [repo] if repo is not None else []
    stored = Path(record.options.runs_dir)
    if not stored.is_absolute():
        base = run_dir.resolve().parent
        parts = len(stored.parts)
        if parts <= len(base.parents) and base.parts[-parts:] == stored.parts:
            found.append(base.parents[parts - 1])
    found.append(repo_root())
    if record.repo_root:
        found.append(Path(record.repo_root))
    return found


def locate(record: RunRecord, run_dir: Path, repo: Path | None = None) -> tuple[Path, Path, Path]:
    """The repository root, design directory and code root of a recorded run in this checkout:
    the first candidate repository that holds the design directory."""
    for root in repo_candidates(record, run_dir, repo):
        directory = root / record.directory
        if (directory / "_workflow").is_dir():
            return root, directory, root / record.code_root
    raise InputError(
        f"the design directory {record.directory} of run {record.run_id} is not in this checkout",
        file=run_dir / RECORD,
        hint="run the command from a checkout of the repository the run belongs to",
    )


class NotResumable(InputError):
    """A recorded run that cannot go on (its checkpoint is gone, unreadable or of an earlier
    format): a batch or a worker starts a new run on its directory instead."""


class RunPredatesFormat(NotResumable):
    """The run was written by an earlier designloop whose run state this one cannot read."""


def predates(run_id: str, found: object) -> RunPredatesFormat:
    return RunPredatesFormat(
        f"run {run_id} predates the current run format (it has format {found}, this designloop "
        f"reads format {RUN_FORMAT}); it cannot be resumed",
        hint="start a new run on the same directory (designloop create or final); "
        "finished model calls are answered from the cache",
    )


def write_record(run_dir: Path, record: RunRecord) -> None:
    atomic_write(run_dir / RECORD, record.model_dump_json(indent=2) + "\n")


def read_record(run_dir: Path) -> RunRecord:
    path = run_dir / RECORD
    if not path.is_file():
        raise InputError("no such run", file=run_dir, hint="designloop runs lists the runs")
    hint = "the run cannot be resumed; start a new run on the same directory"
    try:
        raw = load_json(path.read_bytes(), file=path, what="run record", hint=hint)
    except OSError as exc:
        raise InputError(
            f"the run record could not be read: {exc.strerror}", file=path, hint="fix its permissions"
        ) from None
    except Unbounded as exc:
        raise InputError(
            f"the run record is damaged: it {exc.problem}", file=path, line=exc.line, hint=hint
        ) from None
    if not isinstance(raw, dict):
        raise InputError(
            "the run record is not a JSON object",
            file=path,
            hint="the run cannot be resumed; start a new run on the same directory",
        )
    if raw.get("format") != RUN_FORMAT:
        raise predates(str(raw.get("run_id", run_dir.name)), raw.get("format", 1))
    try:
        return RunRecord.model_validate(raw)
    except ValidationError as exc:
        raise InputError(
            f"the run record is damaged: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}",
            file=path,
            hint="the run cannot be resumed; start a new run on the same directory",
        ) from None
