"""Step 1 (the author writes the draft, the stamp lands on it) and the two ways back to the
author in Step 6: the mechanical-first re-spawn and the next round."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

from pipeline import confinement
from pipeline.agents.inputs import RoundInputs, params_for
from pipeline.agents.runtime import RoleResult
from pipeline.agents.usage import RoleUsage
from pipeline.formats.findings import blocking, merge
from pipeline.formats.kinds import PHASE1
from pipeline.formats.spawn_params import SpawnParams
from pipeline.formats.stamp import has_stamp, prepend_stamp, stamp_of
from pipeline.graph.create.companion import creation_target, stamp_companion
from pipeline.graph.create.state import AUTHOR, AuthorTurn, Inconclusive, RunState, Update
from pipeline.graph.deps import RunContext, RunDeps
from pipeline.runs.events import RoundStarted, Stamped
from pipeline.runs.fingerprint import output_files

INLINE_DRAFT_CHARS = 1500


def step1_seed_scope(state: RunState, runtime: RunContext) -> Update:
    """Step 1 (before the author): settle the target file for this kind.

    A run started from the command line arrives with everything set; LangGraph Studio
    sends only the run id and the kind, and the defaults fill in the rest.
    """
    deps = runtime.context
    both = creation_target(deps, state.kind)
    if state.draft:
        return {"target": both}
    target = deps.design.design if state.kind == PHASE1 else deps.design.final
    return {"draft": deps.rel(target), "budget": deps.limits.iteration_budget, "target": both}


def fingerprint(*paths: Path) -> str | None:
    """The SHA-256 of the files' bytes (an absent file counts as absent); None when the
    first, the draft, cannot be read."""
    digest = hashlib.sha256()
    for index, path in enumerate(paths):
        try:
            digest.update(b"\x00file\x00" + confinement.read_bytes(path))
        except OSError:
            if index == 0:
                return None
            digest.update(b"\x00absent\x00")
    return digest.hexdigest()


async def step1_author(state: RunState, runtime: RunContext) -> Update:
    """Step 1: the code-grounded author writes the draft to output_path and returns a summary.
    What comes before and after the spawn reads and writes files: in a thread, off the event
    loop (graph.node)."""
    deps = runtime.context
    params, before = await asyncio.to_thread(_author_params, state, deps)
    result, usage = await deps.spawn(params)
    return await asyncio.to_thread(_author_turn, state, deps, before, result, usage)


def _author_params(state: RunState, deps: RunDeps) -> tuple[SpawnParams, tuple[str | None, str | None]]:
    """The round begins: the author's params, and the fingerprints before the spawn of the draft
    and of every output."""
    deps.events.emit(RoundStarted(round=state.round, budget=state.budget))
    draft = deps.abs(state.draft)
    flagged = tuple(state.flagged)
    inputs = RoundInputs(deps.design, state.kind, state.round, draft, flagged, target=state.target)
    return params_for(AUTHOR, inputs), (fingerprint(draft), outputs(state, deps))


def outputs(state: RunState, deps: RunDeps) -> str | None:
    """The fingerprint of every file the run writes: the draft, then its companion."""
    return fingerprint(deps.abs(state.draft), *output_files(deps.design, state.kind)[1:])


def _author_turn(
    state: RunState,
    deps: RunDeps,
    fingerprints: tuple[str | None, str | None],
    result: RoleResult,
    usage: RoleUsage,
) -> Update:
    """What the author's spawn left: whether it wrote a draft, and what the run notes of it."""
    round_ = state.round
    before, before_all = fingerprints
    draft = deps.abs(state.draft)
    # A failed author that left the file as it was wrote no draft, whatever an earlier run left
    # there; in a later round the draft an earlier round of this run wrote still stands.
    kept = round_ > 1 and state.author is not None and state.author.draft_ok
    written = result.status == "ok" or fingerprint(draft) != before or kept
    draft_ok = draft.is_file() and draft.stat().st_size > 0 and written
    notes = []
    summary = getattr(result.output, "summary", "") if result.output else ""
    if draft_ok and (len(summary) > INLINE_DRAFT_CHARS or "\n## " in summary):
        notes.append(
            f"round {round_}: the author returned the draft inline instead of a summary; "
            "the run used the file on disk (contract violation)"
        )
    # What the author left out of the seed's shape, and why, is the run's to say.
    notes += [
        f"round {round_}: {part.strip()}" for part in summary.split(". ") if part.startswith("Left out")
    ]
    if draft_ok and result.status != "ok":
        notes.append(
            f"round {round_}: the author's output was INCONCLUSIVE ({result.error}); "
            "the run used the draft on disk"
        )
    turn = AuthorTurn(
        round=round_,
        draft_ok=draft_ok,
        status=result.status,
        summary=summary[:500],
        error=result.error,
        before=before_all,
    )
    update: Update = {
        "author": turn,
        "author_failures": state.author_failures + (0 if draft_ok else 1),
        "usage": [usage],
        "notes": notes,
    }
    if result.status != "ok":
        update["inconclusive"] = [Inconclusive(round=round_, role=AUTHOR, error=result.error)]
    if fingerprint(draft) != before:
        deps.record_wrote(state.kind)
    return update


def step1_stamp(state: RunState, runtime: RunContext) -> Update:
    """Step 1's stamp, as soon as the seeded write lands: phase 1 only, idempotent (line 1 is
    checked first), so it is written once and kept across rounds and re-runs. Phase 4
    artifacts are never stamped."""
    deps = runtime.context
    path = deps.abs(state.draft)
    if state.kind != PHASE1 or state.author is None or not state.author.draft_ok:
        return {
            "stamped": has_stamp(path) if state.kind == PHASE1 else False,
            "unchanged": _unchanged(state, deps),
        }
    deps.fence()
    # A design that was stamped before the run keeps its stamp (the seed's idempotency guard).
    before = deps.before(path)
    kept = stamp_of(before) if before is not None else None
    wrote = prepend_stamp(path, deps.workflow_sha, kept)
    if wrote:
        sha = kept[len("<!-- workflow-sha: ") : -len(" -->")] if kept else deps.workflow_sha.get()
        deps.events.emit(Stamped(path=deps.rel(path), round=state.round, sha=sha, kept=kept is not None))
    # With target=both the seeded companion is stamped with the same SHA.
    companion = stamp_companion(deps) if state.target == "both" else True
    deps.record_wrote(state.kind)
    return {"stamped": companion, "unchanged": _unchanged(state, deps)}


def _unchanged(state: RunState, deps: RunDeps) -> list[int]:
    """This round, when it is not the first and its author turn, stamp included, left every
    output's bytes as they were when the turn began."""
    turn = state.author
    if state.round == 1 or turn is None or turn.round != state.round or turn.before is None:
        return []
    return [state.round] if outputs(state, deps) == turn.before else []


def step6_mechanical_first(state: RunState, runtime: RunContext) -> Update:
    """Step 6.2: a mechanical-first (or no-draft) re-spawn of the author; it consumes a round.
    Every mechanical blocker and should-fix goes to the author."""
    return {"round": state.round + 1, "flagged": blocking(state.mechanical)}


def step6_next_round(state: RunState, runtime: RunContext) -> Update:
    """Step 6: the loop continues; every blocker and should-fix of this round (mechanical,
    auditor, second check, comprehension gate) becomes the author's flagged passages."""
    flagged = blocking(state.mechanical)
    evaluation = state.this_round_evaluation()
    if evaluation is not None:
        flagged += evaluation.blocking
    comprehension = state.this_round_comprehension()
    if comprehension is not None:
        flagged += blocking(comprehension.findings)
    return {"round": state.round + 1, "flagged": merge(flagged)}
