"""Which model serves each role, and building it.

Resolution order per role: ``--role-model ROLE=MODEL``, then ``--model``, then the
``DESIGNLOOP_MODEL`` environment variable, then ``[models.roles]`` and ``[models.tiers]``
in the user's designloop.toml, then the built-in ``offline`` engine. Model strings are
pydantic-ai's (``anthropic:…``, ``openai:…``, ``google-gla:…``); keys come from each
provider's standard variable; any OpenAI-compatible server is reached through
``OPENAI_BASE_URL`` or ``--base-url``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pydantic_ai.exceptions import ModelConnectionError, ModelHTTPError
from pydantic_ai.models import Model, infer_model, parse_model_id
from pydantic_ai.providers import Provider, infer_provider, infer_provider_class
from pydantic_ai.settings import ModelSettings

from pipeline.agents.roles import RoleDef
from pipeline.errors import InputError

OFFLINE = "offline"
ENV_MODEL = "DESIGNLOOP_MODEL"
KEY_VARIABLES = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GROQ_API_KEY",
    "MISTRAL_API_KEY",
    "CO_API_KEY",
    "DEEPSEEK_API_KEY",
    "OPENROUTER_API_KEY",
    "XAI_API_KEY",
)
_KEY_SHAPES = re.compile(
    r"\b(sk-[A-Za-z0-9_\-]{8,}|sk-ant-[A-Za-z0-9_\-]{8,}|AIza[0-9A-Za-z_\-]{20,})"
    r"|(?<=Bearer )[A-Za-z0-9._~+/\-]{8,}=*"
)


@dataclass(frozen=True, slots=True)
class ModelOptions:
    model: str | None = None
    role_models: Mapping[str, str] = field(default_factory=dict)
    base_url: str | None = None


def parse_role_models(pairs: list[str], roles: Mapping[str, RoleDef]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        role, sep, model = pair.partition("=")
        if not sep or not role or not model:
            raise InputError(
                f"--role-model {pair!r} is not ROLE=MODEL",
                hint="e.g. --role-model design-author=anthropic:claude-sonnet-4-5",
            )
        if role not in roles:
            raise InputError(
                f"--role-model names unknown role {role!r}", hint=f"roles: {', '.join(sorted(roles))}"
            )
        out[role] = model
    return out


MODEL_HINT = (
    "use offline, or a pydantic-ai model string such as anthropic:claude-sonnet-4-5, "
    "openai:gpt-5 or google-gla:gemini-2.5-pro"
)


def check_spec(spec: str) -> None:
    """Refuse a model string whose provider is unknown, before anything is written."""
    if spec == OFFLINE:
        return
    provider, _ = parse_model_id(spec)
    if provider is None:
        raise InputError(f"model {spec!r} names no provider (PROVIDER:MODEL)", hint=MODEL_HINT)
    try:
        infer_provider_class(provider)
    except ValueError:
        raise InputError(f"model {spec!r} names an unknown provider {provider!r}", hint=MODEL_HINT) from None


def check_base_url(url: str | None, source: str = "--base-url") -> str | None:
    """An OpenAI-compatible server's base URL, refused up front unless it is http(s)://host[...]."""
    if url is None:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(
            f"{source} {shown_url(url)!r} is not an http:// or https:// URL with a host",
            hint="e.g. --base-url http://localhost:11434/v1 (the server's OpenAI-compatible root)",
        )
    try:
        parts.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError:
        raise InputError(
            f"{source} {shown_url(url)!r} has a bad port", hint="e.g. http://localhost:8000/v1"
        ) from None
    return url


def shown_url(url: str) -> str:
    """A URL as errors show it: any user name and password removed."""
    parts = urlsplit(url)
    if not (parts.username or parts.password):
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


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
    return redact(text)


def resolve_models(
    roles: Mapping[str, RoleDef],
    options: ModelOptions,
    settings: Mapping[str, Any],
    env: Mapping[str, str] | None = None,
) -> dict[str, str]:
    env = os.environ if env is None else env
    configured = settings.get("models", {}) if isinstance(settings.get("models"), dict) else {}
    per_role = configured.get("roles", {}) or {}
    tiers = configured.get("tiers", {}) or {}
    chosen: dict[str, str] = {}
    for name, role in roles.items():
        chosen[name] = (
            options.role_models.get(name)
            or options.model
            or env.get(ENV_MODEL)
            or per_role.get(name)
            or tiers.get(role.tier)
            or OFFLINE
        )
    return chosen


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
            hint="check the model string, and set its provider's API key variable "
            "(or --base-url for an OpenAI-compatible server)",
        ) from None


def settings_for(system: str) -> ModelSettings:
    """Per-provider settings (by the model's ``system``): Anthropic prompt caching on for
    instructions and tool definitions."""
    if system == "anthropic":
        return {"anthropic_cache_instructions": True, "anthropic_cache_tool_definitions": True}  # type: ignore[typeddict-unknown-key]
    return {}


def redact(text: str, env: Mapping[str, str] | None = None) -> str:
    """Remove API keys (by the providers' variables and by shape) from text bound for logs."""
    env = os.environ if env is None else env
    for var in KEY_VARIABLES:
        value = env.get(var)
        if value and len(value) >= 6:
            text = text.replace(value, f"<{var}>")
    return _KEY_SHAPES.sub("<redacted>", text)
