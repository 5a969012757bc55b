"""The token bucket: capacity, refill rate and the take-or-refuse decision."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class BucketState:
    tokens: float
    updated_at: float


@dataclass(frozen=True)
class Decision:
    allowed: bool
    remaining: float
    retry_after: float


class TokenBucket:
    """A bucket of ``capacity`` tokens refilled at ``rate`` tokens per second."""

    def __init__(self, capacity: int, rate: float) -> None:
        if capacity < 1 or rate <= 0:
            raise ValueError("capacity must be >= 1 and rate > 0")
        self.capacity = capacity
        self.rate = rate

    def refill(self, state: BucketState, now: float) -> BucketState:
        elapsed = max(0.0, now - state.updated_at)
        tokens = min(self.capacity, state.tokens + elapsed * self.rate)
        return BucketState(tokens=tokens, updated_at=now)

    def take(self, state: BucketState | None, now: float, cost: int = 1) -> tuple[Decision, BucketState]:
        current = self.refill(state or BucketState(self.capacity, now), now)
        if current.tokens >= cost:
            after = BucketState(current.tokens - cost, now)
            return Decision(True, after.tokens, 0.0), after
        missing = cost - current.tokens
        retry_after = math.ceil(missing / self.rate * 1000) / 1000
        return Decision(False, current.tokens, retry_after), current
