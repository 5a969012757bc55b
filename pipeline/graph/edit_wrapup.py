"""How an interactive edit ends: the outcome (Step 6), the review-log entry (Step 7), the
sync suggestion (Step 8) and the presentation (Step 9). Stamps are never touched here."""

from __future__ import annotations

import difflib

from langchain_core.runnables import RunnableConfig

from pipeline.formats.edit_plan import read_live
from pipeline.formats.findings import Finding, blocking
from pipeline.formats.review_log import MutationEntry, append_entry, parse_entries, working_mode_count
from pipeline.formats.sync_delta import baseline_path
from pipeline.formats.textio import atomic_write, atomic_write_bytes
from pipeline.graph import story
from pipeline.graph.deps import RunDeps, deps_of
from pipeline.graph.edit_state import EditState, EditUpdate
from pipeline.graph.entry import describe_diff, real_diff
from pipeline.graph.lifecycle import record_revisions
from pipeline.graph.state import BLOCKER_REMAINS, INCONCLUSIVE, PASS, SHOULD_FIX_REMAINS, FileDiff, Outcome
from pipeline.graph.withhold import withheld_section, withhold_log_words
from pipeline.graph.wrapup import OUTCOME_LINE, record_outcome
from pipeline.runs.edit_setup import snapshot_reader, touched_files

MECHANICS_SKIP = "SKIPPED — mechanics-edit defers cold-read to next design-sync"


def remaining(state: EditState) -> list[Finding]:
    """What stands when the loop exits: blockers and should-fix, and every INCONCLUSIVE read."""
    out: list[Finding] = []
    applied = state.applied
    if applied is not None and not applied.applied:
        what = (
            "the split moved no content into design-mechanics.md (its footers and empty sections are on disk)"
            if state.kind == "length-trigger-crossing"
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


def step6_outcome(state: EditState, config: RunnableConfig) -> EditUpdate:
    """As for the creation kinds: BLOCKER REMAINS, INCONCLUSIVE (a required cold read never
    returned a valid review), SHOULD-FIX REMAINS, or PASS."""
    deps = deps_of(config)
    left = remaining(state)
    if any(f.severity == "blocker" for f in left):
        verdict = BLOCKER_REMAINS
    elif any(f.rule == "inconclusive" for f in left):
        verdict = INCONCLUSIVE
    elif left:
        verdict = SHOULD_FIX_REMAINS
    else:
        verdict = PASS
    deps.events.emit("check", round=state.round, check="outcome", outcome=verdict, remaining=len(left))
    return {"outcome": Outcome(verdict=verdict, remaining=left)}


def _cold_read_line(state: EditState) -> tuple[str, str]:
    scope = state.scope
    if state.kind == "mechanics-edit":
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


def step7_review_log(state: EditState, config: RunnableConfig) -> EditUpdate:
    """Step 7: the entry, exactly once per run; design-sync and the split record the companion
    as this sync left it (the baseline the next sync compares with)."""
    deps = deps_of(config)
    d = deps.design
    assert state.outcome is not None
    target_file = "design-mechanics.md" if state.kind == "mechanics-edit" else "design.md"
    scope = state.scope
    read = snapshot_reader(d, deps.run_dir)
    diffs = real_diff((deps.rel(p), read(p), read_live(p)) for p in touched_files(d))
    entry = MutationEntry(
        kind=state.kind,
        target_file=target_file,
        diff_summary=_diff_summary(state, diffs),
        mechanical_target=scope.target if scope else "both",
        mechanical="PASS" if not state.mechanical else f"{len(state.mechanical)} findings",
        cold_read_scope="",
        cold_read="",
        iteration=state.round,
        budget=state.budget,
        outcome=state.outcome.verdict,
        wrote=deps.left(state.kind),
    )
    entry.cold_read_scope, entry.cold_read = _cold_read_line(state)
    entry.findings = [f"{f.severity}: {f.describe()}" for f in state.outcome.remaining]
    entry.findings += [f"suggestion: {f.describe()}" for f in state.merged if f.severity == "suggestion"]
    entry.findings += [f"note: {n}" for n in state.notes]
    if state.outcome.verdict == SHOULD_FIX_REMAINS:
        entry.findings.append("debt: the should-fix findings above carry forward to the next mutation")
    if state.outcome.verdict == BLOCKER_REMAINS:
        entry.findings.append(
            "warning: the budget is spent with blockers remaining; the partial edit stays on disk for "
            "manual resolution"
        )
    sync = state.sync
    if sync is not None:
        since = f"Mutation {sync.since}" if sync.since else "the companion's creation"
        changes = "; ".join(sync.changes) or "none"
        if sync.zero:
            entry.one_line = (
                f"**Zero-delta sync**: design-mechanics.md holds no change for design.md since {since} "
                f"(companion changes: {changes}); mechanical checks and cold-read SKIPPED."
            )
        else:
            entry.extra = [f"**Mechanics changes since the last sync** ({since}): {changes}"]
    blocks = story.entry_blocks(state, state.outcome.remaining)
    if blocks:
        entry.extra += ["", *blocks] if entry.extra else blocks
    record_revisions(deps, state, entry)
    entry, withheld = withhold_log_words(d, entry)
    deps.fence()
    result = append_entry(d.mutations, entry, run_id=state.run_id, lock_dir=deps.locks)
    deps.events.emit("review_log", entry=result.number, appended=result.appended, withheld=withheld)
    if state.kind in ("design-sync", "length-trigger-crossing") and d.mechanics.is_file():
        atomic_write_bytes(baseline_path(d.workflow), d.mechanics.read_bytes())
    return {"review_entry": result.number, "diff": diffs}


def step8_sync_suggestion(state: EditState, config: RunnableConfig) -> EditUpdate:
    """Step 8: after a mechanics-edit, suggest a design-sync at N or more (never run one)."""
    deps = deps_of(config)
    if state.kind != "mechanics-edit":
        return {}
    count = working_mode_count(parse_entries(deps.design.mutations))
    if count < deps.limits.sync_suggestion_at:
        return {}
    text = (
        f"{count} mechanics edits have accumulated since the last design.md sync. The polished view "
        f"in design.md is {count} edits behind. Want to run a design-sync now, or keep iterating? "
        f"(designloop edit {deps.rel(deps.design.root)} --kind design-sync)"
    )
    deps.events.emit("sync_suggested", count=count, message=text)
    return {"sync_suggestion": text}


def _diffs(deps: RunDeps) -> str:
    read = snapshot_reader(deps.design, deps.run_dir)
    out = []
    for path in touched_files(deps.design):
        before, after = read(path), read_live(path)
        if before == after:
            continue
        a = before.decode("utf-8", "replace").splitlines(keepends=True) if before else []
        b = after.decode("utf-8", "replace").splitlines(keepends=True) if after else []
        rel = deps.rel(path)
        out.append("".join(difflib.unified_diff(a, b, f"a/{rel}", f"b/{rel}")))
    return "".join(out)


def step9_present(state: EditState, config: RunnableConfig) -> EditUpdate:
    """Step 9: the diff of every file the edit touched, the entry, the outcome line, and for
    design-sync what changed in the companion since the last sync."""
    deps = deps_of(config)
    assert state.outcome is not None
    log = deps.design.mutations.read_text(encoding="utf-8")
    marker = f"## Mutation {state.review_entry} —"
    entry = log[log.find(marker) :] if marker in log else ""
    entry = entry.split("\n## Mutation ", 1)[0].rstrip() + "\n"
    line = OUTCOME_LINE[state.outcome.verdict]
    parts = [f"# {state.kind} {state.run_id}", "", "## Diff", "", f"```diff\n{_diffs(deps)}```", ""]
    if state.sync is not None:
        parts += ["## What changed in mechanics since the last sync", ""]
        parts += [f"- {c}" for c in state.sync.changes] or ["- nothing"]
        parts.append("")
    parts += ["## Review log", "", entry, *withheld_section(deps.run_dir), "## Outcome", "", line, ""]
    if state.sync_suggestion:
        parts += ["## Sync suggested", "", state.sync_suggestion, ""]
    atomic_write(deps.run_dir / "summary.md", "\n".join(parts))
    record_outcome(deps, state, line)
    return {"summary": line}
