"""How a creation run ends: what stands when its loop exits (Step 6), what its review-log entry
says (Step 7) and the presentation (Step 9), through the one finish (graph.finish)."""

from __future__ import annotations

from pipeline.formats.design_doc import load_design
from pipeline.formats.findings import Finding, blocking, merge
from pipeline.formats.kinds import PHASE1
from pipeline.formats.settled import SettledState, section_hashes
from pipeline.graph import finish
from pipeline.graph.create import entry
from pipeline.graph.create.author import fingerprint
from pipeline.graph.create.gate import companions, decision_shaped
from pipeline.graph.create.state import RunState
from pipeline.graph.deps import RunContext, RunDeps
from pipeline.graph.state import BaseUpdate


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


def step6_outcome(state: RunState, runtime: RunContext) -> BaseUpdate:
    """How the loop exited (the seed's Outcomes, graph.finish.ladder). PASS is asserted against
    the bytes on disk (``unchecked``) before it is recorded."""
    deps = runtime.context
    needed = decisions_needed(state)
    failed = _inconclusive(state)
    comprehension = state.this_round_comprehension()
    standing = finish.Standing(
        remaining=merge([*needed, *remaining(state), *failed]),  # the annotated decision findings win
        decisions=bool(needed),
        unreviewed=bool(failed),
        passed=comprehension is not None and comprehension.verdict == "PASS",
    )
    return finish.decide(state, deps, standing, lambda: unchecked(state, deps))


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


def step7_review_log(state: RunState, runtime: RunContext) -> BaseUpdate:
    """Step 7: append the review-log entry, exactly once per run, saying exactly what ran."""
    deps = runtime.context
    parts = finish.EntryParts(
        target_file=deps.abs(state.draft).name,
        diff_summary=entry.diff_summary(state, deps.design, entry.read_before(deps, state.draft)),
        mechanical_target=state.mechanical_target,
        mechanical=entry.mechanical_line(state),
        cold_read_scope="whole-doc",
        cold_read=entry.cold_read_line(state),
        suggestions=entry.suggestions(state),
        # A role INCONCLUSIVE in an earlier round, with the provider's (redacted) error: a later
        # round ran it again, so it is history, not an open finding.
        earlier=[
            f"note: earlier round: inconclusive: {i.describe()}"
            for i in state.inconclusive
            if i.round != state.round
        ],
        surfaced=[
            f"surfaced: D{s.decision} by {s.role} (research log; the adversarial gate re-opened)"
            for s in state.surfaced
            if s.decision
        ],
    )
    return finish.log_entry(state, deps, parts, finish.run_diffs(state, deps))


def step9_present(state: RunState, runtime: RunContext) -> BaseUpdate:
    """Step 9: the diff, the review-log entry and a one-line outcome, saved with the run."""
    return finish.present(state, runtime.context)
