"""The model-call layer every role goes through: a content-keyed cache and bounded retries.

``CachedModel`` wraps any pydantic-ai model. Each request is keyed by the model name and
the full request content (instructions, every message part, tool definitions and output
schema), never by call order, and the response is stored in a diskcache. A repeated or
resumed request is answered from the cache at zero cost. What fails in passing is asked again
as agents.retry's policy says; provider SDK retries are switched off so retries happen once,
here. A spawn's first request has a deadline of its own (``first_turn_timeout``, retries
included), so a provider that hangs ends a spawn in tens of seconds rather than at the whole
spawn's timeout.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import json
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol, TypeVar

import diskcache
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RequestUsage

from pipeline.agents.retry import FirstAnswerTimeout, RetryPolicy
from pipeline.errors import InputError
from pipeline.formats.database import sqlite_failure
from pipeline.settings import CACHE_DB, make_runs_dir

T = TypeVar("T")
VOLATILE_KEYS = frozenset(
    {
        "timestamp",
        "run_id",
        "conversation_id",
        "provider_response_id",
        "metadata",
        "provider_details",
        "provider_url",
        "state",
        "usage",
        "model_id",
        "id",
    }
)

#: The attempt number of the spawn being run: a deliberate re-run must not hit its own cache entry.
ATTEMPT: contextvars.ContextVar[int] = contextvars.ContextVar("designloop_attempt", default=1)
#: Where the current spawn's call records go.
RECORDER: contextvars.ContextVar[CallLog | None] = contextvars.ContextVar("designloop_recorder", default=None)


@dataclass(slots=True)
class CallRecord:
    model: str
    cache_hit: bool
    input_tokens: int
    output_tokens: int
    cost: Decimal | None


@dataclass(slots=True)
class CallLog:
    calls: list[CallRecord] = field(default_factory=list)
    first_request: str | None = None
    """The spawn's first request as sent (messages, then tool definitions): what a fan-out
    shares as a prefix."""
    first_answer: Callable[[], None] | None = None
    """Told once, when the spawn gets its first answer (the fan-out's warm-up signal)."""

    def answered(self) -> None:
        """Tell whoever waits for this spawn's first answer (once)."""
        hook, self.first_answer = self.first_answer, None
        if hook is not None:
            hook()


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in sorted(value.items()) if k not in VOLATILE_KEYS}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def request_body(
    model_name: str,
    messages: list[ModelMessage],
    params: ModelRequestParameters,
    settings: ModelSettings | None,
) -> dict[str, Any]:
    """The request's full content, in the order a provider receives it (the conversation, then
    the tool definitions), without what varies between identical requests (times, ids)."""
    return {
        "model": model_name,
        "messages": _canonical(json.loads(ModelMessagesTypeAdapter.dump_json(messages))),
        "tools": [
            _canonical(t.__dict__ if not hasattr(t, "model_dump") else t.model_dump())
            for t in [*params.function_tools, *params.output_tools]
        ],
        "output_mode": str(params.output_mode),
        "allow_text_output": params.allow_text_output,
        "settings": _canonical({k: v for k, v in (settings or {}).items() if k != "max_retries"}),
    }


def key_of(body: dict[str, Any], attempt: int = 1) -> str:
    """The cache key: the full content, never the order of calls (a re-run attempt apart)."""
    keyed = {**body, "attempt": attempt} if attempt > 1 else body
    raw = json.dumps(keyed, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(raw.encode()).hexdigest()


def response_cost(response: ModelResponse) -> Decimal | None:
    try:
        return Decimal(response.cost().total_price)
    except Exception:  # unknown model or provider: no price, not an error
        return None


class RequestCache(Protocol):
    """Where answered requests are kept: a diskcache, or one opened on first use."""

    def get(self, key: str) -> Any: ...

    def set(self, key: str, value: bytes) -> Any: ...

    def close(self) -> None: ...


@dataclass(slots=True)
class InFlight:
    """Requests being asked now, by cache key: an identical one waits for that answer instead
    of asking again. One registry serves every role of a run, and every run of a batch (the
    first turn of each role is the same request in every directory)."""

    pending: dict[str, asyncio.Future[bytes]] = field(default_factory=dict)


class CachedModel(WrapperModel):
    """A model whose every request is content-keyed, cached and retried."""

    def __init__(
        self,
        wrapped: Model,
        cache: RequestCache | None,
        policy: RetryPolicy | None = None,
        inflight: InFlight | None = None,
    ) -> None:
        super().__init__(wrapped)
        self.cache = cache
        self.policy = policy or RetryPolicy()
        self._inflight = (inflight or InFlight()).pending
        """Requests being asked now (shared with every model of the registry handed in)."""

    @property
    def model_name(self) -> str:
        return self.wrapped.model_name

    @property
    def system(self) -> str:
        return self.wrapped.system

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        body = request_body(self.model_name, messages, model_request_parameters, model_settings)
        key = key_of(body, ATTEMPT.get())
        recorder = RECORDER.get()
        if recorder is not None and recorder.first_request is None:
            recorder.first_request = json.dumps(body, default=str, ensure_ascii=False)
        while True:
            pending = self._inflight.get(key)
            if pending is None or pending.get_loop() is not asyncio.get_running_loop():
                break
            try:
                return self._answered(await asyncio.shield(pending), recorder)
            except Exception:  # that asker failed or stopped: look again, then ask
                continue
        # This request is claimed before the cache is read: an identical one waits for it, and
        # the claim is let go only once the answer is stored, so nobody asks twice.
        future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            # The cache is SQLite on disk: read and written in a thread, off the event loop.
            raw = await asyncio.to_thread(self._stored, key) if self.cache is not None else None
            if raw is not None:
                future.set_result(raw)
                return self._answered(raw, recorder)
            response = await self._first_or_later(messages, model_settings, model_request_parameters)
            # The answer as received, before the agent stamps its own run on it: every waiter
            # decodes a copy of its own, as from the cache.
            raw = ModelMessagesTypeAdapter.dump_json([response])
            future.set_result(raw)
            if self.cache is not None:
                await asyncio.to_thread(self.cache.set, key, raw)
        except BaseException as exc:
            if not future.done():
                # Whoever waits asks on its own (a cancellation here is not theirs to share).
                future.set_exception(
                    exc if isinstance(exc, Exception) else RuntimeError("the first asker stopped")
                )
                future.exception()  # retrieved: nobody need wait for it
            raise
        finally:
            if self._inflight.get(key) is future:
                del self._inflight[key]
        if recorder is not None:
            recorder.calls.append(
                CallRecord(
                    self.model_name,
                    False,
                    response.usage.input_tokens,
                    response.usage.output_tokens,
                    response_cost(response),
                )
            )
            recorder.answered()
        return response

    def _answered(self, raw: bytes, recorder: CallLog | None) -> ModelResponse:
        """An answer from the cache or from an identical request: recorded as a hit, at no cost."""
        if recorder is not None:
            recorder.calls.append(CallRecord(self.model_name, True, 0, 0, Decimal(0)))
            recorder.answered()
        cached = ModelMessagesTypeAdapter.validate_json(raw)[0]
        assert isinstance(cached, ModelResponse)
        return replace(cached, usage=RequestUsage())

    async def _first_or_later(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        """Ask; a spawn's first request (no answer in the conversation yet) within its deadline."""
        deadline = self.policy.first_turn_timeout
        if deadline is None or any(isinstance(m, ModelResponse) for m in messages):
            return await self._ask(messages, model_settings, model_request_parameters)
        try:
            async with asyncio.timeout(deadline):
                return await self._ask(messages, model_settings, model_request_parameters)
        except TimeoutError:
            raise FirstAnswerTimeout(
                f"no first answer within {deadline:g} s ([run] first_turn_timeout; a slow server needs more)"
            ) from None

    def _stored(self, key: str) -> bytes | None:
        if self.cache is None:
            return None
        raw = self.cache.get(key)
        return raw if isinstance(raw, bytes) else None

    async def _ask(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        """Ask the provider, retrying what is transient."""
        settings: ModelSettings = {**(model_settings or {}), "max_retries": 0}
        response: ModelResponse | None = None
        async for attempt in self.policy.retrying():
            with attempt:
                response = await self.wrapped.request(messages, settings, model_request_parameters)
        assert response is not None
        return response


class RuleEngine(WrapperModel):
    """The offline engine as the runtime runs it: answered afresh on every request, never from
    the cache (it is deterministic and quick, and a stored answer would outlive a change to its
    rules), and recorded as no model call: no tokens, no calls, no cache hits. A fan-out is
    still told when its first answer is in."""

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        recorder = RECORDER.get()
        if recorder is not None and recorder.first_request is None:
            body = request_body(self.model_name, messages, model_request_parameters, model_settings)
            recorder.first_request = json.dumps(body, default=str, ensure_ascii=False)
        response = await self.wrapped.request(messages, model_settings, model_request_parameters)
        if recorder is not None:
            recorder.answered()
        return replace(response, usage=RequestUsage())


def open_cache(directory: Path) -> diskcache.Cache:
    make_runs_dir(directory.parent)
    directory.mkdir(parents=True, exist_ok=True)
    try:
        return diskcache.Cache(str(directory), size_limit=2**30)
    except sqlite3.Error as exc:
        raise _failure(exc, directory) from None


def _failure(exc: sqlite3.Error, directory: Path) -> Exception:
    named: InputError | None = sqlite_failure(exc, directory / CACHE_DB, "model-call cache")
    return named if named is not None else exc


class LazyCache:
    """The run's request cache, opened on first use; a lookup before anything was cached opens
    nothing, so a command that stops on bad input leaves no cache behind. A damaged cache file
    is reported as such (formats.database), not as an internal error.

    Every use runs on the cache's own thread, where its one SQLite connection lives: spawns
    use it from the threads that keep their I/O off the event loop, and ``close`` closes that
    connection (and ends the thread) whatever thread used the cache."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._cache: diskcache.Cache | None = None
        self._worker: ThreadPoolExecutor | None = None
        self._guard = threading.Lock()

    def _on_thread(self, work: Callable[[], T]) -> T:
        with self._guard:
            if self._worker is None:
                self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="designloop-cache")
            worker = self._worker
        return worker.submit(work).result()

    def _open(self, create: bool) -> diskcache.Cache | None:
        if self._cache is None and (create or (self.directory / CACHE_DB).is_file()):
            self._cache = open_cache(self.directory)
        return self._cache

    def get(self, key: str) -> Any:
        def look() -> Any:
            cache = self._open(create=False)
            try:
                return None if cache is None else cache.get(key)
            except sqlite3.Error as exc:
                raise _failure(exc, self.directory) from None

        return self._on_thread(look)

    def set(self, key: str, value: bytes) -> Any:
        def store() -> Any:
            cache = self._open(create=True)
            assert cache is not None
            try:
                return cache.set(key, value)
            except sqlite3.Error as exc:
                raise _failure(exc, self.directory) from None

        return self._on_thread(store)

    def close(self) -> None:
        """Close the cache's files (it opens again on its next use)."""
        with self._guard:
            worker, self._worker = self._worker, None
        if worker is None:
            return

        def shut() -> None:
            if self._cache is not None:
                self._cache.close()
                self._cache = None

        try:
            worker.submit(shut).result()
        finally:
            worker.shutdown()
