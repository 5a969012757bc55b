"""Building a Runtime from the command line, the environment and the params files."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from pipeline.agents.resolve import ModelOptions, parse_role_models, resolve_models
from pipeline.agents.roles import load_roles
from pipeline.agents.runtime import Runtime
from pipeline.agents.usage import Budget
from pipeline.errors import InputError
from pipeline.settings import Limits, RunSettings, default_runs_dir, limits_from, merged_params, run_settings


@dataclass(frozen=True, slots=True)
class SessionOptions:
    model: str | None = None
    role_models: tuple[str, ...] = ()
    base_url: str | None = None
    budget_tokens: int | None = None
    max_cost: str | None = None
    runs_dir: Path | None = None
    no_cache: bool = False


@dataclass(slots=True)
class Session:
    runtime: Runtime
    limits: Limits
    run: RunSettings
    runs_dir: Path
    params: dict[str, Any]


def parse_cost(value: str | None) -> Decimal | None:
    if value is None:
        return None
    try:
        cost = Decimal(value.lstrip("$"))
    except InvalidOperation:
        raise InputError(
            f"--max-cost {value!r} is not a number of dollars", hint="e.g. --max-cost 2.50"
        ) from None
    if cost <= 0:
        raise InputError("--max-cost must be positive")
    return cost


def open_session(repo_root: Path, options: SessionOptions) -> Session:
    params, source = merged_params(repo_root)
    limits = limits_from(params, source)
    run = run_settings(params, source)
    roles = load_roles(repo_root)
    role_models = parse_role_models(list(options.role_models), roles)
    specs = resolve_models(roles, ModelOptions(options.model, role_models, options.base_url), params)
    runs_dir = (options.runs_dir or default_runs_dir(repo_root)).resolve()
    cache = None
    if not options.no_cache:
        from pipeline.agents.cache import open_cache

        cache = open_cache(runs_dir / "cache")
    if options.budget_tokens is not None and options.budget_tokens <= 0:
        raise InputError("--budget must be a positive number of tokens")
    runtime = Runtime(
        repo_root=repo_root,
        roles=roles,
        model_specs=specs,
        cache=cache,
        budget=Budget(options.budget_tokens, parse_cost(options.max_cost)),
        timeout=run.spawn_timeout,
        base_url=options.base_url,
        bash_timeout=run.bash_timeout,
    )
    return Session(runtime, limits, run, runs_dir, params)
