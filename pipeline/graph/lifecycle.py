"""The finish's one lifecycle step: record the revisions a run leaves (docs/lifecycle.md).

The one finish (graph.finish.log_entry, every kind's Step 7) calls ``record_revisions`` right
before it appends its review-log entry, which then names each revision (a marker, and a
``**Revision**`` line) and, at phase 4, the design.md revision the run finalised. A finish run
again after a crash finds the revisions it already recorded (one per run and document).
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import replace

from pipeline import confinement
from pipeline.formats.approvals import NAME, accepted, parse_approvals
from pipeline.formats.kinds import CREATION_KINDS, PHASE4, Kind
from pipeline.formats.review_log import MutationEntry
from pipeline.formats.revisions import Finalised, Revision, file_of
from pipeline.graph.deps import RunDeps
from pipeline.graph.state import RunStateBase
from pipeline.runs.event_fields import RevisionRef
from pipeline.runs.events import RevisionRecorded
from pipeline.runs.fingerprint import Fingerprints, output_files
from pipeline.runs.revisions import SqliteRevisions, actor, directory_of, history, input_digests, latest
from pipeline.runs.snapshot import snapshot_reader


def written(deps: RunDeps, kind: Kind) -> list[tuple[str, bytes]]:
    """The documents the run leaves a revision of, with their bytes: every output of a creation
    kind that exists (the run wrote and reviewed it); the documents an edit changed."""
    d = deps.design
    out: list[tuple[str, bytes]] = []
    if kind in CREATION_KINDS:
        for path in output_files(d, kind):
            if path.is_file():
                out.append((path.relative_to(d.root).as_posix(), confinement.read_bytes(path)))
        return out
    before = snapshot_reader(d, deps.run_dir)
    for path in (d.design, d.mechanics):
        if path.is_file() and (data := confinement.read_bytes(path)) != before(path):
            out.append((path.relative_to(d.root).as_posix(), data))
    return out


def finalised(deps: RunDeps, revisions: list[Revision]) -> Finalised | None:
    """The design.md a phase-4 run finalised: its bytes, and the revision they are."""
    try:
        sha = hashlib.sha256(confinement.read_bytes(deps.design.design)).hexdigest()
    except FileNotFoundError:
        return None
    current = latest(revisions, "design")
    if current is None:
        return Finalised(sha, None, "no revision of it is recorded")
    if current.sha256 != sha:
        return Finalised(sha, None, f"changed since {current.label()}")
    return Finalised(sha, current.number)


def record_revisions(deps: RunDeps, state: RunStateBase, entry: MutationEntry) -> None:
    """Record a revision of each document the run leaves (its bytes go to the run store) and
    name them, and at phase 4 the design.md finalised, in the review-log ``entry``."""
    assert state.outcome is not None
    store = deps.revisions or SqliteRevisions(deps.run_dir.parent)
    design = deps.design
    known = history(design, [store])
    final = finalised(deps, known) if state.kind == PHASE4 else None
    docs = [(file, data) for rel, data in written(deps, state.kind) if (file := file_of(rel)) is not None]
    # Bytes equal to the accepted revision's are that revision: never a new candidate.
    approvals = parse_approvals(design.root / NAME)
    docs = [
        (file, data)
        for file, data in docs
        if (acc := accepted(approvals, file)) is None or acc.sha256 != hashlib.sha256(data).hexdigest()
    ]
    if not docs:
        return
    base = Revision(
        file="design",
        number=0,
        sha256="",
        run_id=state.run_id,
        kind=state.kind,
        outcome=state.outcome.verdict,
        declined=len(state.outcome.declined),
        requested_by=deps.requested_by,
        actor=actor(design.repo_root),
        time=dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        workflow=deps.workflow_sha.get(),
        inputs=input_digests(
            design, state.kind, Fingerprints(deps.run_dir.parent, private=lambda _: deps.runtime.private_dirs)
        ),
    )
    recorded: list[Revision] = []
    for file, data in docs:
        floor = max((r.number for r in known if r.file == file), default=0)
        sha = hashlib.sha256(data).hexdigest()
        revision = replace(base, file=file, sha256=sha, finalised=final if file.startswith("final") else None)
        # The store keeps no declined count (the review log's marker does): carried over here.
        added = store.add(directory_of(design), revision, data, floor)
        recorded.append(replace(added, declined=revision.declined))
    entry.revisions = recorded
    entry.finalised = final.describe() if final is not None else None
    if not deps.events.recorded(RevisionRecorded):
        deps.events.emit(
            RevisionRecorded(
                files={r.file: RevisionRef(number=r.number, sha256=r.sha256, path=r.path) for r in recorded},
                finalised=final.encode() if final is not None else None,
            )
        )
