"""A run's record, runs/<run-id>/run.json: what it runs on and how, written once at the start.

The record carries the run format. A run written by an earlier format of designloop is
refused with a clear message rather than resumed into a state it cannot read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from pipeline.errors import InputError
from pipeline.formats.edit_request import EditRequest
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
    fail_on: FailOn = "blocker"
    """The least severe finding that makes a finished run exit 1 (SHOULD-FIX REMAINS exits 0 otherwise)."""


class RunRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: int = RUN_FORMAT
    run_id: str
    kind: str
    directory: str
    code_root: str
    created: str
    warmup: bool = True
    options: RunOptions
    models: dict[str, str]
    draft: str
    """The document the run writes, relative to the repository root."""
    edit: EditRequest | None = None
    """An interactive kind's change (section, old/new text, content, instruction ...)."""


class RunPredatesFormat(InputError):
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
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(
            f"the run record could not be read: {exc.strerror}", file=path, hint="fix its permissions"
        ) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(
            f"the run record is damaged: {exc}",
            file=path,
            hint="the run cannot be resumed; start a new run on the same directory",
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
