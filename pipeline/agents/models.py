"""Building a pydantic-ai model from a model string (agents.resolve says which string).

Model strings are pydantic-ai's (``anthropic:…``, ``openai:…``, ``google-gla:…``); keys come
from each provider's standard variable; any OpenAI-compatible server is reached through
``OPENAI_BASE_URL`` or ``--base-url``.
"""

from __future__ import annotations

import os
import re
from typing import Any

from pydantic_ai.exceptions import ModelConnectionError, ModelHTTPError
from pydantic_ai.models import Model, infer_model, parse_model_id
from pydantic_ai.providers import Provider, infer_provider, infer_provider_class
from pydantic_ai.settings import ModelSettings

from pipeline.agents.resolve import OFFLINE, redact, shown_url
from pipeline.errors import InputError

VENDOR_HINTS = re.compile(
    r"\s*To try Pydantic AI without an API key[^\n]*?(?:See https?://\S+|$)"
    r"|\s*(?:For more information,? )?(?:See|see|Read more:?|Docs:?) https?://(?:ai\.)?pydantic\.dev/\S*"
    r"|\s*use the built-in test model: `Agent\('test'\)`\.?"
)
"""What pydantic-ai adds to its errors for its own users (a test model, its docs): never
shown to designloop's, whose hints say what to do here."""


def without_vendor_hints(text: str) -> str:
    return VENDOR_HINTS.sub("", text).strip()


MODEL_HINT = (
    "use offline, or a pydantic-ai model string such as anthropic:claude-sonnet-4-5, "
    "openai:gpt-5 or google-gla:gemini-2.5-pro"
)


EXTRAS = {"anthropic": "anthropic", "google": "google", "google-gla": "google", "google-vertex": "google"}
"""Providers whose client package is an optional extra of designloop (pyproject.toml)."""


def not_installed(spec: str) -> InputError:
    """A model whose provider's client package is not installed: say which extra brings it."""
    provider = spec.partition(":")[0]
    extra = EXTRAS.get(provider, provider)
    return InputError(
        f"model {spec!r} needs the {provider} client package, which is not installed",
        hint=f"pip install 'designloop[{extra}]' (or 'designloop[all]')",
    )


def check_spec(spec: str) -> None:
    """Refuse a model string whose provider is unknown, or whose client package is not
    installed, before anything is written."""
    if spec == OFFLINE:
        return
    provider, _ = parse_model_id(spec)
    if provider is None:
        raise InputError(f"model {spec!r} names no provider (PROVIDER:MODEL)", hint=MODEL_HINT)
    try:
        infer_provider_class(provider)
    except ValueError:
        raise InputError(f"model {spec!r} names an unknown provider {provider!r}", hint=MODEL_HINT) from None
    except ImportError:
        raise not_installed(spec) from None


def server_of(spec: str, base_url: str | None) -> str:
    url = base_url or (os.environ.get("OPENAI_BASE_URL") if spec.startswith("openai") else None)
    return shown_url(url) if url else f"the {spec.partition(':')[0]} API"


def _root_cause(exc: BaseException) -> str:
    seen: BaseException = exc
    while seen.__cause__ is not None or seen.__context__ is not None:
        nxt = seen.__cause__ or seen.__context__
        assert nxt is not None
        seen = nxt
    text = " ".join(str(seen).split())[:300]
    return f"{type(seen).__name__}: {text}" if text else type(seen).__name__


def describe_failure(exc: BaseException, spec: str, base_url: str | None) -> str:
    """A spawn failure as the run records it: a connection error names itself and the server."""
    if isinstance(exc, ModelConnectionError) or (
        isinstance(exc, ConnectionError | OSError) and not isinstance(exc, TimeoutError)
    ):
        text = f"connection error: cannot reach {server_of(spec, base_url)} for {spec} ({_root_cause(exc)})"
    elif isinstance(exc, ModelHTTPError):
        text = f"the provider answered HTTP {exc.status_code} for {spec}: {exc}"
    elif isinstance(exc, TimeoutError):
        text = f"timed out waiting for {spec}: {exc or type(exc).__name__}"
    else:
        cause = f" ({' '.join(str(exc.__cause__).split())[:300]})" if exc.__cause__ else ""
        text = f"{type(exc).__name__}: {exc}{cause}"
    return without_vendor_hints(redact(text))


def _provider_factory(http_client: Any, base_url: str | None) -> Any:
    def factory(name: str) -> Provider[Any]:
        if name in ("openai", "openai-chat", "openai-responses") and (
            http_client is not None or base_url is not None
        ):
            from pydantic_ai.providers.openai import OpenAIProvider

            return OpenAIProvider(base_url=base_url, http_client=http_client)
        if name == "anthropic" and http_client is not None:
            from pydantic_ai.providers.anthropic import AnthropicProvider

            provider: Provider[Any] = AnthropicProvider(http_client=http_client)
            return provider
        return infer_provider(name)

    return factory


def build_model(spec: str, *, base_url: str | None = None, http_client: Any = None) -> Model:
    """A pydantic-ai model for ``spec``; OpenAI-compatible servers use chat completions.

    ``http_client`` (an ``httpx2.AsyncClient``, or a legacy ``httpx.AsyncClient`` where the
    provider accepts one) replaces the provider's own client; tests use it to mock the wire.
    """
    base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
    provider, _, name = spec.partition(":")
    try:
        if provider == "openai" and base_url is not None:
            from pydantic_ai.models.openai import OpenAIChatModel
            from pydantic_ai.providers.openai import OpenAIProvider

            return OpenAIChatModel(name, provider=OpenAIProvider(base_url=base_url, http_client=http_client))
        return infer_model(spec, provider_factory=_provider_factory(http_client, base_url))
    except ImportError:
        raise not_installed(spec) from None
    except Exception as exc:
        raise InputError(
            f"cannot use model {spec!r}: {without_vendor_hints(redact(str(exc)))}",
            hint="check the model string, and set its provider's API key variable "
            "(or --base-url for an OpenAI-compatible server)",
        ) from None


def settings_for(system: str) -> ModelSettings:
    """Per-provider settings (by the model's ``system``): Anthropic cache breakpoints on the
    instructions and the tool definitions (shared by every spawn of a role) and one that
    moves forward with the conversation (what a spawn has read, the draft included, is
    cached for its later turns)."""
    if system == "anthropic":
        return {  # type: ignore[typeddict-unknown-key]
            "anthropic_cache_instructions": True,
            "anthropic_cache_tool_definitions": True,
            "anthropic_cache": True,
        }
    return {}
