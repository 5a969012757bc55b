"""What every event of a run's log is made of (runs.events): its time and writer, and the field
types that are read one way wherever they appear (a cost, a list of findings, usage)."""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from pipeline.formats.findings import Finding

RAW = "raw"
"""The tag of an event (or check) this designloop does not know."""


def _cost(value: object) -> object:
    """US dollars as written: a decimal string (an older log may hold a number, or nothing)."""
    if value is None or value == "":
        return Decimal(0)
    if isinstance(value, float | int):
        return Decimal(str(value))
    return value


Cost = Annotated[Decimal, BeforeValidator(_cost)]
"""Every cost in the log, parsed one way: a ``Decimal``, written as its string."""


def _findings(value: object) -> object:
    """The findings of an older log that still read as today's Finding (the rest are left out)."""
    if not isinstance(value, list):
        return value
    kept = []
    for item in value:
        try:
            kept.append(Finding.model_validate(item))
        except ValidationError:
            continue
    return kept


Findings = Annotated[list[Finding], BeforeValidator(_findings)]


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


class BaseEvent(BaseModel):
    """What every line holds: when, which process, what happened."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    time: str = Field(default_factory=now)
    pid: int = Field(default_factory=os.getpid)


class Spent(BaseModel):
    """Usage as a stop records it (agents.usage.Usage.to_json)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cost_usd: Cost = Decimal(0)
    calls: int = 0
    cache_hits: int = 0


class RevisionRef(BaseModel):
    """One revision a run recorded, as its event names it (formats.revisions.Revision)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    number: int
    sha256: str
    path: str = ""
    """The document's path in the design directory."""


def field_of(value: object, name: str) -> object:
    """A field of an event as data or as a model (what a discriminator looks at)."""
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)
