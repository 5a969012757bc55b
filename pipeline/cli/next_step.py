"""What to do next, in one line, at the end of every run and lifecycle command: a newcomer is
told what a candidate is and where it goes from here (approve it, then final), and a paused,
stopped or inconclusive run says how it goes on."""

from __future__ import annotations

from pathlib import Path

from pipeline.formats.kinds import PHASE4

CANDIDATE = "a candidate: the revision this run left, not yet accepted"


def shown(directory: Path) -> str:
    """The directory as a user pastes it: relative to here when it is below here."""
    import os
    import shlex

    try:
        text = os.path.relpath(directory)
    except ValueError:
        text = str(directory)
    return shlex.quote(str(directory) if text.startswith("..") else text)


def after_run(
    *,
    kind: str,
    directory: Path,
    run_id: str,
    outcome: str,
    revisions: list[dict[str, object]],
    approved: bool = False,
    declined: int = 0,
) -> str:
    """The one line a run ends with (before its outcome line); ``declined``: how many parts of
    the instruction the run declined (a candidate is then accepted as it is, or asked again)."""
    where = shown(directory)
    command = "final" if kind == PHASE4 else "create"
    if outcome == "PAUSED":
        return f"next: resolve the research log's adversarial gate, then designloop resume {run_id}"
    if outcome == "STOPPED":
        return f"next: designloop resume {run_id} with a larger --budget, --max-cost or --max-requests"
    if outcome == "INCONCLUSIVE":
        return (
            "next: the review log names the role that never returned a valid review and why; "
            f"fix that (a model, a key, a server), then designloop {command} {where} again"
        )
    if outcome == "DECISION NEEDED":
        return "next: take the decision the findings name back to the research log (phase 0)"
    if outcome in ("BLOCKER REMAINS", "SHOULD-FIX REMAINS"):
        return (
            f"next: fix the open findings (the review log lists them) with designloop edit {where} "
            "(docs/edit.md); a revision is approved once a run ends PASS"
        )
    if approved:
        return after_approval(kind, directory)
    candidates = [
        str(rev["name"]) + f" r{rev['number']}" for rev in revisions if rev.get("state") == "candidate"
    ]
    if candidates and declined:
        parts = "the part" if declined == 1 else f"the {declined} parts"
        return (
            f"next: read {parts} of the instruction the run declined (above); designloop approve {where}"
            f" accepts {', '.join(candidates)} as it is, or designloop edit {where} asks again"
        )
    if candidates:
        return f"next: designloop approve {where} accepts {', '.join(candidates)} ({CANDIDATE})"
    return f"next: designloop status {where} shows where the design stands"


def after_approval(kind: str, directory: Path) -> str:
    """What follows an accepted revision: phase 4 after phase 1, and committing the record."""
    where = shown(directory)
    if kind != PHASE4:
        built = "build what the design describes"
        return f"next: commit design-approvals.md; {built}, then designloop final {where}"
    return f"next: commit design-final.md and design-approvals.md; designloop ready {where} checks it in CI"
