"""How the loop exits: the outcome (Step 6), the review-log entry (Step 7) and the
presentation (Step 9)."""

from __future__ import annotations

import difflib

from langchain_core.runnables import RunnableConfig

from pipeline.errors import WiringError
from pipeline.formats.design_doc import load_design
from pipeline.formats.findings import Finding, blocking, merge
from pipeline.formats.kinds import PHASE1
from pipeline.formats.review_log import MutationEntry, append_entry
from pipeline.formats.settled import SettledState, section_hashes
from pipeline.formats.textio import atomic_write
from pipeline.graph import entry, story
from pipeline.graph.author import fingerprint
from pipeline.graph.deps import RunDeps, deps_of
from pipeline.graph.edit_state import EditState
from pipeline.graph.gate import companions, decision_shaped
from pipeline.graph.state import (
    BLOCKER_REMAINS,
    DECISION_NEEDED,
    INCONCLUSIVE,
    PASS,
    SHOULD_FIX_REMAINS,
    FileDiff,
    Outcome,
    RunState,
    Update,
)
from pipeline.graph.withhold import withheld_section, withhold_log_words

OUTCOME_LINE = {
    PASS: "PASS",
    BLOCKER_REMAINS: "BLOCKER REMAINS — manual resolution required",
    SHOULD_FIX_REMAINS: "COMPLETE WITH SHOULD-FIX FINDINGS",
    INCONCLUSIVE: "INCONCLUSIVE — a required review never happened",
    DECISION_NEEDED: "DECISION NEEDED — take it to a phase-0 research log decision",
}


def _inconclusive(state: RunState) -> list[Finding]:
    """Why the final draft was not fully reviewed: no draft, an author that never confirmed
    the draft it left, or a required reviewer that returned no valid review in the final round."""
    out: list[Finding] = []
    no_draft = state.author is None or not state.author.draft_ok
    if no_draft:
        why = f": {state.author.error}" if state.author and state.author.error else ""
        out.append(
            Finding(
                severity="should-fix",
                rule="inconclusive",
                role="design-author",
                message=f"the author wrote no draft after a re-spawn; there was nothing to review{why}",
            )
        )
    for item in state.inconclusive:
        if item.round != state.round or (no_draft and item.role == "design-author"):
            continue
        message = item.describe()
        if item.role == "design-author":
            message += "; the draft on disk was reviewed, but its author never confirmed it"
        out.append(Finding(severity="should-fix", rule="inconclusive", role=item.role, message=message))
    return out


def decisions_needed(state: RunState) -> list[Finding]:
    """Phase 4's decision-shaped findings: the frozen research log is not written, so each
    needs a phase-0 decision."""
    if state.kind == PHASE1:
        return []
    found = [f for f in decision_shaped(state)]
    return [
        f.model_copy(
            update={
                "message": f"{f.message} (needs a phase-0 decision; phase 4 does not write the research log)"
            }
        )
        for f in found
    ]


def remaining(state: RunState) -> list[Finding]:
    """What stands when the loop exits: blockers and should-fix findings of the final draft."""
    out = blocking(state.mechanical)
    evaluation = state.this_round_evaluation()
    if evaluation is not None:
        out += evaluation.blocking
    comprehension = state.this_round_comprehension()
    if comprehension is not None:
        out += blocking(comprehension.findings)
    return out


def step6_outcome(state: RunState, config: RunnableConfig) -> Update:
    """How the loop exited (the seed's Outcomes), in order of what a person must act on first:
    a blocker; a decision only phase 0 can make; a review that never happened; should-fix debt.
    PASS is asserted against the bytes on disk (``unchecked``) before it is recorded."""
    deps = deps_of(config)
    needed = decisions_needed(state)
    failed = _inconclusive(state)
    left = merge([*needed, *remaining(state), *failed])  # the annotated decision findings win
    comprehension = state.this_round_comprehension()
    passed = comprehension is not None and comprehension.verdict == "PASS"
    if any(f.severity == "blocker" for f in left):
        verdict = BLOCKER_REMAINS
    elif needed:
        verdict = DECISION_NEEDED
    elif failed:
        verdict = INCONCLUSIVE
    elif left or not passed:
        verdict = SHOULD_FIX_REMAINS
    else:
        verdict = PASS
    if verdict == PASS and (why := unchecked(state, deps)):
        deps.events.emit("stopped", message=f"PASS without a check: {why}")
        raise WiringError(
            f"the run would end PASS though {why}",
            hint="this is a defect in designloop; the run stays resumable and nothing was logged",
        )
    deps.events.emit("check", round=state.round, check="outcome", outcome=verdict, remaining=len(left))
    return {"outcome": Outcome(verdict=verdict, remaining=left)}


def unchecked(state: RunState, deps: RunDeps) -> str | None:
    """Why a PASS would not be true of the bytes now on disk, or None: PASS needs the final
    round dual-clean, every section's current bytes audited clean (settled and unchanged), and
    the comprehension gate passed on the draft (and companion) as they are now."""
    evaluation, comprehension, fan = (
        state.this_round_evaluation(),
        state.this_round_comprehension(),
        state.fanout,
    )
    if evaluation is None or not evaluation.dual_clean or fan is None or fan.round != state.round:
        return "the final round's per-round pair was not dual-clean"
    if comprehension is None or comprehension.status != "ok" or blocking(comprehension.findings):
        return "the comprehension gate did not pass in the final round"
    draft = deps.abs(state.draft)
    if comprehension.digest is None or comprehension.digest != fingerprint(draft, *companions(state, deps)):
        return f"{draft.name} changed after the comprehension gate read it"
    if fan.digest != fingerprint(draft):
        return f"{draft.name} changed after the auditors read it"
    open_ = SettledState(dict(state.settled)).unchecked(section_hashes(load_design(draft)))
    if open_:
        return "no clean audit covers the current text of " + ", ".join(f'§"{n}"' for n in open_)
    return None


def step7_review_log(state: RunState, config: RunnableConfig) -> Update:
    """Step 7: append the review-log entry, exactly once per run, saying exactly what ran."""
    deps = deps_of(config)
    assert state.outcome is not None
    left = state.outcome.remaining
    # What remains is the outcome's own record: the same list --json carries.
    items = [f"{f.severity}: {f.describe()}" for f in left]
    # A role INCONCLUSIVE in an earlier round, with the provider's (redacted) error: a later
    # round ran it again, so it is history, not an open finding.
    items += [
        f"note: earlier round: inconclusive: {i.describe()}"
        for i in state.inconclusive
        if i.round != state.round
    ]
    items += entry.suggestions(state)
    items += [f"note: {n}" for n in state.notes]
    items += [
        f"surfaced: D{s.decision} by {s.role} (research log; the adversarial gate re-opened)"
        for s in state.surfaced
        if s.decision
    ]
    if state.outcome.verdict == SHOULD_FIX_REMAINS:
        items.append("debt: the should-fix findings above carry forward to the next mutation")
    log_entry = MutationEntry(
        kind=state.kind,
        target_file=deps.abs(state.draft).name,
        diff_summary=entry.diff_summary(state, deps.design, entry.read_before(deps.run_dir)),
        mechanical_target=state.mechanical_target,
        mechanical=entry.mechanical_line(state),
        cold_read_scope="whole-doc",
        cold_read=entry.cold_read_line(state),
        findings=items,
        iteration=state.round,
        budget=state.budget,
        outcome=state.outcome.verdict,
        wrote=deps.left(state.kind),
        extra=story.entry_blocks(state, left),
    )
    log_entry, withheld = withhold_log_words(deps.design, log_entry)
    deps.fence()
    result = append_entry(deps.design.mutations, log_entry, run_id=state.run_id, lock_dir=deps.locks)
    deps.events.emit("review_log", entry=result.number, appended=result.appended, withheld=withheld)
    return {"review_entry": result.number, "diff": run_diff(state, deps)}


def run_diff(state: RunState, deps: RunDeps) -> list[FileDiff]:
    """The real diff of the draft against the run's before-snapshot (absent then: created)."""
    draft = deps.abs(state.draft)
    before = deps.run_dir / "before.md"
    old = before.read_bytes() if before.is_file() else None
    return entry.real_diff([(state.draft, old, draft.read_bytes() if draft.is_file() else None)])


def step9_present(state: RunState, config: RunnableConfig) -> Update:
    """Step 9: the diff, the review-log entry and a one-line outcome, saved with the run."""
    deps = deps_of(config)
    assert state.outcome is not None
    path = deps.abs(state.draft)
    before_path = deps.run_dir / "before.md"
    before = before_path.read_text(encoding="utf-8").splitlines(keepends=True) if before_path.exists() else []
    after = path.read_text(encoding="utf-8").splitlines(keepends=True) if path.is_file() else []
    diff = "".join(difflib.unified_diff(before, after, f"a/{deps.rel(path)}", f"b/{deps.rel(path)}"))
    log = deps.design.mutations.read_text(encoding="utf-8")
    marker = f"## Mutation {state.review_entry} —"
    entry = log[log.find(marker) :] if marker in log else ""
    entry = entry.split("\n## Mutation ", 1)[0].rstrip() + "\n"
    line = OUTCOME_LINE[state.outcome.verdict]
    summary = (
        f"# {state.kind} {state.run_id}\n\n## Diff\n\n```diff\n{diff}```\n\n## Review log\n\n"
        f"{entry}\n" + "\n".join(withheld_section(deps.run_dir)) + f"\n## Outcome\n\n{line}\n"
    )
    atomic_write(deps.run_dir / "summary.md", summary)
    record_outcome(deps, state, line)
    return {"summary": line}


def record_outcome(deps: RunDeps, state: RunState | EditState, line: str) -> None:
    """The outcome event, the finish's record (status, runs and resume read it): written last,
    once, after the documents as the run left them. A finish run again after a crash finds it
    and writes it no second time."""
    assert state.outcome is not None
    if not deps.events.recorded("outcome"):
        deps.refresh_claims(state.kind)
        deps.record_wrote(state.kind)
        deps.events.emit(
            "outcome",
            outcome=state.outcome.verdict,
            line=line,
            rounds=state.round,
            review_log_entry=state.review_entry,
            findings=[f.model_dump(mode="json") for f in state.outcome.remaining],
        )
