"""Building a pydantic-ai model from a model string (agents.resolve says which string).

Model strings are pydantic-ai's (``anthropic:…``, ``openai:…``, ``google-gla:…``); keys come
from each provider's standard variable; any OpenAI-compatible server is reached through
``OPENAI_BASE_URL`` or ``--base-url``.
"""

from __future__ import annotations

import os
from typing import Any

from pydantic_ai.models import Model, infer_model
from pydantic_ai.providers import Provider, infer_provider
from pydantic_ai.settings import ModelSettings

from pipeline.agents.resolve import redact
from pipeline.errors import InputError


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
    except Exception as exc:
        raise InputError(
            f"cannot use model {spec!r}: {redact(str(exc))}",
            hint="check the model string and its provider's API key variable",
        ) from None


def settings_for(system: str) -> ModelSettings:
    """Per-provider settings (by the model's ``system``): Anthropic prompt caching on for
    instructions and tool definitions."""
    if system == "anthropic":
        return {"anthropic_cache_instructions": True, "anthropic_cache_tool_definitions": True}  # type: ignore[typeddict-unknown-key]
    return {}
