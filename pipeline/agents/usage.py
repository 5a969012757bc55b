"""Tokens and cost: per call, per spawn, per (round, role) and for the whole run; the budget."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from pydantic import BaseModel
from pydantic_ai.usage import UsageLimits

from pipeline.agents.cache import CallLog
from pipeline.errors import DesignloopError, ExitCode


class Usage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    cost: Decimal = Decimal(0)
    calls: int = 0
    cache_hits: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, log: CallLog) -> None:
        for call in log.calls:
            if call.cache_hit:
                self.cache_hits += 1
                continue
            self.calls += 1
            self.input_tokens += call.input_tokens
            self.output_tokens += call.output_tokens
            self.cost += call.cost or Decimal(0)

    def merge(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cost += other.cost
        self.calls += other.calls
        self.cache_hits += other.cache_hits

    def to_json(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
            "cost_usd": str(self.cost),
            "calls": self.calls,
            "cache_hits": self.cache_hits,
        }


class RoleUsage(BaseModel):
    """What one spawn spent, as the run state records it."""

    round: int
    role: str
    usage: Usage


@dataclass(slots=True)
class Ledger:
    """Tokens and cost per (round, role), and for the whole run."""

    entries: dict[str, Usage] = field(default_factory=lambda: defaultdict(Usage))

    def add(self, round_: int, role: str, usage: Usage) -> None:
        self.entries[f"{round_}:{role}"].merge(usage)

    def total(self) -> Usage:
        out = Usage()
        for usage in self.entries.values():
            out.merge(usage)
        return out


class BudgetExceeded(DesignloopError):
    """The run's token or cost budget is spent; the run stops cleanly and can resume."""

    exit_code = ExitCode.BUDGET
    spent: Usage | None = None
    """What the spawn that was stopped had spent by then (no spawn event records it)."""
    flag = "--budget"
    """The option that raises the limit on ``resume``."""


class RequestLimitReached(BudgetExceeded):
    """One spawn made as many model requests as ``[run] spawn_requests`` allows (a role that keeps
    asking): a stop of its own, not the token budget; resumable with a larger ``--max-requests``."""

    flag = "--max-requests"


SPAWN_REQUESTS = 100
"""The default of ``[run] spawn_requests``."""


@dataclass(frozen=True, slots=True)
class Budget:
    max_tokens: int | None = None
    max_cost: Decimal | None = None
    max_requests: int = SPAWN_REQUESTS
    """The most model requests one spawn may make (``[run] spawn_requests``, ``--max-requests``)."""

    def limits(self, spent: Usage) -> UsageLimits:
        tokens = None if self.max_tokens is None else max(0, self.max_tokens - spent.total_tokens)
        cost = None if self.max_cost is None else max(Decimal(0), self.max_cost - spent.cost)
        return UsageLimits(request_limit=self.max_requests, total_tokens_limit=tokens, cost_limit=cost)

    def stop(self, role: str, reason: str, spent: Usage) -> BudgetExceeded:
        """The stop for a spawn that pydantic-ai's usage limits ended (``reason``)."""
        error: BudgetExceeded
        if "request_limit" in reason:
            more = self.max_requests * 2
            error = RequestLimitReached(
                f"request limit reached: {role} made {self.max_requests} model requests in one spawn "
                "(the per-spawn limit, [run] spawn_requests; not the token budget)",
                hint=f"resume with a larger limit (--max-requests {more}); calls already made are cached",
            )
        else:
            error = BudgetExceeded(
                f"budget reached during {role}: {reason}",
                hint="resume with a larger budget; finished calls are cached",
            )
        error.spent = spent
        return error

    def check(self, spent: Usage) -> None:
        if self.max_tokens is not None and spent.total_tokens >= self.max_tokens:
            raise BudgetExceeded(
                f"token budget reached: {spent.total_tokens} of {self.max_tokens}",
                hint="resume with a larger --budget; finished calls are cached and not paid again",
            )
        if self.max_cost is not None and spent.cost >= self.max_cost:
            raise BudgetExceeded(
                f"cost budget reached: ${spent.cost} of ${self.max_cost}",
                hint="resume with a larger --max-cost",
            )
