"""Running one role once: the agent, its confined tools, re-run-once-then-INCONCLUSIVE, usage and budget."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

import diskcache
from pydantic import BaseModel, ValidationError
from pydantic_ai import Agent
from pydantic_ai.exceptions import (
    AgentRunError,
    ModelAPIError,
    ModelHTTPError,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
)
from pydantic_ai.models import Model
from pydantic_ai.usage import UsageLimits

from pipeline.agents.cache import ATTEMPT, RECORDER, CachedModel, CallLog, RetryPolicy
from pipeline.agents.models import OFFLINE, build_model, redact, settings_for
from pipeline.agents.roles import RoleDef
from pipeline.agents.spawn import Spawn
from pipeline.agents.tools import ToolContext, forbid, tools_for
from pipeline.errors import DesignloopError, ExitCode, InputError
from pipeline.formats.contracts import OUTPUT_TYPES, AuthorOutput, ReviewOutput

Status = Literal["ok", "inconclusive"]


class BudgetExceeded(DesignloopError):
    """The run's token or cost budget is spent; the run stops cleanly and can resume."""

    exit_code = ExitCode.BUDGET


@dataclass(slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cost: Decimal = Decimal(0)
    calls: int = 0
    cache_hits: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, log: CallLog) -> None:
        for call in log.calls:
            if call.cache_hit:
                self.cache_hits += 1
                continue
            self.calls += 1
            self.input_tokens += call.input_tokens
            self.output_tokens += call.output_tokens
            self.cost += call.cost or Decimal(0)

    def merge(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cost += other.cost
        self.calls += other.calls
        self.cache_hits += other.cache_hits

    def to_json(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
            "cost_usd": str(self.cost),
            "calls": self.calls,
            "cache_hits": self.cache_hits,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Usage:
        return cls(
            int(data["input_tokens"]),
            int(data["output_tokens"]),
            Decimal(str(data["cost_usd"])),
            int(data["calls"]),
            int(data["cache_hits"]),
        )


@dataclass(slots=True)
class Ledger:
    """Tokens and cost per (round, role), and for the whole run."""

    entries: dict[str, Usage] = field(default_factory=lambda: defaultdict(Usage))

    def add(self, round_: int, role: str, usage: Usage) -> None:
        self.entries[f"{round_}:{role}"].merge(usage)

    def total(self) -> Usage:
        out = Usage()
        for usage in self.entries.values():
            out.merge(usage)
        return out

    def to_json(self) -> dict[str, Any]:
        return {key: usage.to_json() for key, usage in sorted(self.entries.items())}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Ledger:
        ledger = cls()
        for key, value in data.items():
            ledger.entries[key] = Usage.from_json(value)
        return ledger


@dataclass(frozen=True, slots=True)
class Budget:
    max_tokens: int | None = None
    max_cost: Decimal | None = None

    def limits(self, spent: Usage) -> UsageLimits:
        tokens = None if self.max_tokens is None else max(0, self.max_tokens - spent.total_tokens)
        cost = None if self.max_cost is None else max(Decimal(0), self.max_cost - spent.cost)
        return UsageLimits(request_limit=60, total_tokens_limit=tokens, cost_limit=cost)

    def check(self, spent: Usage) -> None:
        if self.max_tokens is not None and spent.total_tokens >= self.max_tokens:
            raise BudgetExceeded(
                f"token budget reached: {spent.total_tokens} of {self.max_tokens}",
                hint="resume with a larger --budget; finished calls are cached and not paid again",
            )
        if self.max_cost is not None and spent.cost >= self.max_cost:
            raise BudgetExceeded(
                f"cost budget reached: ${spent.cost} of ${self.max_cost}",
                hint="resume with a larger --max-cost",
            )


@dataclass(slots=True)
class RoleResult:
    role: str
    model: str
    status: Status
    output: ReviewOutput | AuthorOutput | None
    attempts: int
    usage: Usage
    params_path: Path
    error: str | None = None
    refusals: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    started: str = ""
    """When the spawn began (ISO 8601, UTC)."""

    @property
    def review(self) -> ReviewOutput | None:
        return self.output if isinstance(self.output, ReviewOutput) else None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "role": self.role,
            "model": self.model,
            "status": self.status,
            "attempts": self.attempts,
            "usage": self.usage.to_json(),
            "params_path": str(self.params_path),
            "error": self.error,
            "refusals": self.refusals,
        }
        if self.output is not None:
            data["output"] = self.output.model_dump()
        return data


FAILURES = (UnexpectedModelBehavior, ValidationError, TimeoutError, ModelAPIError, AgentRunError)


@dataclass(slots=True)
class Runtime:
    """Everything a spawn needs that does not change between rounds (the dependencies)."""

    repo_root: Path
    roles: dict[str, RoleDef]
    model_specs: dict[str, str]
    cache: diskcache.Cache | None = None
    budget: Budget = field(default_factory=Budget)
    ledger: Ledger = field(default_factory=Ledger)
    timeout: float = 600.0
    base_url: str | None = None
    http_client: Any = None
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    model_overrides: dict[str, Model] = field(default_factory=dict)
    bash_timeout: float = 10.0
    _models: dict[str, Model] = field(default_factory=dict)

    def model_for(self, role: str) -> Model:
        if role not in self._models:
            spec = self.model_specs.get(role, OFFLINE)
            base: Model
            if role in self.model_overrides:
                base = self.model_overrides[role]
            elif spec == OFFLINE:
                from pipeline.offline import offline_model

                base = offline_model(role)
            else:
                base = build_model(spec, base_url=self.base_url, http_client=self.http_client)
            self._models[role] = CachedModel(base, self.cache, self.policy)
        return self._models[role]

    def tool_context(
        self, spawn: Spawn, research_log: Path | None, code_root: Path | None = None
    ) -> ToolContext:
        role = spawn.role
        forbidden = []
        if role.cold and research_log is not None:
            item = forbid(research_log)
            if item is not None:
                forbidden.append(item)
        output = Path(spawn.params.output_path) if role.writes and spawn.params.output_path else None
        views = self._views(spawn)
        return ToolContext(
            role=role.name,
            repo_root=self.repo_root,
            output_path=output,
            forbidden=forbidden,
            views=views,
            bash_timeout=self.bash_timeout,
            code_root=code_root,
        )

    def _views(self, spawn: Spawn) -> dict[Path, frozenset[int] | None] | None:
        """A role that reviews a target reads only its params file and, of the target, its slice,
        the heading lines and the standing anchors (Overview, Core Concepts)."""
        params = spawn.params
        if params.target_path is None:
            return None
        target = Path(params.target_path)
        target = (target if target.is_absolute() else self.repo_root / target).resolve()
        views: dict[Path, frozenset[int] | None] = {spawn.params_path.resolve(): None, target: None}
        if params.slice is not None and target.is_file():
            from pipeline.formats.design_doc import load_design

            doc = load_design(target)
            lines = set(range(params.slice[0], params.slice[1] + 1))
            lines.update(h.line for h in doc.structure.headings if h.level <= 2)
            for anchor in doc.anchors():
                lines.update(range(anchor.start, anchor.end + 1))
            views[target] = frozenset(lines)
        return views

    def agent_for(self, spawn: Spawn) -> Agent[ToolContext, Any]:
        role = spawn.role
        output_type: type[BaseModel] = OUTPUT_TYPES[role.output]
        return Agent(
            self.model_for(role.name),
            output_type=output_type,
            instructions=spawn.instructions,
            deps_type=ToolContext,
            tools=tools_for(role.tools),
            retries={"tools": 2, "output": 0},
            name=role.name,
        )

    async def run(self, spawn: Spawn, ctx: ToolContext) -> RoleResult:
        """Run the spawn; on malformed output or a time-out re-run once, then report INCONCLUSIVE."""
        role = spawn.role
        spec = self.model_specs.get(role.name, OFFLINE)
        if role.name in self.model_overrides:
            spec = self.model_overrides[role.name].model_name
        usage = Usage()
        error: str | None = None
        started = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
        for attempt in (1, 2):
            self.budget.check(self.ledger.total())
            log = CallLog()
            attempt_token, recorder_token = ATTEMPT.set(attempt), RECORDER.set(log)
            try:
                result = await self.agent_for(spawn).run(
                    spawn.prompt,
                    deps=ctx,
                    usage_limits=self.budget.limits(self.ledger.total()),
                    model_settings=settings_for(self.model_for(role.name).system),
                    timeout=self.timeout,
                )
            except UsageLimitExceeded as exc:
                self._record(usage, log, spawn)
                raise BudgetExceeded(
                    f"budget reached during {role.name}: {exc}",
                    hint="resume with a larger budget; finished calls are cached",
                ) from None
            except ModelHTTPError as exc:
                self._record(usage, log, spawn)
                if exc.status_code in (401, 403):
                    raise InputError(
                        f"the provider refused the credentials for {spec} ({exc.status_code})",
                        hint="check the provider's API key variable",
                    ) from None
                error = redact(f"{type(exc).__name__}: {exc}")
                continue
            except FAILURES as exc:
                self._record(usage, log, spawn)
                cause = f" ({' '.join(str(exc.__cause__).split())[:300]})" if exc.__cause__ else ""
                error = redact(f"{type(exc).__name__}: {exc}{cause}")
                continue
            finally:
                ATTEMPT.reset(attempt_token)
                RECORDER.reset(recorder_token)
            self._record(usage, log, spawn)
            return RoleResult(
                role.name,
                spec,
                "ok",
                result.output,
                attempt,
                usage,
                spawn.params_path,
                refusals=list(ctx.refusals),
                reads=list(ctx.reads),
                started=started,
            )
        return RoleResult(
            role.name,
            spec,
            "inconclusive",
            None,
            2,
            usage,
            spawn.params_path,
            error,
            list(ctx.refusals),
            list(ctx.reads),
            started,
        )

    def _record(self, usage: Usage, log: CallLog, spawn: Spawn) -> None:
        spent = Usage()
        spent.add(log)
        usage.merge(spent)
        self.ledger.add(spawn.params.round, spawn.role.name, spent)
