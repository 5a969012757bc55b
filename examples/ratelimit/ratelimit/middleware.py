"""An ASGI middleware that answers 429 with Retry-After when a tenant's bucket is empty."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from .bucket import TokenBucket
from .clock import Clock, MonotonicClock
from .store import Store, bucket_key

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[..., Awaitable[Any]], Callable[..., Awaitable[Any]]], Awaitable[None]]


class RateLimitMiddleware:
    def __init__(self, app: ASGIApp, store: Store, buckets: dict[str, TokenBucket],
                 clock: Clock | None = None, tenant_header: bytes = b"x-tenant") -> None:
        self.app = app
        self.store = store
        self.buckets = buckets
        self.clock = clock or MonotonicClock()
        self.tenant_header = tenant_header

    def tenant_of(self, scope: Scope) -> str:
        for name, value in scope.get("headers", []):
            if name == self.tenant_header:
                return str(value.decode("latin-1"))
        return "anonymous"

    async def __call__(self, scope: Scope, receive: Callable[..., Awaitable[Any]],
                       send: Callable[..., Awaitable[Any]]) -> None:
        route = scope.get("path", "/")
        bucket = self.buckets.get(route) or self.buckets.get("*")
        if scope.get("type") != "http" or bucket is None:
            await self.app(scope, receive, send)
            return
        decision = self.store.take(bucket_key(self.tenant_of(scope), route), bucket, self.clock.now())
        if decision.allowed:
            await self.app(scope, receive, send)
            return
        retry = str(max(1, math.ceil(decision.retry_after))).encode()
        await send({"type": "http.response.start", "status": 429,
                    "headers": [(b"retry-after", retry), (b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"rate limit exceeded\n"})
