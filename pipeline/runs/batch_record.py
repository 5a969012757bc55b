"""A batch's record as ``report --batch`` reads it back (runs/batches/<batch-id>.json, or the
PostgreSQL store's ``batches`` table): what the batch did with each directory. The record is
written by fleet.rows.Batch.to_json; a field it lacks (an older record) has its default."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from pipeline.errors import InputError
from pipeline.runs.event_fields import Cost


class RowRecord(BaseModel):
    """One directory's row: what was done, how its run ended, what it spent."""

    model_config = ConfigDict(extra="ignore")

    directory: str = "?"
    action: str = "?"
    run_id: str | None = None
    outcome: str | None = None
    exit_code: int | None = None
    rounds: int = 0
    spawns: int = 0
    tokens: int = 0
    cost_usd: Cost = Decimal(0)
    cache_hits: int = 0
    message: str | None = None


class BatchRecord(BaseModel):
    model_config = ConfigDict(extra="ignore")

    batch_id: str
    kind: str = "?"
    directories: list[RowRecord]


def parse_batch(data: Any, where: str) -> BatchRecord:
    """The batch record in ``data``; a damaged one is named by ``where`` (its file or store)."""
    try:
        return BatchRecord.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"]) or "?"
        raise InputError(
            f"the batch record is damaged: {field}: {error['msg']}", file=where, hint="run the batch again"
        ) from None
