"""Steps 2 to 6 of the interactive kinds: the cold-read scope, the mechanical checks, the
cold reads, the merge and the single-agent fix loop."""

from __future__ import annotations

import asyncio
import dataclasses
import difflib
from pathlib import Path
from typing import Literal

from pipeline.agents.inputs import EditScope, RoundInputs, params_for
from pipeline.agents.roles import load_prompt
from pipeline.checks.engine import CheckRequest, run_checks
from pipeline.checks.fixes import apply_fixes
from pipeline.formats.design_doc import CORE_CONCEPTS, OVERVIEW, DesignDoc, load_design
from pipeline.formats.edit_plan import read_live
from pipeline.formats.findings import MECHANICAL, Finding, blocking, merge
from pipeline.formats.kinds import DESIGN_SYNC, MECHANICS_EDIT, Target
from pipeline.formats.mutations import kind_rule
from pipeline.formats.review_log import parse_entries, periodic_count, periodic_whole_doc_due
from pipeline.graph.deps import RunContext, RunDeps
from pipeline.graph.edit.apply import spawn_editor, sync_stale
from pipeline.graph.edit.state import ColdRead, EditRound, EditState, EditUpdate, FixTurn, Scope
from pipeline.graph.state import RoleReport
from pipeline.runs.check_events import ColdReadCheck, MechanicalCheck, MergedCheck, ScopeCheck
from pipeline.runs.events import Fixed

ColdReader = Literal["comprehension-review", "readability-auditor"]
COMPREHENSION: ColdReader = "comprehension-review"
AUDITOR: ColdReader = "readability-auditor"
SYNC_NOTE = "design-sync-note.md"


def bounded_sections(doc: DesignDoc, changed: str, roadmap: bool) -> list[str]:
    """The changed section, its neighbours (not for section-add), Overview and Core Concepts."""
    level2 = [s.name for s in doc.level2()]
    out = [changed]
    if not roadmap and changed in level2:
        at = level2.index(changed)
        out += [level2[i] for i in (at - 1, at + 1) if 0 <= i < len(level2)]
    out += [name for name in (OVERVIEW, CORE_CONCEPTS) if name in level2]
    return list(dict.fromkeys(out))


def step2_scope(state: EditState, runtime: RunContext) -> EditUpdate:
    """Step 2: the cold-read scope from the kind's row, escalated to whole-doc on every Nth
    counted mutation (all but mechanics-edit, counted from the review log)."""
    deps = runtime.context
    d = deps.design
    rule = kind_rule(state.kind)
    entries = [e for e in parse_entries(d.mutations) if e.run_id != state.run_id]
    every = deps.limits.periodic_whole_doc_every
    due = periodic_whole_doc_due(entries, state.kind, every)
    applied = state.applied
    changed = applied.changed_section if applied else None
    target = rule.resolve_target(bool(applied and applied.touched_mechanics))
    cold: str = rule.cold_read
    sections: list[str] = []
    if cold == "none":
        cold = "skipped"
    elif cold.startswith("bounded") and not due and changed:
        doc = load_design(d.design)
        if doc.find(changed) is not None:
            sections = bounded_sections(doc, changed, roadmap=cold == "bounded-roadmap")
        cold = "bounded" if sections else "whole-doc"
    else:
        cold = "whole-doc"
    scope = Scope(
        cold_read="bounded" if cold == "bounded" else "skipped" if cold == "skipped" else "whole-doc",
        sections=sections,
        escalated=due and rule.reviewed,
        periodic_count=0 if state.kind == MECHANICS_EDIT else periodic_count(entries) + 1,
        target=target,
        mechanical_scope="bounded" if cold == "bounded" else "whole-doc",
        changed_section=changed,
        prose_pass=rule.prose_pass,
    )
    deps.events.emit(
        ScopeCheck(
            round=state.round,
            cold_read=scope.cold_read,
            sections=sections,
            escalated=scope.escalated,
            target=target,
        )
    )
    return {"scope": scope}


def _existing(path: Path) -> Path | None:
    return path if path.exists() else None


def step3_mechanical_checks(state: EditState, runtime: RunContext) -> EditUpdate:
    """Step 3: the mechanical checks with the kind's --target and --scope, plan references included."""
    deps = runtime.context
    d = deps.design
    scope = state.scope
    assert scope is not None
    request = CheckRequest(
        design_path=d.design,
        mechanics_path=_existing(d.mechanics),
        plan_path=_existing(d.plan),
        plan_dir=_existing(d.plan_dir),
        changed_section=scope.changed_section if scope.mechanical_scope == "bounded" else None,
        target=scope.target,
        scope=scope.mechanical_scope,
    )
    findings = [
        f.model_copy(update={"file": deps.rel(Path(f.file))}) if f.file else f
        for f in run_checks(request, deps.limits)
    ]
    if state.kind == MECHANICS_EDIT:
        findings = for_next_sync(findings, deps.rel(d.design))
    deps.events.emit(
        MechanicalCheck(
            round=state.round,
            target=scope.target,
            scope=scope.mechanical_scope,
            findings=len(findings),
            blockers=sum(1 for f in findings if f.severity == "blocker"),
            found=findings,
        )
    )
    return {
        "mechanical": findings,
        "reports": [RoleReport(round=state.round, role=MECHANICAL, findings=findings)],
    }


def for_next_sync(findings: list[Finding], design: str) -> list[Finding]:
    """In working mode design.md stays frozen until the next design-sync: a design.md footer
    the companion has moved past (a renamed or removed companion section) is that sync's to
    follow, recorded as a suggestion, never a blocker of every mechanics-edit until then."""
    return [
        f.model_copy(update={"severity": "suggestion", "message": f"for the next design-sync: {f.message}"})
        if f.rule == "dsc-mechanics-link" and f.file == design and f.severity != "suggestion"
        else f
        for f in findings
    ]


def _edit_scope(state: EditState, deps: RunDeps) -> EditScope:
    d = deps.design
    scope = state.scope
    assert scope is not None
    return EditScope(
        scope=scope.cold_read if scope.cold_read != "skipped" else "whole-doc",
        sections=tuple(scope.sections),
        changed_section=scope.changed_section,
        target=scope.target,
        mechanics=_existing(d.mechanics),
        plan_path=_existing(d.plan),
        plan_dir=_existing(d.plan_dir),
        note=load_prompt(SYNC_NOTE, d.repo_root).strip() if state.kind == DESIGN_SYNC else None,
    )


def changed_lines(before: bytes | None, now: bytes | None) -> set[int]:
    """The 1-based lines of the file now that the edit added or changed (against the run's
    before-snapshot)."""
    old = (before or b"").decode("utf-8", "replace").split("\n")
    new = (now or b"").decode("utf-8", "replace").split("\n")
    out: set[int] = set()
    for tag, _, _, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag in ("replace", "insert"):
            out.update(range(j1 + 1, j2 + 1))
    return out


def _edited(state: EditState, deps: RunDeps) -> set[int] | None:
    """What the readability auditor holds to the house style on an interactive kind: the lines
    of design.md the edit added or changed (None: the whole design, design-sync's prose pass)."""
    scope = state.scope
    if scope is not None and scope.prose_pass:
        return None
    return changed_lines(deps.before(deps.design.design), read_live(deps.design.design))


def _audit_span(deps: RunDeps, edited: set[int]) -> tuple[int, int]:
    """The auditor's slice on an edit: from the heading of the section the first changed line
    is in (a section's measures are taken by the slice that holds its heading) to the last
    changed line."""
    first, last = min(edited), max(edited)
    for section in load_design(deps.design.design).sections:
        if section.start <= first <= section.end:
            return min(section.start, first), last
    return first, last


def _held(findings: list[Finding], edited: set[int] | None) -> list[Finding]:
    """The auditor's findings on what the edit wrote (a wiring error always stands)."""
    if edited is None:
        return findings
    return [f for f in findings if f.rule == "wiring-error" or (f.line is not None and f.line in edited)]


async def _cold_read(state: EditState, runtime: RunContext, role: ColdReader) -> EditUpdate:
    """One cold read over the kind's scope (the auditor's: what the edit changed); its params
    and its event are read and written in a thread, off the event loop."""
    deps = runtime.context
    d = deps.design
    inputs = RoundInputs(d, state.kind, state.round, d.design)
    edited = await asyncio.to_thread(_edited, state, deps) if role == AUDITOR else None
    if edited is not None and not edited:
        return {}  # the edit changed nothing in design.md: no prose of its own to read
    span = await asyncio.to_thread(_audit_span, deps, edited) if edited else None
    scope = dataclasses.replace(_edit_scope(state, deps), changed_lines=span)
    params = await asyncio.to_thread(lambda: params_for(role, inputs, edit=scope))
    result, usage = await deps.spawn(params)
    review = result.review
    draft = deps.rel(d.design)
    found = review.findings if review else []
    findings = _held([f.located(draft, result.role) for f in found], edited)
    verdict = review.verdict if review else "INCONCLUSIVE"
    check = ColdReadCheck(round=state.round, check=role, verdict=verdict, findings=len(blocking(findings)))
    await asyncio.to_thread(deps.events.emit, check)
    read = ColdRead(
        round=state.round,
        role=role,
        status=result.status,
        verdict=verdict,
        error=result.error,
        findings=findings,
    )
    return {"reads": [read], "usage": [usage]}


async def step4_comprehension_gate(state: EditState, runtime: RunContext) -> EditUpdate:
    """Step 4: the cold comprehension gate over the kind's scope."""
    return await _cold_read(state, runtime, COMPREHENSION)


async def step4_readability_auditor(state: EditState, runtime: RunContext) -> EditUpdate:
    """Step 4: one cold readability pass, the single prose owner (S4): over the whole
    re-distilled design on design-sync, over the text the edit added or changed on every other
    reviewed kind (the text an edit writes is held to the house style, not only to the
    comprehension rules). Its params carry no slice_count or total_lines."""
    return await _cold_read(state, runtime, AUDITOR)


def step5_merge(state: EditState, runtime: RunContext) -> EditUpdate:
    """Step 5: mechanical, cold-read (and the distillation's open) findings as one list."""
    deps = runtime.context
    reads = state.this_round_reads()
    merged = merge([*state.mechanical, *(f for r in reads for f in r.findings), *sync_stale(state, deps)])
    inconclusive: list[str] = [r.role for r in reads if r.status != "ok"]
    history = EditRound(
        round=state.round,
        mechanical=len(blocking(state.mechanical)),
        cold_read=len(blocking(f for r in reads for f in r.findings)),
        inconclusive=inconclusive,
    )
    deps.events.emit(
        MergedCheck(
            round=state.round,
            open=len(blocking(merged)),
            inconclusive=inconclusive,
            findings=blocking(merged),
        )
    )
    return {"merged": merged, "history": [history]}


async def step6_fix(state: EditState, runtime: RunContext) -> EditUpdate:
    """Step 6: blockers first, then should-fix. Auto-applicable fixes are applied exactly; the
    rest go to the inline editor, one spawn per file. The round is spent either way. The fixes
    and what the files show afterwards are read and written in a thread, off the event loop."""
    deps = runtime.context
    before, auto, rest, jobs = await asyncio.to_thread(_fix_plan, state, deps)
    summaries: list[str] = []
    notes: list[str] = []
    usages = []
    for path, mine, target in jobs:
        changed = state.scope.changed_section if state.scope else None
        run = await spawn_editor(state, deps, path, mine, changed, target)
        usages.append(run.usage)
        summaries.append(f"{path.name}: {run.summary}" if run.summary else f"{path.name}: {run.error}")
        notes += [n for n in (run.line1, run.twice) if n]
    editable = {deps.rel(path) for path in before}
    left = [f for f in rest if f.file is not None and f.file not in editable]
    if left:
        notes.append(
            f"round {state.round}: {len(left)} finding(s) in the plan files are not the editor's to fix "
            "(implementation-plan.md and plan/ have their own gates)"
        )
    turn = await asyncio.to_thread(_fixed, state, deps, before, auto, summaries)
    return {"round": state.round + 1, "fixes": [turn], "usage": usages, "notes": notes}


EditorJob = tuple[Path, list[Finding], Target]


def _fix_plan(
    state: EditState, deps: RunDeps
) -> tuple[dict[Path, bytes | None], int, list[Finding], list[EditorJob]]:
    """The files as they were, the auto-applicable fixes applied, the findings left, and the
    editor's spawns: one per file with findings of its own."""
    d = deps.design
    open_ = state.open_findings()
    before = {path: read_live(path) for path in (d.design, d.mechanics)}
    exact = [
        f.model_copy(update={"file": str(deps.abs(f.file))})
        for f in open_
        if f.auto_applicable and f.fix is not None and f.file is not None
    ]
    applied = apply_fixes(exact) if exact else {}
    rest = [f for f in open_ if not (f.auto_applicable and f.fix is not None)]
    jobs: list[EditorJob] = []
    for rel, path in {deps.rel(d.design): d.design, deps.rel(d.mechanics): d.mechanics}.items():
        mine = [f for f in rest if (f.file or rel) == rel and path.is_file()]
        if rel == deps.rel(d.mechanics):
            mine = [f for f in rest if f.file == rel]
        if mine:
            jobs.append((path, mine, "mechanics" if path == d.mechanics else "design"))
    return before, sum(applied.values()), rest, jobs


def _fixed(
    state: EditState, deps: RunDeps, before: dict[Path, bytes | None], auto: int, summaries: list[str]
) -> FixTurn:
    """The round's fix turn: "changed" is what the files show, not what the editor said it did."""
    moved = any(read_live(path) != data for path, data in before.items())
    deps.events.emit(Fixed(round=state.round, auto=auto, editor=len(summaries)))
    if moved:
        deps.record_wrote(state.kind)
    return FixTurn(round=state.round, auto=auto, editor=summaries, changed=moved)


def blockers(findings: list[Finding]) -> bool:
    return any(f.severity == "blocker" for f in findings)
