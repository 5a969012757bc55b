"""A budget shared by many runs: ``--budget`` and ``--max-cost`` for a whole batch.

Each run keeps its own budget; the pool adds a second limit on what every run of the batch
spent together. A run stops cleanly (exit 4, resumable) at whichever it reaches first.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from decimal import Decimal

from pydantic_ai.usage import UsageLimits

from pipeline.agents.usage import Budget, BudgetExceeded, Ledger, Usage


@dataclass(slots=True)
class Pool:
    """What the runs of one batch spent, read from their ledgers, and the batch's limits."""

    max_tokens: int | None = None
    max_cost: Decimal | None = None
    _ledgers: list[tuple[Ledger, Usage]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def track(self, ledger: Ledger) -> None:
        """Count what ``ledger`` spends from now on (a resumed run's earlier spending is not
        this batch's)."""
        with self._lock:
            self._ledgers.append((ledger, ledger.total()))

    @property
    def spent(self) -> Usage:
        out = Usage()
        with self._lock:
            tracked = list(self._ledgers)
        for ledger, before in tracked:
            now = ledger.total()
            out.merge(
                Usage(
                    input_tokens=now.input_tokens - before.input_tokens,
                    output_tokens=now.output_tokens - before.output_tokens,
                    cost=now.cost - before.cost,
                    calls=now.calls - before.calls,
                    cache_hits=now.cache_hits - before.cache_hits,
                )
            )
        return out

    def check(self) -> None:
        spent = self.spent
        if self.max_tokens is not None and spent.total_tokens >= self.max_tokens:
            raise BudgetExceeded(
                f"the batch's token budget is reached: {spent.total_tokens} of {self.max_tokens}",
                hint="run the batch again with a larger --batch-budget; unfinished runs resume and "
                "finished calls are answered from the cache",
            )
        if self.max_cost is not None and spent.cost >= self.max_cost:
            raise BudgetExceeded(
                f"the batch's cost budget is reached: ${spent.cost} of ${self.max_cost}",
                hint="run the batch again with a larger --batch-max-cost",
            )


@dataclass(frozen=True, slots=True)
class PooledBudget(Budget):
    """A run's own budget, and the batch's pool beside it."""

    pool: Pool | None = None

    def limits(self, spent: Usage) -> UsageLimits:
        own = Budget.limits(self, spent)
        pool = self.pool
        if pool is None:
            return own
        tokens = own.total_tokens_limit
        pooled = pool.spent
        if pool.max_tokens is not None:
            left = max(0, pool.max_tokens - pooled.total_tokens)
            tokens = left if tokens is None else min(tokens, left)
        cost = own.cost_limit
        if pool.max_cost is not None:
            remaining = max(Decimal(0), pool.max_cost - pooled.cost)
            cost = remaining if cost is None else min(Decimal(cost), remaining)
        return UsageLimits(request_limit=own.request_limit, total_tokens_limit=tokens, cost_limit=cost)

    def check(self, spent: Usage) -> None:
        Budget.check(self, spent)
        if self.pool is not None:
            self.pool.check()
