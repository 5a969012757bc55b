"""Which model serves each role, resolved as model strings, without loading any model SDK.

Resolution order per role: ``--role-model ROLE=MODEL``, then ``--model``, then the
``DESIGNLOOP_MODEL`` environment variable, then ``[models.roles]`` and ``[models.tiers]``
in the user's designloop.toml, then the built-in ``offline`` engine. Keys are redacted
here too, so anything bound for a log can be cleaned without importing a provider.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args
from urllib.parse import urlsplit, urlunsplit

from pipeline.agents.roles import RoleDef, Tier
from pipeline.errors import InputError
from pipeline.validation import did_you_mean, toml_locator

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
        if not sep or not role or not model.strip():
            raise InputError(
                f"--role-model {pair!r} is not ROLE=MODEL",
                hint="e.g. --role-model design-author=anthropic:claude-sonnet-4-5",
            )
        if role not in roles:
            close = did_you_mean(role, sorted(roles))
            guess = f"did you mean {close!r}? " if close else ""
            raise InputError(
                f"--role-model names unknown role {role!r}", hint=f"{guess}roles: {', '.join(sorted(roles))}"
            )
        out[role] = model
    return out


TIERS: tuple[str, ...] = get_args(Tier)


def _model_table(
    settings: Mapping[str, Any], group: str, known: list[str], source: Path | None
) -> dict[str, str]:
    """``[models.<group>]`` of the settings: each key known, each value a model string."""
    models = settings.get("models", {})
    if not isinstance(models, dict):
        raise InputError(
            "[models] must be a table", file=source, hint="write [models.tiers] and [models.roles]"
        )
    table = models.get(group, {}) or {}
    if not isinstance(table, dict):
        raise InputError(f"[models.{group}] must be a table", file=source, hint=f"e.g. [models.{group}]")
    for key, value in table.items():
        if key not in known:
            close = did_you_mean(key, known)
            guess = f"did you mean {close!r}? " if close else ""
            raise InputError(
                f"[models.{group}] names unknown {key!r}",
                file=source,
                line=toml_locator(source)(("models", group, key)) if source else None,
                hint=f"{guess}known: {', '.join(known)}",
            )
        if not isinstance(value, str) or not value.strip():
            raise InputError(
                f"[models.{group}] {key} must be a model string, not {value!r}",
                file=source,
                hint=f'e.g. {key} = "anthropic:claude-sonnet-4-5" (or "offline")',
            )
    return dict(table)


def check_model_option(value: str | None, flag: str = "--model") -> None:
    """A model given on the command line (or in DESIGNLOOP_MODEL) is a non-empty model string."""
    if value is not None and not value.strip():
        raise InputError(
            f"{flag} is empty", hint=f'name a model, e.g. {flag} anthropic:claude-sonnet-4-5, or "offline"'
        )


def resolve_with_sources(
    roles: Mapping[str, RoleDef],
    options: ModelOptions,
    settings: Mapping[str, Any],
    env: Mapping[str, str] | None = None,
    source: Path | None = None,
) -> dict[str, tuple[str, str]]:
    """Each role's model string and where it came from (the first that is set wins)."""
    env = os.environ if env is None else env
    check_model_option(options.model)
    from_env = env.get(ENV_MODEL) or None  # an empty variable is an unset one
    check_model_option(from_env, ENV_MODEL)
    per_role = _model_table(settings, "roles", sorted(roles), source)
    tiers = _model_table(settings, "tiers", list(TIERS), source)
    file = source.name if source is not None else "designloop.toml"
    chosen: dict[str, tuple[str, str]] = {}
    for name, role in roles.items():
        candidates = (
            (options.role_models.get(name), f"--role-model {name}=..."),
            (options.model, "--model"),
            (from_env, ENV_MODEL),
            (per_role.get(name), f"{file} [models.roles] {name}"),
            (tiers.get(role.tier), f"{file} [models.tiers] {role.tier}"),
        )
        chosen[name] = next(((m, why) for m, why in candidates if m), (OFFLINE, "no model configured"))
    return chosen


def resolve_models(
    roles: Mapping[str, RoleDef],
    options: ModelOptions,
    settings: Mapping[str, Any],
    env: Mapping[str, str] | None = None,
    source: Path | None = None,
) -> dict[str, str]:
    """The model string each role runs on."""
    chosen = resolve_with_sources(roles, options, settings, env, source)
    return {name: model for name, (model, _) in chosen.items()}


def roles_played(ran: set[str], specs: Mapping[str, str]) -> dict[str, str]:
    """The model each role in ``ran`` played (every role's, when none has run yet)."""
    return {role: spec for role, spec in sorted(specs.items()) if role in ran or not ran}


def engine_summary(models: Mapping[str, str]) -> str:
    """Who reviewed, in words: ``the offline engine (rule-based, no model)`` when every role ran
    on it, else each model with the roles it played."""
    if not models:
        return "no role ran"
    if set(models.values()) == {OFFLINE}:
        return "the offline engine for every role (rule-based, no model)"
    by_model: dict[str, list[str]] = {}
    for role, model in sorted(models.items()):
        by_model.setdefault(model, []).append(role)
    return "; ".join(
        f"{'the offline engine' if model == OFFLINE else model} ({', '.join(roles)})"
        for model, roles in sorted(by_model.items())
    )


REVIEWERS = frozenset(
    {
        "readability-auditor",
        "comprehension-review",
        "absorption-check",
        "fidelity-check",
        "adversarial-review",
    }
)
"""The roles that judge a text (the author and the editor write it)."""


def not_judged(models: Mapping[str, str]) -> list[str]:
    """What no review of this run judged: when a reviewing role ran on the offline engine, the
    judgements a rule cannot make (params/offline.toml ``not_judged``); else nothing."""
    if not any(model == OFFLINE and role in REVIEWERS for role, model in models.items()):
        return []
    from pipeline.offline.text import lexicon

    return list(lexicon().not_judged)


def redact(text: str, env: Mapping[str, str] | None = None) -> str:
    """Remove API keys (by the providers' variables and by shape) from text bound for logs."""
    env = os.environ if env is None else env
    for var in KEY_VARIABLES:
        value = env.get(var)
        if value and len(value) >= 6:
            text = text.replace(value, f"<{var}>")
    return _KEY_SHAPES.sub("<redacted>", text)


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


def caches_prompts(spec: str, base_url: str | None) -> bool:
    """Whether the provider behind ``spec`` keeps a shared prompt prefix warm between requests:
    Anthropic (with cache breakpoints), OpenAI's API and Gemini (automatic prefix caching). An
    OpenAI-compatible server of one's own and the offline engine do not, so a fan-out on them
    does not wait for a first answer."""
    provider = spec.partition(":")[0]
    if provider in ("openai", "openai-chat", "openai-responses"):
        return base_url is None and not os.environ.get("OPENAI_BASE_URL")
    return provider in ("anthropic", "google-gla", "google-vertex", "gemini")
