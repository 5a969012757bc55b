"""One role, once, on a design directory, with the params it would get in round 1."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.agents.runtime import RoleResult, Runtime
from pipeline.agents.spawn import SpawnParams, prefix_share, prepare
from pipeline.errors import InputError
from pipeline.formats.contracts import ReviewOutput
from pipeline.formats.design_dir import DesignDir
from pipeline.formats.design_doc import load_design
from pipeline.formats.research_log import append_gate_entry
from pipeline.formats.slices import partition_for
from pipeline.settings import Limits

REVIEW_KIND = {"fidelity-check": "phase4-creation"}


@dataclass(frozen=True, slots=True)
class ReviewRun:
    results: list[RoleResult]
    prefix_share: float
    gate_entry: str | None = None


def _rel(path: Path, root: Path) -> str:
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def round1_params(
    role: str, d: DesignDir, run_id: str, limits: Limits, draft: Path | None, slice_: tuple[int, int] | None
) -> list[SpawnParams]:
    root = d.repo_root
    kind = REVIEW_KIND.get(role, "phase1-creation")
    final = draft is not None and draft.name.endswith("-final.md")
    if final:
        kind = "phase4-creation"
    target = draft or (d.final if kind == "phase4-creation" else d.design)
    base: dict[str, Any] = {
        "run_id": run_id,
        "role": role,
        "kind": kind,
        "round": 1,
        "code_root": _rel(d.code_root, root),
    }
    if role == "design-author":
        extra: dict[str, Any] = {"target": "design", "output_path": _rel(target, root)}
        if kind == "phase4-creation":
            extra |= {"design_path": _rel(d.design, root), "episodes_path": _rel(d.plan_dir, root)}
        else:
            extra["research_log_path"] = _rel(d.research_log, root)
        return [SpawnParams(**base, **extra)]
    if not target.is_file():
        raise InputError("no draft to review", file=target, hint="write it first, or pass --draft PATH")
    if role == "readability-auditor":
        lines = load_design(target).lines
        partition = partition_for(lines, limits)
        parts = [slice_] if slice_ else partition
        return [
            SpawnParams(
                **base,
                target="design",
                target_path=_rel(target, root),
                slice=part,
                slice_count=len(partition),
                total_lines=len(lines),
            )
            for part in parts
        ]
    if role == "absorption-check":
        return [
            SpawnParams(
                **base,
                target="design",
                research_log_path=_rel(d.research_log, root),
                draft_path=_rel(target, root),
            )
        ]
    if role == "fidelity-check":
        return [
            SpawnParams(
                **base,
                draft_path=_rel(target, root),
                episodes_path=_rel(d.plan_dir, root),
                design_path=_rel(d.design, root),
            )
        ]
    if role == "comprehension-review":
        review: dict[str, Any] = {
            "design_path": _rel(target, root),
            "scope": "whole-doc",
            "mutation_kind": kind,
        }
        if d.mechanics.exists() and not final:
            review["design_mechanics_path"] = _rel(d.mechanics, root)
        if kind == "phase4-creation":
            review["output_path"] = _rel(d.reviews / run_id / "comprehension-review.md", root)
        return [SpawnParams(**base, **review)]
    if role == "adversarial-review":
        return [SpawnParams(**base, research_log_path=_rel(d.research_log, root))]
    if role == "inline-editor":
        return [
            SpawnParams(
                **base, output_path=_rel(target, root), mutation_kind="content-edit", flagged_passages=[]
            )
        ]
    raise InputError(f"unknown role {role!r}")


async def review_once(
    runtime: Runtime,
    role: str,
    d: DesignDir,
    limits: Limits,
    draft: Path | None = None,
    slice_: tuple[int, int] | None = None,
    run_id: str | None = None,
) -> ReviewRun:
    if role not in runtime.roles:
        raise InputError(f"unknown role {role!r}", hint=f"roles: {', '.join(sorted(runtime.roles))}")
    run_id = run_id or "review-" + uuid.uuid4().hex[:8]
    definition = runtime.roles[role]
    spawns = [
        prepare(definition, params, d.reviews, d.repo_root, index=i if len(ps) > 1 else None)
        for ps in [round1_params(role, d, run_id, limits, draft, slice_)]
        for i, params in enumerate(ps)
    ]
    results = []
    for spawn in spawns:
        ctx = runtime.tool_context(spawn, d.research_log, d.code_root)
        results.append(await runtime.run(spawn, ctx))
    entry = None
    if role == "adversarial-review" and results[0].review is not None:
        entry = append_gate_entry(d.research_log, dt.date.today(), results[0].review)
    if role == "comprehension-review" and spawns[0].params.output_path and results[0].review is not None:
        write_review_file(d.repo_root / spawns[0].params.output_path, results[0].review)
    return ReviewRun(results, prefix_share([s.full_text for s in spawns]), entry)


def write_review_file(path: Path, review: ReviewOutput) -> None:
    """Persist a review to a file on a read-only role's behalf (the phase-4 output_path)."""
    from pipeline.formats.textio import atomic_write

    lines = [f"Verdict: {review.verdict}", "", "## Structural findings", ""]
    for f in review.findings:
        where = f' §"{f.section}"' if f.section else ""
        lines.append(f"- {f.severity} [{f.rule}]{where}: {f.message}")
    if not review.findings:
        lines.append("- none")
    atomic_write(path, "\n".join(lines) + "\n")
