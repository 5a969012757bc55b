"""Building a Runtime from the command line, the environment and the params files."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from pipeline.agents.cache import LazyCache
from pipeline.agents.models import check_spec
from pipeline.agents.readable import byproducts, store_dirs
from pipeline.agents.resolve import OFFLINE, ModelOptions, check_base_url, parse_role_models, resolve_models
from pipeline.agents.retry import RetryPolicy
from pipeline.agents.roles import OVERRIDE_DIR, RoleDef, instructions_for, load_prompt, load_roles
from pipeline.agents.runtime import Runtime
from pipeline.agents.usage import Budget
from pipeline.errors import InputError
from pipeline.formats.textio import check_runs_link, read_text
from pipeline.settings import (
    CACHE_DIR,
    Limits,
    RunSettings,
    default_runs_dir,
    limits_from,
    merged_params,
    run_settings,
)


@dataclass(frozen=True, slots=True)
class SessionOptions:
    model: str | None = None
    role_models: tuple[str, ...] = ()
    base_url: str | None = None
    budget_tokens: int | None = None
    max_cost: str | None = None
    runs_dir: Path | None = None
    no_cache: bool = False
    max_requests: int | None = None
    """The per-spawn request limit (``--max-requests``), else ``[run] spawn_requests``."""


@dataclass(slots=True)
class Session:
    runtime: Runtime
    limits: Limits
    run: RunSettings
    runs_dir: Path
    params: dict[str, Any]


MAX_COST = Decimal(10) ** 9
"""A cost cap above this is no cap: refused as a typing slip (and beyond a float's precision)."""
MAX_TOKENS = 10**15


def parse_cost(value: str | None, flag: str = "--max-cost") -> Decimal | None:
    if value is None:
        return None
    try:
        cost = Decimal(value.strip().lstrip("$"))
    except InvalidOperation:
        cost = Decimal("NaN")
    if not cost.is_finite() or cost <= 0:
        raise InputError(f"{flag} {value!r} is not a positive number of dollars", hint=f"e.g. {flag} 2.50")
    if cost > MAX_COST:
        raise InputError(
            f"{flag} {value!r} is beyond any budget (at most {MAX_COST:,} dollars)",
            hint=f"e.g. {flag} 2.50; leave {flag} out for no cost limit",
        )
    return cost


def check_budget(tokens: int | None, flag: str = "--budget") -> None:
    if tokens is not None and tokens <= 0:
        raise InputError(f"{flag} {tokens} is not a positive number of tokens", hint=f"e.g. {flag} 400000")
    if tokens is not None and tokens > MAX_TOKENS:
        raise InputError(
            f"{flag} {tokens} is beyond any budget (at most {MAX_TOKENS:,} tokens)",
            hint=f"e.g. {flag} 400000; leave {flag} out for no token limit",
        )


def check_requests(requests: int | None, flag: str = "--max-requests") -> None:
    if requests is not None and not 0 < requests <= MAX_TOKENS:
        raise InputError(
            f"{flag} {requests} is not a positive number of requests",
            hint=f"e.g. {flag} 200 (the default is [run] spawn_requests)",
        )


def check_prompts(roles: dict[str, RoleDef], repo_root: Path) -> None:
    """Every prompt a spawn will load (the shared ones each role names, the spawn prompt, and
    the user's overrides of them), read now: one that cannot be read is refused before any
    write, not when its role is first spawned."""
    for role in roles.values():
        instructions_for(role, repo_root)
    load_prompt("spawn.md", repo_root)
    for kind in ("agents", "prompts"):  # every override (the stamp's digest reads them all)
        folder = repo_root / OVERRIDE_DIR / kind
        for path in sorted(folder.glob("*.md")) if folder.is_dir() else []:
            read_text(path, what=f"{kind[:-1]} override")


@dataclass(frozen=True, slots=True)
class SetUp:
    """What every run in one repository shares, checked once: the settings, the roles and the
    prompts they load, each role's model, the runs directory, and where no role reads (the runs
    directory, designloop's recorded outputs and every runs directory under the repository,
    found by one walk). A batch or a worker makes it once per repository; each run gets a
    session of its own over it (``SetUp.session``)."""

    repo_root: Path
    options: SessionOptions
    params: dict[str, Any]
    limits: Limits
    run: RunSettings
    roles: dict[str, RoleDef]
    specs: dict[str, str]
    budget: Budget
    runs_dir: Path
    private_dirs: tuple[Path, ...]

    def session(self) -> Session:
        """A session of one run: a runtime of its own (its ledger, its budget, its models) over
        the shared set-up. Nothing is read or checked again."""
        runtime = Runtime(
            repo_root=self.repo_root,
            roles=self.roles,
            model_specs=dict(self.specs),
            cache=None if self.options.no_cache else LazyCache(self.runs_dir / CACHE_DIR),
            budget=self.budget,
            timeout=self.run.spawn_timeout,
            policy=RetryPolicy(first_turn_timeout=self.run.first_turn_timeout),
            base_url=self.options.base_url,
            bash_timeout=self.run.bash_timeout,
            private_dirs=self.private_dirs,
            limits=self.limits,
        )
        return Session(runtime, self.limits, self.run, self.runs_dir, self.params)


def set_up(repo_root: Path, options: SessionOptions) -> SetUp:
    """Check every option and setting, read the roles and prompts, resolve the models and find
    where no role reads. Nothing is written: the request cache opens on its first use, after
    the command has checked everything else."""
    params, source = merged_params(repo_root)
    limits = limits_from(params, source)
    run = run_settings(params, source)
    roles = load_roles(repo_root)
    check_prompts(roles, repo_root)
    role_models = parse_role_models(list(options.role_models), roles)
    check_base_url(options.base_url)
    check_budget(options.budget_tokens)
    check_requests(options.max_requests)
    budget = Budget(
        options.budget_tokens, parse_cost(options.max_cost), options.max_requests or run.spawn_requests
    )
    specs = resolve_models(
        roles, ModelOptions(options.model, role_models, options.base_url), params, source=source
    )
    for spec in sorted(set(specs.values())):
        check_spec(spec)
    if options.base_url is None and any(s.startswith("openai") for s in specs.values()):
        check_base_url(os.environ.get("OPENAI_BASE_URL") or None, "OPENAI_BASE_URL")
    given = options.runs_dir or default_runs_dir(repo_root)
    check_runs_link(Path(os.path.abspath(given)))
    runs_dir = given.resolve()
    private = (runs_dir, *byproducts(runs_dir, repo_root), *store_dirs(repo_root))
    return SetUp(repo_root, options, params, limits, run, roles, specs, budget, runs_dir, private)


def open_session(repo_root: Path, options: SessionOptions) -> Session:
    """One run's session (``set_up`` and ``SetUp.session`` at once)."""
    return set_up(repo_root, options).session()


class Sessions:
    """The set-up of each repository (and set of options) a batch or a worker meets, made the
    first time it is met (``set_up``), and a session per run over it: N directories in one
    repository read the roles, the prompts and the settings once and walk the repository once,
    not N times. Each set-up's models are built once, before its first run (``check_models``)."""

    def __init__(self) -> None:
        self._made: dict[tuple[Path, SessionOptions], SetUp] = {}
        self._passed: set[Path] = set()
        self._lock = threading.Lock()
        """A batch plans in a thread while its runs resume on the event loop's."""

    def set_up(self, repo_root: Path, options: SessionOptions) -> SetUp:
        key = (repo_root, options)
        with self._lock:
            if key not in self._made:
                made = set_up(repo_root, options)
                check_models(made.session().runtime)
                self._made[key] = made
            return self._made[key]

    def check_once(self, runs_dir: Path, check: Callable[[Path], None]) -> None:
        """``check(runs_dir)``, unless it passed before: what is checked of a runs directory
        once per process (runs.setup checks its stores)."""
        with self._lock:
            if runs_dir in self._passed:
                return
        check(runs_dir)
        with self._lock:
            self._passed.add(runs_dir)

    def open(self, repo_root: Path, options: SessionOptions) -> Session:
        """A new run's session over its repository's set-up."""
        return self.set_up(repo_root, options).session()


def servers(runtime: Runtime) -> dict[str, str]:
    """The server each configured model talks to, as its provider resolved it (``--base-url``,
    or the provider's own variable: OPENAI_BASE_URL, ANTHROPIC_BASE_URL, OLLAMA_BASE_URL ...)."""
    specs = sorted(set(runtime.model_specs.values()) - {OFFLINE})
    return {spec: str(runtime.provider_model(spec).base_url or "") for spec in specs}


def check_models(runtime: Runtime) -> None:
    """Build each configured model once (its provider, its key) and reach its server, so a model
    that cannot run is refused before a run writes anything rather than when its role is first
    spawned (agents/reach.py)."""
    for spec in sorted(set(runtime.model_specs.values()) - {OFFLINE}):
        runtime.provider_model(spec)
    from pipeline.agents.reach import check_reachable

    check_reachable(runtime)
