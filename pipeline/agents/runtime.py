"""Running one role once: the agent, its confined tools, re-run-once-then-INCONCLUSIVE, usage and budget."""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pydantic_ai
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

from pipeline.agents.cache import (
    ATTEMPT,
    RECORDER,
    CachedModel,
    CallLog,
    InFlight,
    RequestCache,
    RuleEngine,
)
from pipeline.agents.confine import LogVersions, Private
from pipeline.agents.models import build_model, describe_failure, settings_for
from pipeline.agents.resolve import OFFLINE
from pipeline.agents.retry import RetryPolicy
from pipeline.agents.roles import RoleDef
from pipeline.agents.spawn import Spawn, prepare
from pipeline.agents.tools import ToolContext, tools_for
from pipeline.agents.usage import Budget, Ledger, Usage
from pipeline.agents.views import bounded_view
from pipeline.errors import InputError
from pipeline.formats.contracts import OUTPUT_TYPES, AuthorOutput, ReviewOutput
from pipeline.formats.design_dir import DesignDir
from pipeline.formats.kinds import Status
from pipeline.formats.spawn_params import SpawnParams
from pipeline.offline.deadline import EngineTimeout, overdue, spawn_deadline
from pipeline.offline.observe import EngineError
from pipeline.settings import Limits

pydantic_ai.BANNER_ENABLED = False  # no vendor banner above designloop's own output


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
    first_request: str = ""
    """The spawn's first request, as sent: a fan-out's shared prefix is measured on these."""

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


FAILURES = (UnexpectedModelBehavior, ValidationError, TimeoutError, ModelAPIError, AgentRunError, EngineError)
"""What makes a spawn fail (re-run once, then INCONCLUSIVE): a model's or the offline engine's."""


@dataclass(slots=True)
class Runtime:
    """Everything a spawn needs that does not change between rounds (the dependencies)."""

    repo_root: Path
    roles: dict[str, RoleDef]
    model_specs: dict[str, str]
    cache: RequestCache | None = None
    budget: Budget = field(default_factory=Budget)
    ledger: Ledger = field(default_factory=Ledger)
    timeout: float = 600.0
    base_url: str | None = None
    http_client: Any = None
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    model_overrides: dict[str, Model] = field(default_factory=dict)
    inflight: InFlight = field(default_factory=InFlight)
    """Requests being asked now: shared by every role, and by every run of a batch."""
    bash_timeout: float = 10.0
    private_dirs: tuple[Path, ...] = ()
    """Directories no role reads (the runs directory: run records, checkpoints, the cache)."""
    limits: Limits = field(default_factory=Limits)
    """The run's settings: the offline auditor's whole-doc guard trips over their floor."""
    _models: dict[str, Model] = field(default_factory=dict)
    _logs: dict[Path, LogVersions] = field(default_factory=dict)
    _built: dict[str, Model] = field(default_factory=dict)
    _preparing: threading.Lock = field(default_factory=threading.Lock)
    """Held while a spawn is prepared: concurrent spawns prepare in threads of their own and
    share the models and research-log versions built once."""

    def provider_model(self, spec: str) -> Model:
        """The provider's model for ``spec``, built once (one client, one connection pool,
        shared by every role that names it)."""
        if spec not in self._built:
            self._built[spec] = build_model(spec, base_url=self.base_url, http_client=self.http_client)
        return self._built[spec]

    def model_for(self, role: str) -> Model:
        if role not in self._models:
            spec = self.model_specs.get(role, OFFLINE)
            base: Model
            if role in self.model_overrides:
                base = self.model_overrides[role]
            elif spec == OFFLINE:
                from pipeline.offline.engines import offline_model

                self._models[role] = RuleEngine(offline_model(role, self.limits))
                return self._models[role]
            else:
                base = self.provider_model(spec)
            self._models[role] = CachedModel(base, self.cache, self.policy, self.inflight)
        return self._models[role]

    def tool_context(
        self,
        spawn: Spawn,
        research_log: Path | None,
        code_root: Path | None = None,
        reviews: Path | None = None,
    ) -> ToolContext:
        role = spawn.role
        forbidden = []
        if role.cold and research_log is not None:
            # Every version seen in this process: a copy made before a rewrite stays refused.
            versions = self._logs.setdefault(research_log, LogVersions(research_log))
            forbidden = versions.current()
        params = spawn.params
        output = Path(params.output_path) if role.writes and params.output_path else None
        both = role.writes and params.target == "both" and params.design_mechanics_path
        companion = Path(params.design_mechanics_path) if both and params.design_mechanics_path else None
        views = self._views(spawn)
        # Every params file but the spawn's own is private (they quote other roles' findings).
        scaffolding = (reviews or spawn.params_path.parent).resolve()
        private = Private(
            tuple(p.resolve() for p in (*self.private_dirs, scaffolding)),
            frozenset({spawn.params_path.resolve()}),
            self.repo_root.resolve(),
        )
        return ToolContext(
            role=role.name,
            repo_root=self.repo_root,
            tools=role.tools,
            output_path=output,
            companion_path=companion,
            forbidden=forbidden,
            views=views,
            bash_timeout=self.bash_timeout,
            code_root=code_root,
            private=private,
            params_path=spawn.params_path,
            reviewed=self._reviewed(spawn),
        )

    def _reviewed(self, spawn: Spawn) -> frozenset[Path]:
        """The design documents a spawn works on: those it reviews, and the one it edits."""
        params = spawn.params
        named = (
            params.target_path,
            params.draft_path,
            params.design_path,
            params.design_mechanics_path,
            params.output_path,
        )
        paths = (Path(p) if Path(p).is_absolute() else self.repo_root / p for p in named if p)
        return frozenset(p.resolve() for p in paths)

    def _views(self, spawn: Spawn) -> dict[Path, frozenset[int] | None] | None:
        """A role that reviews a target reads only its params file and, of the target, its slice
        completed to whole sections (a section the slice boundary cuts is read whole, so a
        measure taken over a section never depends on where the boundary fell), the heading
        lines, the standing anchors (Overview, Core Concepts) and designloop's stamp (a design
        in the seed's shape is told so in every slice, docs/offline.md)."""
        params = spawn.params
        if params.target_path is None:
            return bounded_view(self.repo_root, spawn) if params.scope == "bounded" else None
        target = Path(params.target_path)
        target = (target if target.is_absolute() else self.repo_root / target).resolve()
        views: dict[Path, frozenset[int] | None] = {spawn.params_path.resolve(): None, target: None}
        if params.slice is not None and target.is_file():
            from pipeline.formats.design_doc import load_design

            doc = load_design(target)
            first, last = params.slice
            lines = set(range(first, last + 1))
            for section in doc.sections:
                if section.start <= last and first <= section.end:
                    lines.update(range(section.start, section.end + 1))
            lines.update(h.line for h in doc.structure.headings if h.level <= 2)
            for anchor in doc.anchors():
                lines.update(range(anchor.start, anchor.end + 1))
            if doc.stamped:
                lines.add(1)
            views[target] = frozenset(lines)
        return views

    async def spawn(
        self,
        params: SpawnParams,
        design: DesignDir,
        index: int | None = None,
        reviews: Path | None = None,
        first_answer: Callable[[], None] | None = None,
    ) -> RoleResult:
        """Write the params file, confine the role's tools, run it: the spawn contract, once.
        The preparation reads and writes files, so it runs in a thread, off the event loop;
        ``first_answer`` is told when the spawn's first answer arrives."""
        spawn, ctx = await asyncio.to_thread(self.prepared, params, design, index, reviews)
        return await self.run(spawn, ctx, first_answer)

    def prepared(
        self, params: SpawnParams, design: DesignDir, index: int | None = None, reviews: Path | None = None
    ) -> tuple[Spawn, ToolContext]:
        """The spawn with its params file written, its role's model built and its tools confined."""
        role = self.roles[params.role]
        with self._preparing:
            spawn = prepare(role, params, reviews or design.reviews, design.repo_root, index)
            self.model_for(params.role)
            return spawn, self.tool_context(spawn, design.research_log, design.code_root, design.reviews)

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

    async def run(
        self, spawn: Spawn, ctx: ToolContext, first_answer: Callable[[], None] | None = None
    ) -> RoleResult:
        """Run the spawn; on malformed output or a time-out re-run once, then report INCONCLUSIVE."""
        role = spawn.role
        spec = self.model_specs.get(role.name, OFFLINE)
        if role.name in self.model_overrides:
            spec = self.model_overrides[role.name].model_name
        usage = Usage()
        error: str | None = None
        started = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
        first = ""
        for attempt in (1, 2):
            self.budget.check(self.ledger.total())
            log = CallLog(first_answer=first_answer)
            attempt_token, recorder_token = ATTEMPT.set(attempt), RECORDER.set(log)
            try:
                with self._deadline(role.name, spec):
                    result = await self.agent_for(spawn).run(
                        spawn.prompt,
                        deps=ctx,
                        usage_limits=self.budget.limits(self.ledger.total()),
                        model_settings=settings_for(self.model_for(role.name).system),
                        timeout=self.timeout,
                    )
            except UsageLimitExceeded as exc:
                self._record(usage, log, spawn)
                raise self.budget.stop(role.name, str(exc), usage) from None
            except ModelHTTPError as exc:
                self._record(usage, log, spawn)
                if exc.status_code in (401, 403):
                    raise InputError(
                        f"the provider refused the credentials for {spec} ({exc.status_code})",
                        hint="check the provider's API key variable",
                    ) from None
                error = describe_failure(exc, spec, self.base_url)
                continue
            except FAILURES as exc:
                self._record(usage, log, spawn)
                error = (
                    overdue(role.name, self.timeout)
                    if spec == OFFLINE and isinstance(exc, TimeoutError | EngineTimeout)
                    else describe_failure(exc, spec, self.base_url)
                )
                continue
            finally:
                ATTEMPT.reset(attempt_token)
                RECORDER.reset(recorder_token)
                first = first or log.first_request or ""
                first_answer = log.first_answer  # None once told
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
                first_request=first,
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
            first,
        )

    def _deadline(self, role: str, spec: str) -> AbstractContextManager[object]:
        """An offline spawn's attempt keeps ``spawn_timeout`` itself (offline.deadline): its
        engine runs in a worker thread the agent's own time-out cannot stop."""
        return spawn_deadline(role, self.timeout) if spec == OFFLINE else nullcontext()

    def _record(self, usage: Usage, log: CallLog, spawn: Spawn) -> None:
        spent = Usage()
        spent.add(log)
        usage.merge(spent)
        self.ledger.add(spawn.params.round, spawn.role.name, spent)
