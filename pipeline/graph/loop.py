"""The dual-clean inner loop: author, mechanical checks, the per-round pair, evaluation.

Node names are the seed's steps. Each node reads its services from the run's RunDeps and
returns only state updates; files it writes are the draft (through the author) and params
files (through the spawn contract).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import Send

from pipeline.agents.runtime import RoleResult
from pipeline.agents.spawn import FlaggedPassage, SpawnParams, prefix_share, prepare
from pipeline.checks.engine import CheckRequest, run_checks
from pipeline.errors import WiringError
from pipeline.formats.design_doc import load_design
from pipeline.formats.findings import WIRING_ERROR, Finding
from pipeline.formats.settled import SettledState, section_hashes
from pipeline.formats.slices import assert_fanout
from pipeline.graph.state import PHASE1, RunDeps, RunState, blocking, this_round

INLINE_DRAFT_CHARS = 1500


def deps_of(config: RunnableConfig) -> RunDeps:
    configurable = config.get("configurable", {})
    deps = configurable.get("deps")
    if isinstance(deps, RunDeps):
        return deps
    from pipeline.graph.studio import deps_from_configurable

    built = deps_from_configurable(configurable)
    if built is None:
        raise WiringError(
            "the graph was run without its dependencies",
            hint="pass configurable.deps, or configurable.directory (LangGraph Studio)",
        )
    return built


def _usage(result: RoleResult, round_: int) -> dict[str, Any]:
    return {"round": round_, "role": result.role, **result.usage.to_json()}


def _spawn_event(
    deps: RunDeps, result: RoleResult, round_: int, slice_: list[int] | None = None, **extra: Any
) -> None:
    findings = len(result.review.findings) if result.review else 0
    deps.events.emit(
        "spawn",
        round=round_,
        role=result.role,
        slice=slice_,
        status=result.status,
        model=result.model,
        cache_hits=result.usage.cache_hits,
        calls=result.usage.calls,
        tokens=result.usage.total_tokens,
        cost_usd=str(result.usage.cost),
        findings=findings,
        attempts=result.attempts,
        params=deps.rel(result.params_path),
        error=result.error,
        refusals=result.refusals,
        reads=result.reads,
        started=result.started,
        **extra,
    )


def _base(state: RunState, deps: RunDeps, role: str) -> dict[str, Any]:
    return {
        "run_id": state["run_id"],
        "role": role,
        "kind": state["kind"],
        "round": state["round"],
        "code_root": deps.rel(deps.design.code_root),
    }


def _flagged(items: list[dict[str, Any]]) -> list[FlaggedPassage]:
    keys = FlaggedPassage.model_fields
    return [FlaggedPassage(**{k: v for k, v in item.items() if k in keys}) for item in items]


def step1_seed_scope(state: RunState, config: RunnableConfig) -> dict[str, Any]:
    """Step 1 (before the author): settle the target file and the loop's budget for this kind."""
    deps = deps_of(config)
    kind = state.get("kind") or PHASE1
    target = deps.design.design if kind == PHASE1 else deps.design.final
    defaults: dict[str, Any] = {
        "kind": kind,
        "round": 1,
        "budget": deps.limits.iteration_budget,
        "draft": deps.rel(target),
        "author_failures": 0,
        "flagged": [],
        "settled": {},
    }
    return {key: value for key, value in defaults.items() if key not in state}


async def step1_author(state: RunState, config: RunnableConfig) -> dict[str, Any]:
    """Step 1: the code-grounded author writes the draft to output_path and returns a summary."""
    deps = deps_of(config)
    d, round_ = deps.design, state["round"]
    deps.events.emit("round", round=round_, budget=state["budget"])
    draft = deps.abs(state["draft"])
    params = _base(state, deps, "design-author") | {"target": "design", "output_path": state["draft"]}
    if state["kind"] == PHASE1:
        params["research_log_path"] = deps.rel(d.research_log)
    else:
        params |= {"design_path": deps.rel(d.design), "episodes_path": deps.rel(d.plan_dir)}
    flagged = state.get("flagged") or []
    if round_ > 1 and flagged and draft.is_file():
        params["flagged_passages"] = _flagged(flagged)
    spawn = prepare(deps.runtime.roles["design-author"], SpawnParams(**params), d.reviews, d.repo_root)
    before = _fingerprint(draft)
    result = await deps.runtime.run(spawn, deps.runtime.tool_context(spawn, d.research_log, d.code_root))
    _spawn_event(deps, result, round_)
    # A failed author that left the file as it was wrote no draft, whatever an earlier run left there.
    written = result.status == "ok" or _fingerprint(draft) != before
    draft_ok = draft.is_file() and draft.stat().st_size > 0 and written
    notes = []
    summary = getattr(result.output, "summary", "") if result.output else ""
    if draft_ok and (len(summary) > INLINE_DRAFT_CHARS or "\n## " in summary):
        notes.append(
            f"round {round_}: the author returned the draft inline instead of a summary; "
            "the run used the file on disk (contract violation)"
        )
    if draft_ok and result.status != "ok":
        notes.append(
            f"round {round_}: the author's output was INCONCLUSIVE ({result.error}); "
            "the run used the draft on disk"
        )
    failures = state.get("author_failures", 0) + (0 if draft_ok else 1)
    return {
        "author": {
            "round": round_,
            "draft_ok": draft_ok,
            "status": result.status,
            "summary": summary[:500],
            "error": result.error,
        },
        "author_failures": failures,
        "usage": [_usage(result, round_)],
        "notes": notes,
    }


def _fingerprint(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def step3_mechanical_checks(state: RunState, config: RunnableConfig) -> dict[str, Any]:
    """Step 3: the mechanical checks on the just-written draft."""
    deps = deps_of(config)
    if not state["author"]["draft_ok"]:
        return {"mechanical": []}
    d = deps.design
    mechanics = d.mechanics if state["kind"] == PHASE1 and d.mechanics.is_file() else None
    request = CheckRequest(
        design_path=deps.abs(state["draft"]),
        mechanics_path=mechanics,
        target="both" if mechanics else "design",
        scope="whole-doc",
    )
    findings = [f.to_json() for f in run_checks(request, deps.limits)]
    deps.events.emit(
        "check",
        round=state["round"],
        check="mechanical",
        findings=len(findings),
        blockers=sum(1 for f in findings if f["severity"] == "blocker"),
    )
    return {"mechanical": findings}


def respawn_author(state: RunState, config: RunnableConfig) -> dict[str, Any]:
    """A mechanical-first (or no-draft) re-spawn of the author: it consumes a round."""
    mechanical = [f for f in state.get("mechanical", []) if f["severity"] == "blocker"]
    return {"round": state["round"] + 1, "flagged": mechanical}


def step4_plan_fanout(state: RunState, config: RunnableConfig) -> dict[str, Any]:
    """Step 4 (per round): the deterministic partition, the settled-state skips, the self-check."""
    deps = deps_of(config)
    doc = load_design(deps.abs(state["draft"]))
    slices = deps.partition(doc.lines, deps.limits)
    try:
        assert_fanout(len(slices), len(doc.lines), deps.limits)
    except WiringError as exc:
        deps.events.emit("stopped", message=exc.message)
        raise
    hashes = section_hashes(doc)
    settled = SettledState.from_json(state.get("settled") or {})
    skip = settled.skippable(slices, doc, hashes)
    for index, (part, skipped) in enumerate(zip(slices, skip, strict=True)):
        if skipped:
            deps.events.emit("slice_skipped", round=state["round"], slice=list(part), index=index)
    return {
        "fanout": {
            "round": state["round"],
            "slices": [list(s) for s in slices],
            "skip": skip,
            "total_lines": len(doc.lines),
            "hashes": hashes,
            "sections": [[sec.name, sec.start, sec.end] for sec in doc.sections],
        }
    }


def route_fanout(state: RunState, config: RunnableConfig) -> list[Send]:
    """The per-round pair: one auditor per slice (minus settled ones) and the second check."""
    fan = state["fanout"]
    sends: list[Send] = []
    first = True
    for index, (part, skipped) in enumerate(zip(fan["slices"], fan["skip"], strict=True)):
        if skipped:
            continue
        sends.append(
            Send(
                "step4_audit_slice",
                {
                    "run_id": state["run_id"],
                    "kind": state["kind"],
                    "round": state["round"],
                    "draft": state["draft"],
                    "index": index,
                    "slice": part,
                    "slice_count": len(fan["slices"]),
                    "total_lines": fan["total_lines"],
                    "warm": first,
                },
            )
        )
        first = False
    sends.append(
        Send(
            "step4_second_check",
            {
                "run_id": state["run_id"],
                "kind": state["kind"],
                "round": state["round"],
                "draft": state["draft"],
            },
        )
    )
    return sends


async def step4_audit_slice(task: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
    """One cold readability auditor on one slice; the fan-out's first spawn warms the cache."""
    deps = deps_of(config)
    arrived = time.monotonic()
    if deps.warmup and not task["warm"] and deps.settings.warmup_delay > 0:
        await asyncio.sleep(deps.settings.warmup_delay)
    waited = round(time.monotonic() - arrived, 3)
    d = deps.design
    params = SpawnParams(
        run_id=task["run_id"],
        role="readability-auditor",
        kind=task["kind"],
        round=task["round"],
        target="design",
        target_path=task["draft"],
        slice=tuple(task["slice"]),
        slice_count=task["slice_count"],
        total_lines=task["total_lines"],
        code_root=deps.rel(d.code_root),
    )
    spawn = prepare(
        deps.runtime.roles["readability-auditor"], params, d.reviews, d.repo_root, index=task["index"]
    )
    result = await deps.runtime.run(spawn, deps.runtime.tool_context(spawn, d.research_log, d.code_root))
    _spawn_event(deps, result, task["round"], task["slice"], warmup_wait=waited)
    findings = [f.model_dump() for f in result.review.findings] if result.review else []
    return {
        "audits": [
            {
                "round": task["round"],
                "index": task["index"],
                "slice": task["slice"],
                "status": result.status,
                "error": result.error,
                "findings": findings,
                "prompt": spawn.full_text,
            }
        ],
        "usage": [_usage(result, task["round"])],
    }


async def step4_second_check(task: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
    """The round's second check: absorption at phase 1, fidelity at phase 4."""
    deps = deps_of(config)
    d = deps.design
    base = {
        "run_id": task["run_id"],
        "kind": task["kind"],
        "round": task["round"],
        "code_root": deps.rel(d.code_root),
    }
    if task["kind"] == PHASE1:
        role = "absorption-check"
        params = SpawnParams(
            role=role,
            target="design",
            research_log_path=deps.rel(d.research_log),
            draft_path=task["draft"],
            **base,
        )
    else:
        role = "fidelity-check"
        params = SpawnParams(
            role=role,
            draft_path=task["draft"],
            episodes_path=deps.rel(d.plan_dir),
            design_path=deps.rel(d.design),
            **base,
        )
    spawn = prepare(deps.runtime.roles[role], params, d.reviews, d.repo_root)
    result = await deps.runtime.run(spawn, deps.runtime.tool_context(spawn, d.research_log, d.code_root))
    _spawn_event(deps, result, task["round"])
    findings = [f.model_dump() for f in result.review.findings] if result.review else []
    return {
        "seconds": [
            {
                "round": task["round"],
                "role": role,
                "status": result.status,
                "error": result.error,
                "findings": findings,
            }
        ],
        "usage": [_usage(result, task["round"])],
    }


def _as_finding(item: dict[str, Any], file: str) -> Finding:
    return Finding(
        item["rule"],
        item["severity"],
        file,
        None,
        item.get("section"),
        item["message"],
        item.get("suggested_fix", ""),
    )


def step6_evaluate(state: RunState, config: RunnableConfig) -> dict[str, Any]:
    """Step 6: the dual-clean evaluation, with the settled-state filter."""
    deps = deps_of(config)
    round_, fan = state["round"], state["fanout"]
    audits = sorted(this_round(state.get("audits", []), round_), key=lambda a: a["index"])
    second = this_round(state.get("seconds", []), round_)
    hashes: dict[str, str] = fan["hashes"]
    settled = SettledState.from_json(state.get("settled") or {})
    kept = [f for a in audits for f in a["findings"] if settled.keeps(hashes, f["rule"], f.get("section"))]
    # Settled means returned clean: an INCONCLUSIVE slice settles nothing.
    clean_audits = [a for a in audits if a["status"] == "ok"]
    audited = {
        name
        for name, start, end in fan["sections"]
        for a in clean_audits
        if start <= a["slice"][1] and end >= a["slice"][0]
    }
    settled.update(hashes, audited, [_as_finding(f, state["draft"]) for f in kept], round_)
    audit_inconclusive = [a for a in audits if a["status"] != "ok"]
    second_result: dict[str, Any] = (
        second[-1] if second else {"status": "inconclusive", "findings": [], "role": "second-check"}
    )
    inconclusive = [f"readability-auditor slice {a['slice'][0]}-{a['slice'][1]}" for a in audit_inconclusive]
    if second_result["status"] != "ok":
        inconclusive.append(str(second_result["role"]))
    second_findings: list[dict[str, Any]] = second_result["findings"]
    dual_clean = not blocking(kept) and not blocking(second_findings) and not inconclusive
    wiring = [f for f in kept if f["rule"] == WIRING_ERROR]
    surface = [f for f in second_findings if f.get("decision_shaped")]
    share = prefix_share([a["prompt"] for a in audits]) if audits else 1.0
    deps.events.emit(
        "check",
        round=round_,
        check="dual-clean",
        clean=dual_clean,
        auditor=len(blocking(kept)),
        second=len(blocking(second_findings)),
        inconclusive=inconclusive,
        prefix_share=round(share, 4),
    )
    evaluation = {
        "round": round_,
        "dual_clean": dual_clean,
        "auditor": kept,
        "second": second_findings,
        "inconclusive": inconclusive,
        "wiring": wiring,
        "surface": surface,
        "prefix_share": share,
    }
    history = {
        "round": round_,
        "dual_clean": dual_clean,
        "auditor_findings": len(blocking(kept)),
        "second_findings": len(blocking(second_findings)),
        "skipped_slices": sum(fan["skip"]),
        "slices": len(fan["slices"]),
        "inconclusive": inconclusive,
        "prefix_share": round(share, 4),
    }
    return {"evaluation": evaluation, "settled": settled.to_json(), "history": [history]}


def next_round(state: RunState, config: RunnableConfig) -> dict[str, Any]:
    """Loop: the findings of this round become the author's flagged passages."""
    ev = state.get("evaluation", {})
    flagged = blocking(ev.get("auditor", [])) + blocking(ev.get("second", []))
    comprehension = state.get("comprehension") or {}
    if comprehension.get("round") == state["round"]:
        flagged += blocking(comprehension.get("findings", []))
    return {"round": state["round"] + 1, "flagged": flagged}
