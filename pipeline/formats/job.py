"""A queue job's payload (docs/scale.md): one run, and the options the enqueue gave it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from pipeline.bounded import load_json
from pipeline.formats.edit_request import FailOn
from pipeline.validation import validated


class JobPayload(BaseModel):
    """What ``designloop enqueue`` puts on the queue for one run, read back by a worker."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str = Field(min_length=1)
    budget_tokens: int | None = None
    """The token budget the run goes on under (None: the one it recorded)."""
    max_cost: str | None = None
    """The cost cap, as the user wrote it (None: the recorded one)."""
    fail_on: FailOn | None = None

    def encode(self) -> bytes:
        return self.model_dump_json().encode()

    @classmethod
    def decode(cls, payload: bytes | None, job_id: object) -> JobPayload:
        """A payload read back from the queue, checked (a job of another version is refused
        by name, never half-read)."""

        where = f"queue job {job_id}"
        hint = "enqueue the run again with this version of designloop"
        data = load_json(payload or b"{}", file=where, what="job's payload", hint=hint)
        return validated(cls, data, where, hint)
