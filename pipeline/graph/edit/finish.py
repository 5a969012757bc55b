"""How an interactive edit ends: the outcome (Step 6), the review-log entry (Step 7), the
sync suggestion (Step 8) and the presentation (Step 9). Stamps are never touched here."""

from __future__ import annotations

from pipeline import confinement
from pipeline.formats.findings import Finding, blocking
from pipeline.formats.kinds import DESIGN_SYNC, LENGTH_TRIGGER, MECHANICS_EDIT
from pipeline.formats.review_log import parse_entries, working_mode_count
from pipeline.formats.sync_delta import baseline_path
from pipeline.formats.textio import atomic_write_bytes
from pipeline.graph import finish
from pipeline.graph.deps import RunContext
from pipeline.graph.diff import describe_diff
from pipeline.graph.edit.state import EditState, EditUpdate
from pipeline.graph.state import BaseUpdate, FileDiff
from pipeline.runs.events import SyncSuggested

MECHANICS_SKIP = "SKIPPED — mechanics-edit defers cold-read to next design-sync"


def remaining(state: EditState) -> list[Finding]:
    """What stands when the loop exits: blockers and should-fix, and every INCONCLUSIVE read."""
    out: list[Finding] = []
    applied = state.applied
    if applied is not None and not applied.applied:
        what = (
            "the split moved no content into design-mechanics.md (its footers and empty sections are on disk)"
            if state.kind == LENGTH_TRIGGER
            else "the edit changed nothing"
        )
        out.append(
            Finding(
                severity="blocker",
                rule="edit-not-applied",
                message=applied.missed or what + (f": {applied.editor}" if applied.editor else ""),
                suggested_fix="give the change as --old/--new or --content, or reword the instruction",
            )
        )
    out += blocking(state.merged)
    out += [
        Finding(
            severity="should-fix",
            rule="inconclusive",
            message=f"{r.role} was INCONCLUSIVE twice ({r.error}); its half of the review is missing",
        )
        for r in state.this_round_reads()
        if r.status != "ok"
    ]
    return out


def step6_outcome(state: EditState, runtime: RunContext) -> BaseUpdate:
    """As for the creation kinds (graph.finish.ladder): BLOCKER REMAINS, INCONCLUSIVE (a required
    cold read never returned a valid review), SHOULD-FIX REMAINS, or PASS."""
    left = remaining(state)
    declined = state.applied.declined if state.applied else []
    standing = finish.Standing(
        remaining=left, unreviewed=any(f.rule == "inconclusive" for f in left), declined=declined
    )
    return finish.decide(state, runtime.context, standing)


def _cold_read_line(state: EditState) -> tuple[str, str]:
    scope = state.scope
    if state.kind == MECHANICS_EDIT:
        return "skipped", MECHANICS_SKIP
    if state.applied is not None and not state.applied.applied:
        return "skipped", "SKIPPED — the edit was not applied, so there was nothing to read"
    if scope is None:
        return "skipped", "SKIPPED — no cold read ran"
    reads = [r for r in state.reads if r.round == state.round]
    if not reads:
        return scope.cold_read, "SKIPPED — mechanical blockers remained; no cold read ran"
    failed = [r.role for r in reads if r.status != "ok"]
    count = sum(len(blocking(r.findings)) for r in reads)
    text = "PASS" if not count else f"{count} findings"
    if failed:
        text += f"; INCONCLUSIVE: {', '.join(failed)}"
    text += f" ({', '.join(r.role for r in reads)})"
    if scope.cold_read == "bounded":
        text += " — read " + ", ".join(f'§"{s}"' for s in scope.sections) + " and the heading outline"
    if scope.escalated:
        text += f" — periodic whole-doc: counted mutation {scope.periodic_count}"
    return scope.cold_read, text


def _diff_summary(state: EditState, diffs: list[FileDiff]) -> str:
    """What was asked (or the exact operation planned), then what the files show: the real diff.
    The inline editor's own words stay, labelled as its note."""
    applied = state.applied
    parts = [applied.summary] if applied else []
    parts.append(f"Diff: {describe_diff(diffs)}.")
    fixes = [f for f in state.fixes if f.changed]
    if fixes:
        auto = sum(f.auto for f in fixes)
        parts.append(
            f"The fix loop changed the text in {len(fixes)} round(s)"
            + (f" ({auto} exact fix(es))" if auto else "")
            + "."
        )
    if applied and applied.editor:
        parts.append(f"Inline editor's note: {applied.editor}")
    return " ".join(parts)


def _blocker_warning(state: EditState, diffs: list[FileDiff]) -> str:
    """What the entry warns of when blockers remain, from what the run did: an edit never
    applied (and whether it left anything on disk, from the real diff), or the rounds spent."""
    applied = state.applied
    if applied is not None and not applied.applied:
        if not diffs:
            return (
                "warning: the edit was not applied, and no file was changed: the documents are as "
                "they were before the run"
            )
        return (
            f"warning: the edit was not applied; what the run left on disk ({describe_diff(diffs)}) "
            "stays for manual resolution"
        )
    rounds = f"{state.round} of {state.budget} rounds"
    spent = (
        f"the budget is spent ({rounds})" if not state.budget_left() else f"the run stopped after {rounds}"
    )
    return f"warning: {spent} with blockers remaining; the partial edit stays on disk for manual resolution"


def _sync_lines(state: EditState) -> tuple[str | None, list[str]]:
    """design-sync's own line: a zero-delta sync's one-line entry, or what the companion did."""
    sync = state.sync
    if sync is None:
        return None, []
    since = f"Mutation {sync.since}" if sync.since else "the companion's creation"
    changes = "; ".join(sync.changes) or "none"
    if sync.zero:
        return (
            f"**Zero-delta sync**: design-mechanics.md holds no change for design.md since {since} "
            f"(companion changes: {changes}); mechanical checks and cold-read SKIPPED."
        ), []
    return None, [f"**Mechanics changes since the last sync** ({since}): {changes}"]


def step7_review_log(state: EditState, runtime: RunContext) -> BaseUpdate:
    """Step 7: the entry, exactly once per run; design-sync and the split record the companion
    as this sync left it (the baseline the next sync compares with)."""
    deps = runtime.context
    d = deps.design
    diffs = finish.run_diffs(state, deps)
    scope = state.scope
    cold_read_scope, cold_read = _cold_read_line(state)
    one_line, extra = _sync_lines(state)
    parts = finish.EntryParts(
        target_file="design-mechanics.md" if state.kind == MECHANICS_EDIT else "design.md",
        diff_summary=_diff_summary(state, diffs),
        mechanical_target=scope.target if scope else "both",
        mechanical="PASS" if not state.mechanical else f"{len(state.mechanical)} findings",
        cold_read_scope=cold_read_scope,
        cold_read=cold_read,
        suggestions=[f"suggestion: {f.describe()}" for f in state.merged if f.severity == "suggestion"],
        blocker_warning=_blocker_warning(state, diffs),
        extra=extra,
        one_line=one_line,
    )
    update = finish.log_entry(state, deps, parts, diffs)
    if state.kind in (DESIGN_SYNC, LENGTH_TRIGGER) and d.mechanics.is_file():
        atomic_write_bytes(baseline_path(d.workflow), confinement.read_bytes(d.mechanics))
    return update


def step8_sync_suggestion(state: EditState, runtime: RunContext) -> EditUpdate:
    """Step 8: after a mechanics-edit, suggest a design-sync at N or more (never run one)."""
    deps = runtime.context
    if state.kind != MECHANICS_EDIT:
        return {}
    count = working_mode_count(parse_entries(deps.design.mutations))
    if count < deps.limits.sync_suggestion_at:
        return {}
    text = (
        f"{count} mechanics edits have accumulated since the last design.md sync. The polished view "
        f"in design.md is {count} edits behind. Want to run a design-sync now, or keep iterating? "
        f"(designloop edit {deps.rel(deps.design.root)} --kind design-sync)"
    )
    deps.events.emit(SyncSuggested(count=count, message=text))
    return {"sync_suggestion": text}


def step9_present(state: EditState, runtime: RunContext) -> BaseUpdate:
    """Step 9: the diff of every file the edit touched, the entry, the outcome line, and for
    design-sync what changed in the companion since the last sync."""
    before: list[str] = []
    if state.sync is not None:
        before = ["## What changed in mechanics since the last sync", ""]
        before += [f"- {c}" for c in state.sync.changes] or ["- nothing"]
        before.append("")
    after = ["## Sync suggested", "", state.sync_suggestion, ""] if state.sync_suggestion else []
    return finish.present(state, runtime.context, before, after)
