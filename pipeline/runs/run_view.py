"""A run as its events tell it: what ``status``, ``runs``, a batch's rows and the report read of a
run (runs.replay makes one from a log; runs.views reads one, kept beside the log or replayed)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from decimal import Decimal
from typing import Any, Literal

from pipeline.formats.contracts import declined_words
from pipeline.formats.findings import Finding
from pipeline.formats.kinds import Kind, Role, Status
from pipeline.runs.event_fields import RevisionRef


@dataclass(slots=True)
class SpawnView:
    round: int
    role: Role
    slice: tuple[int, int] | None
    status: Status | Literal["skipped"]
    cache_hits: int
    calls: int
    tokens: int
    findings: int
    skipped: bool = False


@dataclass(slots=True)
class RunView:
    """A run as its events tell it."""

    run_id: str
    kind: Kind | None = None
    """None until the run's first event says it (a log cut short before it)."""
    directory: str = "?"
    started: str = ""
    state: str = "running"
    round: int = 0
    outcome: str | None = None
    review_log_entry: int | None = None
    spawns: dict[str, SpawnView] = field(default_factory=dict)
    checks: list[dict[str, Any]] = field(default_factory=list)
    tokens: int = 0
    cost: Decimal = Decimal(0)
    unpriced: list[str] = field(default_factory=list)
    """Models that made requests without a known price (their cost is not in ``cost``)."""
    cache_hits: int = 0
    message: str | None = None
    outputs: str | None = None
    """The digest of what a finished batch run left on disk (runs.fingerprint)."""
    wrote: dict[str, str | None] = field(default_factory=dict)
    """Each document the run wrote, by its repository-relative path, with the SHA-256 it had
    when the run last recorded it (at its finish, pause, stop or discard)."""
    findings: list[Finding] = field(default_factory=list)
    """What remained at the finish."""
    declined: list[str] = field(default_factory=list)
    """The parts of the user's instruction the inline editor declined."""
    revisions: dict[str, RevisionRef] = field(default_factory=dict)
    """The revision the run recorded of each document (number, sha256, path); none in runs
    recorded before revisions were."""

    def shown_outcome(self) -> str:
        """The outcome as a line shows it: with how many parts of the instruction were declined."""
        if not self.outcome or not self.declined:
            return self.outcome or "-"
        return f"{self.outcome}, {declined_words(len(self.declined))}"

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "kind": self.kind or "?",
            "directory": self.directory,
            "started": self.started,
            "state": self.state,
            "round": self.round,
            "outcome": self.outcome,
            "declined": self.declined,
            "review_log_entry": self.review_log_entry,
            "tokens": self.tokens,
            "cost_usd": str(self.cost),
            "unpriced": self.unpriced,
            "cache_hits": self.cache_hits,
            "message": self.message,
            "revisions": {k: v.model_dump() for k, v in self.revisions.items()},
            "spawns": [asdict(s) for s in self.spawns.values()],
            "checks": self.checks,
        }
