"""Which failures of a model request are asked again, and how often.

Transient provider errors (429 honouring Retry-After, 408, 5xx, timeouts, connection errors)
are retried with tenacity, bounded and jittered; a 200 whose body is not the provider's format
(a proxy's HTML error page, JSON of another shape) is asked again once, then fails like any
other provider error.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
from pydantic_ai.exceptions import ModelAPIError, ModelHTTPError, UnexpectedModelBehavior
from tenacity import AsyncRetrying, retry_if_exception, wait_random_exponential
from tenacity.wait import wait_base


def malformed_body(exc: BaseException) -> bool:
    """A 200 whose body is not the provider's format: a proxy's HTML page, JSON of another shape."""
    if isinstance(exc, ModelHTTPError):
        return False
    text = str(exc)
    if isinstance(exc, UnexpectedModelBehavior):
        return text.startswith("Invalid response from")
    return isinstance(exc, ModelAPIError) and "Failed to decode response" in text


class FirstAnswerTimeout(TimeoutError):
    """A spawn's first request got no answer within ``first_turn_timeout`` (retries included)."""


def is_transient(exc: BaseException) -> bool:
    if malformed_body(exc):
        return True
    if isinstance(exc, ModelHTTPError):
        return exc.status_code == 429 or exc.status_code >= 500 or exc.status_code == 408
    if isinstance(exc, ModelAPIError):
        name = type(exc).__name__
        return any(
            word in name
            for word in ("RateLimit", "Server", "Connection", "Timeout", "Unavailable", "Overloaded")
        )
    return isinstance(exc, TimeoutError | ConnectionError)


def retry_after(exc: BaseException) -> float | None:
    headers = getattr(exc, "headers", None) or {}
    value = headers.get("retry-after") if isinstance(headers, dict) else None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


class wait_retry_after(wait_base):
    """Honour a provider's Retry-After (capped); otherwise jittered exponential backoff."""

    def __init__(self, fallback: wait_base, cap: float) -> None:
        self.fallback = fallback
        self.cap = cap

    def __call__(self, retry_state: Any) -> float:
        outcome = retry_state.outcome
        exc = outcome.exception() if outcome is not None else None
        hinted = retry_after(exc) if exc is not None else None
        if hinted is not None:
            return min(hinted, self.cap)
        return float(self.fallback(retry_state))


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    attempts: int = 4
    base: float = 0.5
    max_wait: float = 30.0
    retry_after_cap: float = 120.0
    sleep: Callable[[float], Awaitable[None]] = anyio.sleep
    first_turn_timeout: float | None = None
    """The deadline of a spawn's first request, its retries included (``[run] first_turn_timeout``)."""
    malformed_attempts: int = 2
    """A body not in the provider's format is asked again once."""

    def should_stop(self, retry_state: Any) -> bool:
        outcome = retry_state.outcome
        exc = outcome.exception() if outcome is not None else None
        limit = self.malformed_attempts if exc is not None and malformed_body(exc) else self.attempts
        return bool(retry_state.attempt_number >= limit)

    def retrying(self) -> AsyncRetrying:
        """The retrier for one request."""
        return AsyncRetrying(
            retry=retry_if_exception(is_transient),
            stop=self.should_stop,
            wait=wait_retry_after(
                wait_random_exponential(multiplier=self.base, max=self.max_wait), self.retry_after_cap
            ),
            sleep=self.sleep,
            reraise=True,
        )
