"""Step 4 after the inner loop: the S3 freeze-order gate, the cold comprehension gate, and
the S3 loop-back that sends a decision-shaped finding to the research log."""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
from pathlib import Path

from langgraph.types import interrupt

from pipeline.agents.inputs import NONE, RoundInputs, params_for
from pipeline.agents.runtime import RoleResult
from pipeline.agents.usage import RoleUsage
from pipeline.formats.anchor import anchor_across
from pipeline.formats.findings import Finding, blocking
from pipeline.formats.research_log import load_research_log
from pipeline.formats.research_log_edits import surface_decision
from pipeline.formats.review_file import write_review_file
from pipeline.formats.settled import SettledState
from pipeline.formats.spawn_params import SpawnParams
from pipeline.graph.create.author import fingerprint
from pipeline.graph.create.state import (
    COMPREHENSION,
    Comprehension,
    Inconclusive,
    RunState,
    Surfaced,
    Update,
    second_role,
)
from pipeline.graph.deps import RunContext, RunDeps
from pipeline.graph.state import RoleReport
from pipeline.runs.check_events import ComprehensionCheck, GateCheck
from pipeline.runs.events import Surfaced as SurfacedEvent


def step4_s3_gate(state: RunState, runtime: RunContext) -> Update:
    """The S3 freeze-order gate: the comprehension gate waits for a resolved adversarial gate.

    The interrupt comes first and the node has no side effect, so a resume simply re-reads
    the research log and either passes or pauses again.
    """
    deps = runtime.context
    gate = load_research_log(deps.design.research_log).gate()
    while gate.state != "resolved":
        interrupt({"gate": gate.to_json(), "research_log": deps.rel(deps.design.research_log)})
        gate = load_research_log(deps.design.research_log).gate()
    deps.events.emit(GateCheck(round=state.round, state="resolved"))
    return {}


def companions(state: RunState, deps: RunDeps) -> list[Path]:
    """The companion the comprehension gate reads beside the draft, when there is one."""
    inputs = RoundInputs(deps.design, state.kind, state.round, deps.abs(state.draft), target=state.target)
    named = params_for(COMPREHENSION, inputs).design_mechanics_path
    return [deps.abs(named)] if named and named != NONE and deps.abs(named).is_file() else []


async def step4_comprehension_gate(state: RunState, runtime: RunContext) -> Update:
    """Step 4: the cold comprehension gate, once, after dual-clean (and, at phase 1, the S3 gate).
    What comes before and after the spawn reads and writes files: in a thread, off the event
    loop."""
    deps = runtime.context
    params, files, digest = await asyncio.to_thread(_gate_params, state, deps)
    result, usage = await deps.spawn(params)
    return await asyncio.to_thread(_gate_read, state, deps, params, files, digest, result, usage)


Files = list[tuple[str, Path]]


def _gate_params(state: RunState, deps: RunDeps) -> tuple[SpawnParams, Files, str | None]:
    """The gate's params, the files it reads (the draft, and its companion when there is one)
    and their fingerprint before the spawn."""
    inputs = RoundInputs(deps.design, state.kind, state.round, deps.abs(state.draft), target=state.target)
    params = params_for(COMPREHENSION, inputs)
    files = [(state.draft, deps.abs(state.draft))] + [(deps.rel(p), p) for p in companions(state, deps)]
    return params, files, fingerprint(*(path for _, path in files))


def _gate_read(
    state: RunState,
    deps: RunDeps,
    params: SpawnParams,
    files: Files,
    digest: str | None,
    result: RoleResult,
    usage: RoleUsage,
) -> Update:
    """What the gate found: its findings anchored in the files it read, its review file, its
    check event, and the sections its open findings keep unsettled."""
    round_ = state.round
    review = result.review
    findings = [f.located(role=COMPREHENSION) for f in review.findings] if review else []
    findings = anchor_across(findings, files)
    if params.output_path is not None and review is not None:
        write_review_file(deps.abs(params.output_path), review)
    verdict = review.verdict if review else "INCONCLUSIVE"
    deps.events.emit(
        ComprehensionCheck(round=round_, verdict=verdict, findings=len(blocking(findings)), found=findings)
    )
    comprehension = Comprehension(
        round=round_,
        status=result.status,
        verdict=verdict,
        error=result.error,
        findings=findings,
        output_path=params.output_path,
        digest=digest,
    )
    report = RoleReport(round=round_, role=COMPREHENSION, status=result.status, findings=findings)
    update: Update = {"comprehension": comprehension, "usage": [usage], "reports": [report]}
    fan = state.fanout
    if fan is not None and blocking(findings):
        # A whole-doc role's open finding keeps its section (or, placed on none, the whole
        # document) unsettled: the next round's auditors read it again.
        settled = SettledState(dict(state.settled))
        own = [f if f.file in (None, state.draft) else f.model_copy(update={"line": None}) for f in findings]
        settled.unsettle(fan.hashes, fan.spans(), own, round_)
        update["settled"] = settled.sections
    if result.status != "ok":
        update["inconclusive"] = [Inconclusive(round=round_, role=COMPREHENSION, error=result.error)]
    return update


def decision_shaped(state: RunState) -> list[Finding]:
    """This round's decision-shaped findings, from the comprehension gate and the second check."""
    out: list[Finding] = []
    comprehension = state.this_round_comprehension()
    if comprehension is not None:
        out += [f for f in comprehension.findings if f.decision_shaped]
    evaluation = state.this_round_evaluation()
    if evaluation is not None:
        role = second_role(state.kind)
        out += [f.located(role=role) for f in evaluation.surface]
    return out


def step4_surface_decision(state: RunState, runtime: RunContext) -> Update:
    """A decision-shaped finding goes to the research log and re-opens the adversarial gate."""
    deps = runtime.context
    surfaced = []
    for finding in decision_shaped(state):
        role = finding.role or "reviewer"
        key = hashlib.sha256(f"{finding.quote}|{finding.message}".encode()).hexdigest()[:10]
        marker = f"run {state.run_id}, finding {key}"
        number = surface_decision(
            deps.design.research_log, role, finding.quote, finding.message, marker, dt.date.today()
        )
        surfaced.append(
            Surfaced(round=state.round, role=role, decision=number, marker=marker, message=finding.message)
        )
        deps.events.emit(
            SurfacedEvent(round=state.round, role=role, decision=number, message=finding.message)
        )
    return {"surfaced": surfaced}
