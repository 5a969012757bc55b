"""The one finish of both graphs: the verdict (Step 6's outcomes), the review-log entry (Step 7)
and the presentation (Step 9), each idempotent and keyed by the run.

What differs between the kinds is an explicit input, never a copied function: the ladder takes
what stands when the loop exits (``Standing``: what remains, whether a decision only phase 0 can
make is among it, whether a required review never happened, whether the gate PASS needs
passed); the entry takes what the kind says of its own run (``EntryParts``: the diff summary,
the mechanical and cold-read lines, its suggestions ...). Everything else, the order of the
entry's findings, the story blocks, the research log's words withheld, the fence before the
append, the summary and the outcome event, is said once, here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pipeline.agents.resolve import engine_summary, not_judged, roles_played
from pipeline.errors import WiringError
from pipeline.formats.contracts import declined_words
from pipeline.formats.findings import Finding
from pipeline.formats.kinds import RunVerdict, Target
from pipeline.formats.review_log import DECLINED_TAIL, MutationEntry, append_entry
from pipeline.formats.textio import atomic_write
from pipeline.graph import story
from pipeline.graph.deps import RunDeps
from pipeline.graph.diff import file_diffs, unified
from pipeline.graph.lifecycle import record_revisions
from pipeline.graph.state import (
    BLOCKER_REMAINS,
    DECISION_NEEDED,
    INCONCLUSIVE,
    PASS,
    SHOULD_FIX_REMAINS,
    BaseUpdate,
    FileDiff,
    Outcome,
    RunStateBase,
)
from pipeline.graph.withhold import withheld_section, withhold_log_words
from pipeline.runs.check_events import VerdictCheck
from pipeline.runs.events import Finished, ReviewLogged, Stopped
from pipeline.runs.snapshot import snapshot_files

OUTCOME_LINE: dict[RunVerdict, str] = {
    PASS: "PASS",
    BLOCKER_REMAINS: "BLOCKER REMAINS — manual resolution required",
    SHOULD_FIX_REMAINS: "COMPLETE WITH SHOULD-FIX FINDINGS",
    INCONCLUSIVE: "INCONCLUSIVE — a required review never happened",
    DECISION_NEEDED: "DECISION NEEDED — take it to a phase-0 research log decision",
}
DEBT = "debt: the should-fix findings above carry forward to the next mutation"


def outcome_line(outcome: Outcome) -> str:
    """The outcome as one line (the summary, the live view, the CLI): the verdict's line, and
    the parts of the instruction that were declined when there were any."""
    line = OUTCOME_LINE[outcome.verdict]
    if outcome.declined:
        line += f" — declined: {'; '.join(outcome.declined)}"
    return line


def entry_outcome(outcome: Outcome) -> str:
    """The outcome as the review-log entry's Iterations line names it."""
    if not outcome.declined:
        return outcome.verdict
    return f"{outcome.verdict}, {declined_words(len(outcome.declined))}"


@dataclass(frozen=True, slots=True)
class Standing:
    """What stands when the loop exits, as the kind reads it: the ladder's input."""

    remaining: list[Finding]
    """Every finding that stands (blockers, should-fix, and what a missing review leaves)."""
    decisions: bool = False
    """A decision-shaped gap only a phase-0 decision can settle (phase 4)."""
    unreviewed: bool = False
    """A required review never happened (or the author never wrote a draft)."""
    passed: bool = True
    """The gate PASS needs passed (the creation kinds' comprehension gate)."""
    declined: list[str] = field(default_factory=list)
    """The parts of the user's instruction the inline editor declined (a flag, not a rung)."""


def ladder(standing: Standing) -> RunVerdict:
    """The seed's Outcomes, in order of what a person must act on first: a blocker; a decision
    only phase 0 can make; a review that never happened; should-fix debt; else PASS."""
    if any(f.severity == "blocker" for f in standing.remaining):
        return BLOCKER_REMAINS
    if standing.decisions:
        return DECISION_NEEDED
    if standing.unreviewed:
        return INCONCLUSIVE
    if standing.remaining or not standing.passed:
        return SHOULD_FIX_REMAINS
    return PASS


def decide(
    state: RunStateBase,
    deps: RunDeps,
    standing: Standing,
    unchecked: Callable[[], str | None] | None = None,
) -> BaseUpdate:
    """Step 6: the verdict. A PASS is asserted first: ``unchecked`` says why it would not be true
    of the bytes now on disk, and a PASS it refutes stops the run (exit 70) unlogged."""
    verdict = ladder(standing)
    if verdict == PASS and unchecked is not None and (why := unchecked()):
        deps.events.emit(Stopped(message=f"PASS without a check: {why}"))
        raise WiringError(
            f"the run would end PASS though {why}",
            hint="this is a defect in designloop; the run stays resumable and nothing was logged",
        )
    deps.events.emit(
        VerdictCheck(
            round=state.round,
            outcome=verdict,
            remaining=len(standing.remaining),
            declined=len(standing.declined),
        )
    )
    return {"outcome": Outcome(verdict=verdict, remaining=standing.remaining, declined=standing.declined)}


@dataclass(slots=True)
class EntryParts:
    """What a kind's review-log entry says of its own run; the rest every entry says alike."""

    target_file: str
    diff_summary: str
    mechanical_target: Target
    mechanical: str
    cold_read_scope: str
    cold_read: str
    suggestions: list[str] = field(default_factory=list)
    earlier: list[str] = field(default_factory=list)
    """What earlier rounds left on record (a role INCONCLUSIVE then), after what remains."""
    surfaced: list[str] = field(default_factory=list)
    """Decisions the run surfaced to the research log, after the notes."""
    blocker_warning: str | None = None
    """Said when the run ends BLOCKER REMAINS."""
    extra: list[str] = field(default_factory=list)
    """Blocks of the kind's own, before the review's story."""
    one_line: str | None = None
    """A one-line entry (a zero-delta design-sync) that stands for the whole body."""


def entry_items(state: RunStateBase, parts: EntryParts) -> list[str]:
    """The entry's Findings list: what remains (the outcome's own record, the same list --json
    carries), what earlier rounds left, suggestions, notes, surfaced decisions, the debt."""
    assert state.outcome is not None
    verdict = state.outcome.verdict
    items = [f"{f.severity}: {f.describe()}" for f in state.outcome.remaining]
    items += [f"declined: {part}{DECLINED_TAIL}" for part in state.outcome.declined]
    items += parts.earlier + parts.suggestions + [f"note: {n}" for n in state.notes] + parts.surfaced
    if verdict == SHOULD_FIX_REMAINS:
        items.append(DEBT)
    if verdict == BLOCKER_REMAINS and parts.blocker_warning:
        items.append(parts.blocker_warning)
    return items


def run_diffs(state: RunStateBase, deps: RunDeps) -> list[FileDiff]:
    """The real diff of every file the run may write, against its before-snapshot."""
    return file_diffs(deps, snapshot_files(deps.design, state.kind))


def log_entry(state: RunStateBase, deps: RunDeps, parts: EntryParts, diffs: list[FileDiff]) -> BaseUpdate:
    """Step 7: append the entry exactly once per run (it carries the run id; a second append
    finds the first), without the research log's words, right after the lock's fence."""
    assert state.outcome is not None
    blocks = story.entry_blocks(state, state.outcome.remaining, wrote=bool(diffs))
    ran = {item.role for item in state.usage}
    played = roles_played(ran, deps.runtime.model_specs)
    models = [f"**Models**: {engine_summary(played)}", ""]
    if unjudged := not_judged(played):
        models += [
            f"**Not judged offline**: {'; '.join(unjudged)} (a rule reads words, not meaning: "
            "configure a model for the reviewing roles to have these judged)",
            "",
        ]
    blocks = [*models, *blocks] if ran else blocks
    extra = [*parts.extra, *([""] if parts.extra and blocks else []), *blocks]
    entry = MutationEntry(
        kind=state.kind,
        target_file=parts.target_file,
        diff_summary=parts.diff_summary,
        mechanical_target=parts.mechanical_target,
        mechanical=parts.mechanical,
        cold_read_scope=parts.cold_read_scope,
        cold_read=parts.cold_read,
        findings=entry_items(state, parts),
        iteration=state.round,
        budget=state.budget,
        outcome=entry_outcome(state.outcome),
        wrote=deps.left(state.kind),
        extra=extra,
        one_line=parts.one_line,
    )
    record_revisions(deps, state, entry)  # the entry names each revision the run leaves
    entry, withheld = withhold_log_words(deps.design, entry)
    deps.fence()
    result = append_entry(deps.design.mutations, entry, run_id=state.run_id, lock_dir=deps.locks)
    deps.events.emit(ReviewLogged(entry=result.number, appended=result.appended, withheld=withheld))
    return {"review_entry": result.number, "entry": result.text, "diff": diffs}


def present(
    state: RunStateBase, deps: RunDeps, before: list[str] | None = None, after: list[str] | None = None
) -> BaseUpdate:
    """Step 9: the diff of every file the run changed, the entry as Step 7 appended it, the
    outcome line, saved as ``runs/<run-id>/summary.md`` (rewritten whole), then the outcome
    event. ``before``: the kind's sections ahead of the entry; ``after``: behind the outcome."""
    assert state.outcome is not None and state.entry is not None
    line = outcome_line(state.outcome)
    diff = unified(deps, snapshot_files(deps.design, state.kind))
    parts = [f"# {state.kind} {state.run_id}", "", "## Diff", "", f"```diff\n{diff}```", ""]
    parts += [*(before or []), "## Review log", "", state.entry, *withheld_section(deps.run_dir)]
    parts += ["## Outcome", "", line, "", *(after or [])]
    atomic_write(deps.run_dir / "summary.md", "\n".join(parts))
    record_outcome(deps, state, line)
    return {"summary": line}


def record_outcome(deps: RunDeps, state: RunStateBase, line: str) -> None:
    """The outcome event, the finish's record (status, runs and resume read it): written last,
    once, after the documents as the run left them. A finish run again after a crash finds it
    and writes it no second time."""
    assert state.outcome is not None
    if not deps.events.recorded(Finished):
        deps.refresh_claims(state.kind)
        deps.record_wrote(state.kind)
        deps.events.emit(
            Finished(
                outcome=state.outcome.verdict,
                line=line,
                rounds=state.round,
                review_log_entry=state.review_entry,
                findings=state.outcome.remaining,
                declined=state.outcome.declined,
            )
        )
