"""The graph's state (what changes across rounds) and its dependencies (what is handed in)."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypedDict

from pipeline.agents.runtime import Runtime
from pipeline.formats.design_dir import DesignDir
from pipeline.formats.slices import Slice, partition_for
from pipeline.formats.stamp import WorkflowSha
from pipeline.runs.events import EventLog
from pipeline.settings import Limits, RunSettings

PHASE1 = "phase1-creation"
PHASE4 = "phase4-creation"


class RunState(TypedDict, total=False):
    run_id: str
    kind: str
    round: int
    budget: int
    draft: str
    author: dict[str, Any]
    author_failures: int
    flagged: list[dict[str, Any]]
    mechanical: list[dict[str, Any]]
    fanout: dict[str, Any]
    audits: Annotated[list[dict[str, Any]], operator.add]
    seconds: Annotated[list[dict[str, Any]], operator.add]
    evaluation: dict[str, Any]
    settled: dict[str, Any]
    comprehension: dict[str, Any]
    surfaced: Annotated[list[dict[str, Any]], operator.add]
    notes: Annotated[list[str], operator.add]
    usage: Annotated[list[dict[str, Any]], operator.add]
    history: Annotated[list[dict[str, Any]], operator.add]
    outcome: str
    remaining: list[dict[str, Any]]
    review_entry: int
    stamped: bool
    summary: str


@dataclass(slots=True)
class RunDeps:
    """Services a run uses; never checkpointed, rebuilt on resume."""

    runtime: Runtime
    design: DesignDir
    limits: Limits
    settings: RunSettings
    events: EventLog
    run_dir: Path
    workflow_sha: WorkflowSha
    warmup: bool = True
    partition: Callable[[Sequence[str], Limits], list[Slice]] = field(default=partition_for)

    def rel(self, path: Path) -> str:
        root = self.design.repo_root
        return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)

    def abs(self, rel: str) -> Path:
        path = Path(rel)
        return path if path.is_absolute() else self.design.repo_root / path


def blocking(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f for f in findings if f.get("severity") in ("blocker", "should-fix")]


def this_round(items: list[dict[str, Any]], round_: int) -> list[dict[str, Any]]:
    return [i for i in items if i.get("round") == round_]


def build_deps(
    runtime: Runtime, design: DesignDir, limits: Limits, settings: RunSettings, run_dir: Path, warmup: bool
) -> RunDeps:
    """A run's services; the workflow SHA covers the agents and prompts the run uses."""
    from pipeline.agents.roles import workflow_paths

    sha = WorkflowSha(design.repo_root, [p for p in workflow_paths(design.repo_root) if p.exists()])
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
