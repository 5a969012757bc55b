"""What a creation run would overwrite that came after the last creation: the check made before
``create`` or ``final`` writes anything (docs/graph.md, "Later work is never overwritten").

``create`` rewrites design.md from the research log, so two kinds of later work would be lost
without a word: interactive edits logged after the last phase1-creation entry, and a hand edit
(the document's bytes differ from what designloop last wrote). ``final`` has the second only,
over design-final.md. What designloop last wrote is known twice: each review-log entry records
the documents' SHA-256 as the run left them (so a fresh clone knows it), and each run's events
record them whenever it stops writing (a finish, a pause, a budget stop, a discard), so a run
that never reached the log counts too. A document neither knows (written before these records,
or by another tool) is nobody's later work.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from pipeline import confinement
from pipeline.errors import InputError
from pipeline.formats.design_dir import DesignDir
from pipeline.formats.kinds import CREATION_KINDS, PHASE1, CreationKind, Kind
from pipeline.formats.review_log import LogEntry, parse_entries
from pipeline.runs.fingerprint import output_files
from pipeline.runs.records import RunRecord, portable
from pipeline.runs.store import RunStore


class LaterWork(InputError):
    """A run would overwrite work done after the last one (a new creation) or recorded after it
    started (a resumed run); nothing was written."""

    overwrite: Overwrite | None = None


@dataclass(slots=True)
class Overwrite:
    """Why a creation run would overwrite later work, and the documents it would overwrite."""

    reasons: list[str] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.reasons)

    def refusal(self, command: str, directory: Path, forced: str | None = None) -> LaterWork:
        error = LaterWork(
            f"{command} would overwrite later work: " + "; ".join(self.reasons),
            file=directory,
            hint=f"keep it (designloop edit works on the design as it is now), or run "
            f"{forced or f'designloop {command} DIR --force'}: the overwritten files are kept under "
            "runs/<run-id>/",
        )
        error.overwrite = self
        return error


def _edits_since_creation(entries: list[LogEntry]) -> list[LogEntry]:
    last = max((i for i, e in enumerate(entries) if e.kind == PHASE1), default=-1)
    return [e for e in entries[last + 1 :] if e.kind not in CREATION_KINDS]


def _from_log(entries: list[LogEntry], name: str) -> tuple[str, str] | None:
    """The SHA-256 the latest entry that recorded ``name`` gives it, and that entry."""
    for entry in reversed(entries):
        if name in entry.wrote:
            return entry.wrote[name], f"Mutation {entry.number}"
    return None


def _from_runs(store: RunStore, directory: str, rel: str) -> tuple[str | None, str] | None:
    """The SHA-256 the latest run of the directory that recorded ``rel`` left it with."""
    records = sorted(store.records(directory), key=lambda r: r.created, reverse=True)
    for record in records:
        try:
            view = store.view(record.run_id)
        except InputError:
            continue
        if rel in view.wrote:
            return view.wrote[rel], f"run {record.run_id} ({view.state})"
    return None


def later_work(design: DesignDir, kind: CreationKind, store: RunStore) -> Overwrite:
    """What a ``kind`` creation run on ``design`` would overwrite (empty: nothing)."""
    found = Overwrite()
    entries = parse_entries(design.mutations)
    if kind == PHASE1:
        edits = _edits_since_creation(entries)
        if edits:
            named = ", ".join(f"Mutation {e.number} ({e.kind})" for e in edits)
            since = f"the review log has {len(edits)} edit(s) since the last phase1-creation"
            found.reasons.append(f"{since}: {named}")
            found.files.append(design.design)
    directory = portable(design.root, design.repo_root)
    for path in output_files(design, kind):
        if not path.is_file():
            continue
        now = hashlib.sha256(confinement.read_bytes(path)).hexdigest()
        name = path.relative_to(design.root).as_posix()
        known = [k for k in (_from_log(entries, name), _from_runs(store, directory, design.rel(path))) if k]
        if not known or any(digest == now for digest, _ in known):
            continue
        where = " and ".join(source for _, source in known)
        found.reasons.append(f"{name} was changed by hand since designloop last wrote it ({where})")
        if path not in found.files:
            found.files.append(path)
    return found


def _started(run_id: str, store: RunStore) -> dt.datetime | None:
    """When run ``run_id`` started: its record's time, else the time its id begins with."""
    try:
        return dt.datetime.fromisoformat(store.record(run_id).created)
    except (InputError, ValueError, OSError):
        pass
    try:
        return dt.datetime.strptime(run_id[:15], "%Y%m%d-%H%M%S").replace(tzinfo=dt.UTC)
    except ValueError:
        return None


def since_started(design: DesignDir, record: RunRecord, store: RunStore) -> Overwrite:
    """What a resumed run would overwrite that was recorded after it started: the review-log
    entries of runs started later that wrote one of its documents, and the later runs of the
    directory (finished or not) that wrote one. Empty: nothing stands in the way."""
    found = Overwrite()
    start = dt.datetime.fromisoformat(record.created)
    outputs = {p.relative_to(design.root).as_posix(): p for p in _documents(design, record.kind)}

    def later(run_id: str | None) -> bool:
        if run_id is None or run_id == record.run_id:
            return False
        when = _started(run_id, store)
        return when is not None and when > start

    seen: set[str] = set()
    for entry in parse_entries(design.mutations):
        touched = [name for name in entry.wrote if name in outputs] or (
            [entry.file] if entry.file in outputs else []
        )
        if touched and later(entry.run_id):
            assert entry.run_id is not None
            seen.add(entry.run_id)
            found.reasons.append(
                f"Mutation {entry.number} ({entry.kind}, run {entry.run_id}) wrote {', '.join(touched)} "
                f"after run {record.run_id} started"
            )
            found.files += [outputs[n] for n in touched if outputs[n] not in found.files]
    directory = portable(design.root, design.repo_root)
    for other in store.records(directory):
        if other.run_id in seen or not later(other.run_id):
            continue
        try:
            view = store.view(other.run_id)
        except InputError:
            continue
        rels = {design.rel(p): name for name, p in outputs.items()}
        touched = sorted(rels[rel] for rel in view.wrote if rel in rels)
        if touched and view.state != "discarded":
            found.reasons.append(
                f"run {other.run_id} ({other.kind}, {view.state}) wrote {', '.join(touched)} "
                f"after run {record.run_id} started"
            )
            found.files += [outputs[n] for n in touched if outputs[n] not in found.files]
    return found


def _documents(design: DesignDir, kind: Kind) -> list[Path]:
    """The documents a run of ``kind`` writes."""
    if kind in CREATION_KINDS:
        return output_files(design, kind)
    return [design.design, design.mechanics]
