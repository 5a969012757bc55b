"""A run's dependencies: what is handed in, never checkpointed, and the one spawn helper.

``RunDeps`` is both graphs' LangGraph context schema: the runner passes it to
``graph.ainvoke(..., context=deps)`` and every node reads it from its ``runtime: Runtime[RunDeps]``
argument (LangGraph's own channel for run-scoped services), never from a module-global or the
checkpointed configuration. It is rebuilt on resume.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from langgraph.runtime import Runtime as GraphRuntime

from pipeline import confinement
from pipeline.agents.resolve import OFFLINE, caches_prompts
from pipeline.agents.roles import workflow_definitions, workflow_overrides
from pipeline.agents.runtime import RoleResult, Runtime
from pipeline.agents.usage import RoleUsage
from pipeline.errors import WiringError
from pipeline.formats.design_dir import DesignDir
from pipeline.formats.kinds import Kind, Role, is_role
from pipeline.formats.slices import Slice, partition_for
from pipeline.formats.spawn_params import SpawnParams
from pipeline.formats.stamp import WorkflowSha
from pipeline.graph.warmup import WarmUp
from pipeline.grounding.claims import Grounding
from pipeline.grounding.index_store import INDEX_DIR
from pipeline.runs.event_log import EventLog
from pipeline.runs.events import ClaimsLedgered, SpawnBegun, Spawned, Wrote
from pipeline.runs.fingerprint import file_digests, written_files
from pipeline.runs.revisions import RevisionStore
from pipeline.runs.snapshot import snapshot_reader
from pipeline.settings import LOCKS_DIR, Limits, RunSettings


@dataclass(slots=True)
class RunDeps:
    """Services a run uses; rebuilt on resume."""

    runtime: Runtime
    design: DesignDir
    limits: Limits
    settings: RunSettings
    events: EventLog
    run_dir: Path
    workflow_sha: WorkflowSha
    warmup: bool = True
    partition: Callable[[Sequence[str], Limits], list[Slice]] = field(default=partition_for)
    warm: WarmUp = field(default_factory=WarmUp)
    """The fan-out's warm-up gates, one per round (graph.warmup)."""
    fence: Callable[[], None] = field(default=lambda: None)
    """Raises LockLost unless the run still holds its directory's lock (graph.watch); called
    right before a write that cannot be taken back (the stamp, the review-log entry)."""
    revisions: RevisionStore | None = None
    """The run store's revisions (None: the local store of the run's runs directory)."""
    requested_by: str = "cli"
    """Who asked for the run: cli, batch, worker or studio (recorded with each revision)."""
    _grounding: Grounding | None = None

    @property
    def grounding(self) -> Grounding:
        """The design's claims resolved against its code root (grounding.claims); the code index is
        built once per run (the run writes no code, and no claim resolves to a design document),
        from the one the runs directory keeps where the code is unchanged (grounding.index_store)."""
        if self._grounding is None:
            store = self.run_dir.parent / INDEX_DIR
            self._grounding = Grounding(self.design.repo_root, self.design.code_root, store=store)
        return self._grounding

    def refresh_claims(self, kind: Kind) -> None:
        """Write the claims ledger of every document a run of ``kind`` writes, from the bytes on
        disk and the code (no model), and record how many claims each holds: when the run
        finishes (graph.finish), pauses at the gate or stops on a budget (graph.runner), so
        the documents it leaves always have their ledgers."""
        counts: dict[str, int] = {}
        notes: list[str] = []
        for path in written_files(self.design, kind):
            if path.is_file():
                resolution, _ = self.grounding.refresh(path)
                counts[self.rel(path)] = len(resolution.ledger.claims)
                notes += resolution.notes
        self.events.emit(ClaimsLedgered(files=counts, notes=sorted(set(notes))))

    def warms_up(self, role: Role) -> bool:
        """Whether a fan-out of ``role`` waits for its first spawn's first answer."""
        spec = self.runtime.model_specs.get(role, OFFLINE)
        return self.warmup and caches_prompts(spec, self.runtime.base_url)

    @property
    def reviews(self) -> Path:
        """This run's own folder of params files: ``_workflow/reviews/<run-id>/`` (names never
        collide across kinds and runs, so each run keeps the record of what its spawns got)."""
        return self.design.reviews / self.run_dir.name

    @property
    def locks(self) -> Path:
        """Where the run's short-lived lock files go: the runs directory's ``locks/``."""
        return self.run_dir.parent / LOCKS_DIR

    def record_wrote(self, kind: Kind) -> None:
        """Record the documents a run of ``kind`` writes as they are now (a ``wrote`` event): a
        later create or final tells designloop's own last writes from a hand edit by them."""
        self.events.emit(Wrote(files=file_digests(self.design, written_files(self.design, kind))))

    def left(self, kind: Kind) -> dict[str, str]:
        """The documents a run of ``kind`` writes, as they are now, by their path in the design
        directory (the review-log entry's record of what the run left)."""
        out: dict[str, str] = {}
        for path in written_files(self.design, kind):
            if path.is_file():
                out[path.relative_to(self.design.root).as_posix()] = hashlib.sha256(
                    confinement.read_bytes(path)
                ).hexdigest()
        return out

    def before(self, path: Path) -> bytes | None:
        """The file as it was when the run started (runs.snapshot); None when it did not exist."""
        return snapshot_reader(self.design, self.run_dir)(path)

    def rel(self, path: Path) -> str:
        return self.design.rel(path)

    def abs(self, rel: str) -> Path:
        return self.design.abs(rel)

    async def spawn(
        self,
        params: SpawnParams,
        index: int | None = None,
        warmup_wait: float | None = None,
        first_answer: Callable[[], None] | None = None,
    ) -> tuple[RoleResult, RoleUsage]:
        """Run one spawn through the spawn contract and record its event; ``first_answer`` is
        told when the spawn's first answer arrives (the fan-out's warm-up). The listeners are
        told, and the event written, in a thread: never on the event loop, and the spawn's event
        is on disk before the caller goes on."""
        spec = self.runtime.model_specs.get(params.role, OFFLINE)
        begun = SpawnBegun(round=params.round, role=params.role, slice=params.slice, model=spec)
        await asyncio.to_thread(self.events.notify, begun)
        result = await self.runtime.spawn(params, self.design, index, self.reviews, first_answer=first_answer)
        role = result.role
        if not is_role(role):
            raise WiringError(f"a spawn ran {role!r}, which is no role of designloop's", hint="report it")
        review = result.review
        await asyncio.to_thread(
            self.events.emit,
            Spawned(
                round=params.round,
                role=role,
                slice=params.slice,
                status=result.status,
                model=result.model,
                cache_hits=result.usage.cache_hits,
                calls=result.usage.calls,
                tokens=result.usage.total_tokens,
                cost_usd=result.usage.cost,
                findings=len(review.findings) if review else 0,
                attempts=result.attempts,
                params=self.rel(result.params_path),
                error=result.error,
                refusals=result.refusals,
                reads=result.reads,
                started=result.started,
                warmup_wait=warmup_wait,
            ),
        )
        return result, RoleUsage(round=params.round, role=result.role, usage=result.usage)


def build_deps(
    runtime: Runtime, design: DesignDir, limits: Limits, settings: RunSettings, run_dir: Path, warmup: bool
) -> RunDeps:
    """A run's services; the workflow SHA covers the definitions the run uses."""
    root = design.repo_root
    sha = WorkflowSha(root, workflow_overrides(root), workflow_definitions(root))
    return RunDeps(
        runtime=runtime,
        design=design,
        limits=limits,
        settings=settings,
        events=EventLog(run_dir),
        run_dir=run_dir,
        workflow_sha=sha,
        warmup=warmup,
    )


RunContext = GraphRuntime[RunDeps]
"""What a node is handed as its ``runtime`` argument: ``runtime.context`` is the run's RunDeps."""
