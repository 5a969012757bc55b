"""Steps 3 to 6 of a round: the mechanical checks, the per-round pair (the auditor fan-out
and the second check), the merge and the dual-clean evaluation."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

from langgraph.types import Send

from pipeline.agents.inputs import AuditSlice, RoundInputs, params_for
from pipeline.agents.resolve import OFFLINE
from pipeline.agents.spawn import prefix_share
from pipeline.checks.engine import CheckRequest, run_checks
from pipeline.errors import WiringError
from pipeline.formats.anchor import anchor_in_file
from pipeline.formats.design_doc import load_design
from pipeline.formats.findings import MECHANICAL, Finding, blocking, merge
from pipeline.formats.kinds import PHASE1
from pipeline.formats.settled import SettledState, SliceAudit, section_hashes, spans_of
from pipeline.formats.slices import assert_fanout
from pipeline.formats.spawn_params import SpawnParams
from pipeline.graph.create.author import fingerprint
from pipeline.graph.create.state import (
    AUDITOR,
    Audit,
    CheckTask,
    Evaluation,
    FanOut,
    Inconclusive,
    Merged,
    RoundHistory,
    RunState,
    SecondCheck,
    SectionSpan,
    SliceTask,
    Update,
    second_role,
)
from pipeline.graph.deps import RunContext, RunDeps
from pipeline.graph.state import RoleReport
from pipeline.runs.check_events import DualCleanCheck, MechanicalCheck
from pipeline.runs.events import Settled, SliceSkipped, Stopped, Warmed


def step3_mechanical_checks(state: RunState, runtime: RunContext) -> Update:
    """Step 3: the mechanical checks on the just-written draft."""
    deps = runtime.context
    if state.author is None or not state.author.draft_ok:
        return {"mechanical": []}
    d = deps.design
    phase1 = state.kind == PHASE1
    companion = d.mechanics if phase1 else d.final_mechanics
    mechanics = companion if (phase1 or state.target == "both") and companion.is_file() else None
    # Phase 1 resolves the plan's **Full design** references; phase 4 skips them (they point
    # at the frozen design.md, not at the final artifact).
    request = CheckRequest(
        design_path=deps.abs(state.draft),
        mechanics_path=mechanics,
        plan_path=d.plan if phase1 and d.plan.is_file() else None,
        plan_dir=d.plan_dir if phase1 and d.plan_dir.is_dir() else None,
        target="both" if mechanics else "design",
        scope="whole-doc",
    )
    findings = [
        f.model_copy(update={"file": deps.rel(Path(f.file))}) if f.file else f
        for f in run_checks(request, deps.limits)
    ]
    # The claim check: names that resolve to nothing, quoted values the cited code lacks.
    for document in (request.design_path, *([mechanics] if mechanics else [])):
        findings += deps.grounding.resolve(document).findings
    deps.events.emit(
        MechanicalCheck(
            round=state.round,
            findings=len(findings),
            blockers=sum(1 for f in findings if f.severity == "blocker"),
            target=request.target,
            scope=request.scope,
            found=findings,
        )
    )
    report = RoleReport(round=state.round, role=MECHANICAL, findings=findings)
    return {"mechanical": findings, "mechanical_target": request.target, "reports": [report]}


def step4_plan_fanout(state: RunState, runtime: RunContext) -> Update:
    """Step 4 (per round): the deterministic partition, the settled-state skips, the self-check."""
    deps = runtime.context
    doc = load_design(deps.abs(state.draft))
    slices = deps.partition(doc.lines, deps.limits)
    try:
        assert_fanout(len(slices), doc.lines, deps.limits)
    except WiringError as exc:
        deps.events.emit(Stopped(message=exc.message))
        raise
    hashes = section_hashes(doc)
    skip = SettledState(dict(state.settled)).skippable(slices, spans_of(doc), hashes)
    for index, (part, skipped) in enumerate(zip(slices, skip, strict=True)):
        if skipped:
            deps.events.emit(SliceSkipped(round=state.round, slice=part, index=index))
    return {
        "fanout": FanOut(
            round=state.round,
            slices=slices,
            skip=skip,
            total_lines=len(doc.lines),
            hashes=hashes,
            sections=[SectionSpan(name=s.name, start=s.start, end=s.end) for s in doc.sections],
            digest=fingerprint(deps.abs(state.draft)),
        )
    }


def route_fanout(state: RunState) -> list[Send]:
    """The per-round pair: one auditor per slice (minus settled ones) and the second check."""
    fan = state.fanout
    assert fan is not None
    sends: list[Send] = []
    first = True
    for index, (part, skipped) in enumerate(zip(fan.slices, fan.skip, strict=True)):
        if skipped:
            continue
        task = SliceTask(
            run_id=state.run_id,
            kind=state.kind,
            round=state.round,
            draft=state.draft,
            index=index,
            slice=part,
            slice_count=len(fan.slices),
            total_lines=fan.total_lines,
            warm=first,
        )
        sends.append(Send("step4_audit_slice", task.model_dump(mode="json")))
        first = False
    check = CheckTask(run_id=state.run_id, kind=state.kind, round=state.round, draft=state.draft)
    sends.append(Send("step4_second_check", check.model_dump(mode="json")))
    return sends


def _inputs(deps: RunDeps, task: SliceTask | CheckTask) -> RoundInputs:
    return RoundInputs(deps.design, task.kind, task.round, deps.abs(task.draft))


async def step4_audit_slice(payload: dict[str, Any], runtime: RunContext) -> Update:
    """One cold readability auditor on one slice; where the provider caches prompts, the
    fan-out's other spawns start once the first one's first answer is in (graph.warmup). The
    params and the findings' anchors read files: in a thread, off the event loop."""
    deps = runtime.context
    task = SliceTask.model_validate(payload)
    slice_ = AuditSlice(task.slice, task.slice_count, task.total_lines)
    params = await asyncio.to_thread(params_for, AUDITOR, _inputs(deps, task), slice_)
    if not deps.warms_up(AUDITOR):
        result, usage = await deps.spawn(params, task.index, warmup_wait=0.0)
    elif task.warm:

        def warmed() -> None:
            deps.events.emit(Warmed(round=task.round))

        async with deps.warm.first(task.round, warmed) as answered:
            result, usage = await deps.spawn(params, task.index, warmup_wait=0.0, first_answer=answered)
    else:
        waited = await deps.warm.wait(task.round, deps.settings.warmup_cap)
        result, usage = await deps.spawn(params, task.index, warmup_wait=waited)
    findings = [f.located(task.draft, AUDITOR) for f in result.review.findings] if result.review else []
    findings = await asyncio.to_thread(anchor_in_file, findings, deps.abs(task.draft))
    audit = Audit(
        round=task.round,
        index=task.index,
        slice=task.slice,
        status=result.status,
        error=result.error,
        findings=findings,
        prompt=result.first_request,
    )
    return {"audits": [audit], "usage": [usage]}


def _second_params(deps: RunDeps, task: CheckTask) -> SpawnParams:
    """The second check's params; a model's fidelity check gets the draft's claims (read from
    the draft and the code)."""
    role = second_role(task.kind)
    inputs = _inputs(deps, task)
    if role == "fidelity-check" and deps.runtime.model_specs.get(role, OFFLINE) != OFFLINE:
        # A model reads the exact code each sentence rests on: the draft's claims and spans.
        ledger = deps.grounding.resolve(inputs.draft).ledger
        inputs = replace(inputs, claims=[e.ref() for e in ledger.claims])
    return params_for(role, inputs)


async def step4_second_check(payload: dict[str, Any], runtime: RunContext) -> Update:
    """The round's second check: absorption at phase 1, fidelity at phase 4. The params and the
    findings' anchors read files: in a thread, off the event loop."""
    deps = runtime.context
    task = CheckTask.model_validate(payload)
    role = second_role(task.kind)
    result, usage = await deps.spawn(await asyncio.to_thread(_second_params, deps, task))
    findings = [f.located(task.draft, role) for f in result.review.findings] if result.review else []
    findings = await asyncio.to_thread(anchor_in_file, findings, deps.abs(task.draft))
    check = SecondCheck(
        round=task.round, role=role, status=result.status, error=result.error, findings=findings
    )
    return {"seconds": [check], "usage": [usage]}


def step5_merge(state: RunState, runtime: RunContext) -> Update:
    """Step 5: the round's auditor and second-check findings, each as one deduplicated list."""
    audits = sorted((a for a in state.audits if a.round == state.round), key=lambda a: a.index)
    seconds = [s for s in state.seconds if s.round == state.round]
    second = seconds[-1] if seconds else None
    failed = [
        Inconclusive(round=a.round, role=AUDITOR, where=f"slice {a.slice[0]}-{a.slice[1]}", error=a.error)
        for a in audits
        if a.status != "ok"
    ]
    if second is None or second.status != "ok":
        role = second.role if second else second_role(state.kind)
        failed.append(Inconclusive(round=state.round, role=role, error=second.error if second else None))
    inconclusive = [f"{i.role} {i.where}".strip() for i in failed]
    return {
        "inconclusive": failed,
        "merged": Merged(
            round=state.round,
            auditor=merge(f for a in audits for f in a.findings),
            second=merge(second.findings) if second else [],
            inconclusive=inconclusive,
            prefix_share=prefix_share([a.prompt for a in audits]) if audits else 1.0,
        ),
    }


def step6_evaluate(state: RunState, runtime: RunContext) -> Update:
    """Step 6: the dual-clean evaluation, with the settled-state filter."""
    deps = runtime.context
    fan, merged = state.fanout, state.merged
    assert fan is not None and merged is not None
    round_ = state.round
    settled = SettledState(dict(state.settled))
    spans = fan.spans()
    kept = settled.filter(fan.hashes, merged.auditor, spans)
    # Settled means an audit of the current bytes came back clean: an INCONCLUSIVE slice
    # settles nothing, and an open finding of a slice keeps the section it is placed on
    # unsettled (every section of that slice when it is placed on none).
    audits = [
        SliceAudit(a.slice, settled.filter(fan.hashes, a.findings, spans))
        for a in state.audits
        if a.round == round_ and a.status == "ok"
    ]
    settled.update(fan.hashes, spans, audits, round_)
    settled.unsettle(fan.hashes, spans, merged.second, round_)
    second: list[Finding] = merged.second
    dual_clean = not blocking(kept) and not blocking(second) and not merged.inconclusive
    share = merged.prefix_share
    deps.events.emit(
        DualCleanCheck(
            round=round_,
            clean=dual_clean,
            auditor=len(blocking(kept)),
            second=len(blocking(second)),
            mechanical=len(blocking(state.mechanical)),
            inconclusive=merged.inconclusive,
            prefix_share=round(share, 4),
            found=kept + second,
        )
    )
    evaluation = Evaluation(
        round=round_,
        dual_clean=dual_clean,
        auditor=kept,
        second=second,
        inconclusive=merged.inconclusive,
        surface=[f for f in second if f.decision_shaped],
        prefix_share=share,
    )
    history = RoundHistory(
        round=round_,
        dual_clean=dual_clean,
        auditor_findings=len(blocking(kept)),
        second_findings=len(blocking(second)),
        skipped_slices=sum(fan.skip),
        slices=len(fan.slices),
        inconclusive=merged.inconclusive,
        prefix_share=round(share, 4),
    )
    deps.events.emit(
        Settled(round=round_, sections=sorted(n for n, r in settled.sections.items() if r.settled))
    )
    return {"evaluation": evaluation, "settled": settled.sections, "history": [history]}
