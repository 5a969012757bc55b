"""How the loop exits: the outcome (Step 6), the review-log entry (Step 7), the stamp
(Step 1's idempotent guard) and the presentation (Step 9)."""

from __future__ import annotations

import difflib

from langchain_core.runnables import RunnableConfig

from pipeline.formats.design_doc import load_design
from pipeline.formats.findings import Finding, blocking
from pipeline.formats.kinds import PHASE1
from pipeline.formats.review_log import MutationEntry, append_entry
from pipeline.formats.stamp import has_stamp, prepend_stamp
from pipeline.formats.textio import atomic_write
from pipeline.graph.deps import RunDeps, deps_of
from pipeline.graph.state import BLOCKER_REMAINS, PASS, SHOULD_FIX_REMAINS, Outcome, RunState, Update

OUTCOME_LINE = {
    PASS: "PASS",
    BLOCKER_REMAINS: "BLOCKER REMAINS — manual resolution required",
    SHOULD_FIX_REMAINS: "COMPLETE WITH SHOULD-FIX FINDINGS",
}


def _inconclusive(message: str) -> Finding:
    return Finding(severity="should-fix", rule="inconclusive", message=message)


def remaining(state: RunState) -> list[Finding]:
    """What stands when the loop exits, blockers and should-fix only."""
    out: list[Finding] = []
    if state.author is None or not state.author.draft_ok:
        out.append(
            Finding(
                severity="blocker",
                rule="author-no-draft",
                message="the author wrote no draft twice; the loop has no draft to review",
            )
        )
    out += blocking(state.mechanical)
    # An evaluation of this round exists only if this round's draft passed the mechanical checks.
    evaluation = state.this_round_evaluation()
    if evaluation is not None:
        out += evaluation.blocking
        out += [
            _inconclusive(f"{name} was INCONCLUSIVE twice; the round could not be declared clean")
            for name in evaluation.inconclusive
        ]
    comprehension = state.this_round_comprehension()
    if comprehension is not None:
        out += blocking(comprehension.findings)
        if comprehension.status != "ok":
            out.append(_inconclusive("comprehension-review was INCONCLUSIVE twice"))
    return out


def step6_outcome(state: RunState, config: RunnableConfig) -> Update:
    """The outcome: PASS, BLOCKER REMAINS or SHOULD-FIX REMAINS, and what remains."""
    deps = deps_of(config)
    left = remaining(state)
    comprehension = state.this_round_comprehension()
    passed = comprehension is not None and comprehension.verdict == "PASS"
    if any(f.severity == "blocker" for f in left):
        verdict = BLOCKER_REMAINS
    elif left or not passed:
        verdict = SHOULD_FIX_REMAINS
    else:
        verdict = PASS
    deps.events.emit("check", round=state.round, check="outcome", outcome=verdict, remaining=len(left))
    return {"outcome": Outcome(verdict=verdict, remaining=left)}


def _diff_summary(state: RunState, deps: RunDeps) -> str:
    path = deps.abs(state.draft)
    if not path.is_file() or path.stat().st_size == 0:
        return f"The author wrote no {path.name}; nothing was created over {state.round} round(s)."
    doc = load_design(path)
    body = [s.name for s in doc.body_sections()]
    records = len(doc.d_records())
    verb = "Created" if state.kind == PHASE1 else "Created the final design"
    source = (
        "the research log" if state.kind == PHASE1 else "the frozen design, the track episodes and the code"
    )
    return (
        f"{verb} {path.name} from {source}: {len(doc.lines)} lines, {len(body)} body "
        f"section(s), {records} decision record(s), over {state.round} round(s)."
    )


def step7_review_log(state: RunState, config: RunnableConfig) -> Update:
    """Step 7: append the review-log entry, exactly once per run."""
    deps = deps_of(config)
    assert state.outcome is not None
    evaluation = state.evaluation
    comprehension = state.comprehension
    cold = len(evaluation.blocking if evaluation else []) + len(
        blocking(comprehension.findings) if comprehension else []
    )
    items = [f"{f.severity}: {f.describe()}" for f in state.outcome.remaining]
    items += [f"note: {n}" for n in state.notes]
    items += [
        f"surfaced: D{s.decision} by {s.role} (research log; the adversarial gate re-opened)"
        for s in state.surfaced
        if s.decision
    ]
    if state.outcome.verdict == SHOULD_FIX_REMAINS:
        items.append("debt: the should-fix findings above carry forward to the next mutation")
    entry = MutationEntry(
        kind=state.kind,
        target_file=deps.abs(state.draft).name,
        diff_summary=_diff_summary(state, deps),
        mechanical_target="design",
        mechanical="PASS" if not state.mechanical else f"{len(state.mechanical)} findings",
        cold_read_scope="whole-doc",
        cold_read="PASS" if not cold else f"{cold} findings",
        findings=items,
        iteration=state.round,
        budget=state.budget,
        outcome=state.outcome.verdict,
    )
    result = append_entry(deps.design.mutations, entry, run_id=state.run_id)
    deps.events.emit("review_log", entry=result.number, appended=result.appended)
    return {"review_entry": result.number}


def step1_stamp(state: RunState, config: RunnableConfig) -> Update:
    """Phase 1 only: the idempotent line-1 workflow-sha stamp. Phase 4 artifacts are never stamped."""
    deps = deps_of(config)
    if state.kind != PHASE1:
        return {"stamped": False}
    path = deps.abs(state.draft)
    if not path.is_file() or path.stat().st_size == 0:
        return {"stamped": False}  # nothing was written: there is nothing to stamp
    wrote = prepend_stamp(path, deps.workflow_sha)
    deps.events.emit("stamp", path=deps.rel(path), wrote=wrote)
    return {"stamped": has_stamp(path)}


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
        f"{entry}\n## Outcome\n\n{line}\n"
    )
    atomic_write(deps.run_dir / "summary.md", summary)
    # The outcome event is the finish's record (status, runs and resume read it): written last,
    # once. A finish run again after a crash finds it and writes it no second time.
    if not deps.events.recorded("outcome"):
        deps.events.emit(
            "outcome",
            outcome=state.outcome.verdict,
            line=line,
            rounds=state.round,
            review_log_entry=state.review_entry,
        )
    return {"summary": line}
