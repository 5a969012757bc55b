"""Where bucket state lives: Redis in production, memory in tests and as the fallback."""

from __future__ import annotations

import logging
from typing import Protocol

from .bucket import BucketState, Decision, TokenBucket

log = logging.getLogger(__name__)

# KEYS[1] = bucket key; ARGV = capacity, rate, now, cost. Refill and take in one step.
TAKE_SCRIPT = """
local state = redis.call('HMGET', KEYS[1], 'tokens', 'updated_at')
local capacity, rate, now, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local tokens = tonumber(state[1]) or capacity
local updated = tonumber(state[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - updated) * rate)
local allowed = 0
if tokens >= cost then tokens = tokens - cost; allowed = 1 end
redis.call('HSET', KEYS[1], 'tokens', tokens, 'updated_at', now)
redis.call('EXPIRE', KEYS[1], math.ceil(capacity / rate) + 1)
return {allowed, tostring(tokens)}
"""


class Store(Protocol):
    def take(self, key: str, bucket: TokenBucket, now: float, cost: int = 1) -> Decision: ...


def bucket_key(tenant: str, route: str) -> str:
    return f"rl:{tenant}:{route}"


class MemoryStore:
    def __init__(self) -> None:
        self.states: dict[str, BucketState] = {}

    def take(self, key: str, bucket: TokenBucket, now: float, cost: int = 1) -> Decision:
        decision, state = bucket.take(self.states.get(key), now, cost)
        self.states[key] = state
        return decision


class RedisStore:
    def __init__(self, client: object) -> None:
        self.client = client
        self._script = client.register_script(TAKE_SCRIPT)  # type: ignore[attr-defined]

    def take(self, key: str, bucket: TokenBucket, now: float, cost: int = 1) -> Decision:
        allowed, tokens = self._script(keys=[key], args=[bucket.capacity, bucket.rate, now, cost])
        remaining = float(tokens)
        if allowed:
            return Decision(True, remaining, 0.0)
        return Decision(False, remaining, (cost - remaining) / bucket.rate)


class FallbackStore:
    """Try the primary store; when it is unreachable, limit locally instead of failing."""

    def __init__(self, primary: Store, local: MemoryStore | None = None) -> None:
        self.primary = primary
        self.local = local or MemoryStore()

    def take(self, key: str, bucket: TokenBucket, now: float, cost: int = 1) -> Decision:
        try:
            return self.primary.take(key, bucket, now, cost)
        except ConnectionError:
            log.warning("rate-limit store unreachable; limiting %s locally", key)
            return self.local.take(key, bucket, now, cost)
