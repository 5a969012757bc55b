"""A per-tenant request rate limiter backed by Redis, with a local fallback."""

from .bucket import BucketState, TokenBucket
from .clock import Clock, MonotonicClock
from .middleware import RateLimitMiddleware
from .store import FallbackStore, MemoryStore, RedisStore

__all__ = [
    "BucketState",
    "Clock",
    "FallbackStore",
    "MemoryStore",
    "MonotonicClock",
    "RateLimitMiddleware",
    "RedisStore",
    "TokenBucket",
]
