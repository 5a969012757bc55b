"""After the inner loop: the S3 freeze-order gate, the comprehension gate, surfacing decisions,
the outcome, the review log, the stamp and the presentation."""

from __future__ import annotations

import datetime as dt
import difflib
import hashlib
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import interrupt

from pipeline.agents.inputs import write_review_file
from pipeline.agents.spawn import SpawnParams, prepare
from pipeline.formats.design_doc import load_design
from pipeline.formats.research_log import load_research_log
from pipeline.formats.review_log import MutationEntry, append_entry
from pipeline.formats.stamp import has_stamp, prepend_stamp
from pipeline.formats.surface import surface_decision as append_surfaced
from pipeline.formats.textio import atomic_write
from pipeline.graph.loop import _base, _spawn_event, _usage, deps_of
from pipeline.graph.state import PHASE1, PHASE4, RunState, blocking

PASS, BLOCKER_REMAINS, SHOULD_FIX_REMAINS = "PASS", "BLOCKER REMAINS", "SHOULD-FIX REMAINS"


def s3_gate(state: RunState, config: RunnableConfig) -> dict[str, Any]:
    """The S3 freeze-order gate: the comprehension gate waits for a resolved adversarial gate.

    The interrupt comes first and the node has no side effect, so a resume simply re-reads
    the research log and either passes or pauses again.
    """
    deps = deps_of(config)
    gate = load_research_log(deps.design.research_log).gate()
    while gate.state != "resolved":
        interrupt({"gate": gate.to_json(), "research_log": deps.rel(deps.design.research_log)})
        gate = load_research_log(deps.design.research_log).gate()
    deps.events.emit("check", round=state["round"], check="s3-gate", state="resolved")
    return {}


async def step4_comprehension_gate(state: RunState, config: RunnableConfig) -> dict[str, Any]:
    """Step 4: the cold comprehension gate, once, after dual-clean (and, at phase 1, the S3 gate)."""
    deps = deps_of(config)
    d, round_ = deps.design, state["round"]
    params: dict[str, Any] = _base(state, deps, "comprehension-review") | {
        "design_path": state["draft"],
        "scope": "whole-doc",
        "mutation_kind": state["kind"],
    }
    if state["kind"] == PHASE1 and d.mechanics.is_file():
        params["design_mechanics_path"] = deps.rel(d.mechanics)
    output = None
    if state["kind"] == PHASE4:
        output = d.reviews / state["run_id"] / f"r{round_}-comprehension-review.md"
        params["output_path"] = deps.rel(output)
    spawn = prepare(deps.runtime.roles["comprehension-review"], SpawnParams(**params), d.reviews, d.repo_root)
    result = await deps.runtime.run(spawn, deps.runtime.tool_context(spawn, d.research_log, d.code_root))
    _spawn_event(deps, result, round_)
    findings = [f.model_dump() for f in result.review.findings] if result.review else []
    if output is not None and result.review is not None:
        write_review_file(output, result.review)
    verdict = result.review.verdict if result.review else "INCONCLUSIVE"
    deps.events.emit(
        "check", round=round_, check="comprehension", verdict=verdict, findings=len(blocking(findings))
    )
    return {
        "comprehension": {
            "round": round_,
            "status": result.status,
            "verdict": verdict,
            "error": result.error,
            "findings": findings,
            "output_path": deps.rel(output) if output else None,
        },
        "usage": [_usage(result, round_)],
    }


def _decision_shaped(state: RunState) -> list[tuple[str, dict[str, Any]]]:
    out = []
    comprehension = state.get("comprehension") or {}
    if comprehension.get("round") == state["round"]:
        out += [
            ("comprehension-review", f) for f in comprehension.get("findings", []) if f.get("decision_shaped")
        ]
    evaluation = state.get("evaluation") or {}
    if evaluation.get("round") == state["round"]:
        role = "absorption-check" if state["kind"] == PHASE1 else "fidelity-check"
        out += [(role, f) for f in evaluation.get("surface", [])]
    return out


def surface_decision(state: RunState, config: RunnableConfig) -> dict[str, Any]:
    """A decision-shaped finding goes to the research log and re-opens the adversarial gate."""
    deps = deps_of(config)
    surfaced = []
    for role, finding in _decision_shaped(state):
        key = hashlib.sha256(f"{finding.get('quote')}|{finding['message']}".encode()).hexdigest()[:10]
        marker = f"run {state['run_id']}, finding {key}"
        number = append_surfaced(
            deps.design.research_log, role, finding.get("quote"), finding["message"], marker, dt.date.today()
        )
        surfaced.append(
            {
                "round": state["round"],
                "role": role,
                "decision": number,
                "marker": marker,
                "message": finding["message"],
            }
        )
        deps.events.emit(
            "surfaced", round=state["round"], role=role, decision=number, message=finding["message"]
        )
    return {"surfaced": surfaced}


def finish(state: RunState, config: RunnableConfig) -> dict[str, Any]:
    """The outcome: PASS, BLOCKER REMAINS or SHOULD-FIX REMAINS, and what remains."""
    deps = deps_of(config)
    remaining: list[dict[str, Any]] = []
    author = state.get("author", {})
    if not author.get("draft_ok"):
        remaining.append(
            {
                "severity": "blocker",
                "rule": "author-no-draft",
                "section": None,
                "message": "the author wrote no draft twice; the loop has no draft to review",
            }
        )
    remaining += blocking(state.get("mechanical", []))
    evaluation = state.get("evaluation") or {}
    # An evaluation of this round exists only if this round's draft passed the mechanical checks.
    if evaluation.get("round") == state["round"]:
        remaining += blocking(evaluation.get("auditor", [])) + blocking(evaluation.get("second", []))
        remaining += [
            {
                "severity": "should-fix",
                "rule": "inconclusive",
                "section": None,
                "message": f"{name} was INCONCLUSIVE twice; the round could not be declared clean",
            }
            for name in evaluation.get("inconclusive", [])
        ]
    comprehension = state.get("comprehension") or {}
    if comprehension.get("round") == state["round"]:
        remaining += blocking(comprehension.get("findings", []))
        if comprehension.get("status") != "ok":
            remaining.append(
                {
                    "severity": "should-fix",
                    "rule": "inconclusive",
                    "section": None,
                    "message": "comprehension-review was INCONCLUSIVE twice",
                }
            )
    passed = comprehension.get("round") == state["round"] and comprehension.get("verdict") == "PASS"
    if any(f["severity"] == "blocker" for f in remaining):
        outcome = BLOCKER_REMAINS
    elif remaining or not passed:
        outcome = SHOULD_FIX_REMAINS
    else:
        outcome = PASS
    deps.events.emit(
        "check", round=state["round"], check="outcome", outcome=outcome, remaining=len(remaining)
    )
    return {"outcome": outcome, "remaining": remaining}


def _diff_summary(state: RunState, deps: Any) -> str:
    path = deps.abs(state["draft"])
    if not path.is_file() or path.stat().st_size == 0:
        return f"The author wrote no {path.name}; nothing was created over {state['round']} round(s)."
    doc = load_design(path)
    body = [s.name for s in doc.body_sections()]
    records = len(doc.d_records())
    verb = "Created" if state["kind"] == PHASE1 else "Created the final design"
    source = (
        "the research log"
        if state["kind"] == PHASE1
        else "the frozen design, the track episodes and the code"
    )
    return (
        f"{verb} {deps.abs(state['draft']).name} from {source}: {len(doc.lines)} lines, {len(body)} body "
        f"section(s), {records} decision record(s), over {state['round']} round(s)."
    )


def step7_review_log(state: RunState, config: RunnableConfig) -> dict[str, Any]:
    """Step 7: append the review-log entry, exactly once per run."""
    deps = deps_of(config)
    mechanical = state.get("mechanical", [])
    evaluation = state.get("evaluation") or {}
    cold = len(blocking(evaluation.get("auditor", []))) + len(
        blocking((state.get("comprehension") or {}).get("findings", []))
    )
    remaining = state.get("remaining", [])
    items = [
        f"{f['severity']}: {f['rule']}"
        + (f' §"{f["section"]}"' if f.get("section") else "")
        + f": {f['message']}"
        for f in remaining
    ]
    items += [f"note: {n}" for n in state.get("notes", [])]
    items += [
        f"surfaced: D{s['decision']} by {s['role']} (research log; the adversarial gate re-opened)"
        for s in state.get("surfaced", [])
        if s.get("decision")
    ]
    if state["outcome"] == "SHOULD-FIX REMAINS":
        items.append("debt: the should-fix findings above carry forward to the next mutation")
    entry = MutationEntry(
        kind=state["kind"],
        target_file=deps.abs(state["draft"]).name,
        diff_summary=_diff_summary(state, deps),
        mechanical_target="design",
        mechanical="PASS" if not mechanical else f"{len(mechanical)} findings",
        cold_read_scope="whole-doc",
        cold_read="PASS" if not cold else f"{cold} findings",
        findings=items,
        iteration=state["round"],
        budget=state["budget"],
        outcome=state["outcome"],
    )
    result = append_entry(deps.design.mutations, entry, run_id=state["run_id"])
    deps.events.emit("review_log", entry=result.number, appended=result.appended)
    return {"review_entry": result.number}


def stamp(state: RunState, config: RunnableConfig) -> dict[str, Any]:
    """Phase 1 only: the idempotent line-1 workflow-sha stamp. Phase 4 artifacts are never stamped."""
    deps = deps_of(config)
    if state["kind"] != PHASE1:
        return {"stamped": False}
    path = deps.abs(state["draft"])
    if not path.is_file() or path.stat().st_size == 0:
        return {"stamped": False}  # nothing was written: there is nothing to stamp
    wrote = prepend_stamp(path, deps.workflow_sha)
    deps.events.emit("stamp", path=deps.rel(path), wrote=wrote)
    return {"stamped": has_stamp(path)}


def step9_present(state: RunState, config: RunnableConfig) -> dict[str, Any]:
    """Step 9: the diff, the review-log entry and a one-line outcome, saved with the run."""
    deps = deps_of(config)
    path = deps.abs(state["draft"])
    before_path = deps.run_dir / "before.md"
    before = before_path.read_text(encoding="utf-8").splitlines(keepends=True) if before_path.exists() else []
    after = path.read_text(encoding="utf-8").splitlines(keepends=True) if path.is_file() else []
    diff = "".join(difflib.unified_diff(before, after, f"a/{deps.rel(path)}", f"b/{deps.rel(path)}"))
    log = deps.design.mutations.read_text(encoding="utf-8")
    marker = f"## Mutation {state['review_entry']} —"
    entry = log[log.find(marker) :] if marker in log else ""
    entry = entry.split("\n## Mutation ", 1)[0].rstrip() + "\n"
    line = {
        "PASS": "PASS",
        "BLOCKER REMAINS": "BLOCKER REMAINS — manual resolution required",
        "SHOULD-FIX REMAINS": "COMPLETE WITH SHOULD-FIX FINDINGS",
    }[state["outcome"]]
    summary = (
        f"# {state['kind']} {state['run_id']}\n\n## Diff\n\n```diff\n{diff}```\n\n## Review log\n\n"
        f"{entry}\n## Outcome\n\n{line}\n"
    )
    atomic_write(deps.run_dir / "summary.md", summary)
    deps.events.emit(
        "outcome",
        outcome=state["outcome"],
        line=line,
        rounds=state["round"],
        review_log_entry=state["review_entry"],
    )
    return {"summary": line}
