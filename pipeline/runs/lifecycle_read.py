"""The read side of the lifecycle (docs/lifecycle.md): a design directory's revisions and
approvals as they are now, the stage's documents, where revisions are looked up, the state of
each revision, and a revision's bytes."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pipeline import confinement
from pipeline.errors import InputError
from pipeline.formats.approvals import NAME, Approval, accepted, parse_approvals, state_of
from pipeline.formats.design_dir import DesignDir
from pipeline.formats.review_log import entry_findings
from pipeline.formats.revisions import COMPANION, FILES, Revision, basename
from pipeline.runs.revisions import RevisionStore, digest, history, latest

if TYPE_CHECKING:
    from pipeline.runs.store import RunStore


def stage(design: DesignDir) -> str:
    """``final`` once design-final.md exists (the design is frozen then), else ``design``."""
    return "final" if design.final.exists() else "design"


def stage_files(design: DesignDir) -> list[str]:
    """The documents readiness and a plain approve are about: the stage's document, and its
    companion when it exists."""
    main = stage(design)
    companion = COMPANION[main]
    return [main, *([companion] if (design.root / FILES[companion]).exists() else [])]


@dataclass(slots=True)
class Directory:
    """A design directory's lifecycle as it is now: its revisions and its approvals."""

    design: DesignDir
    revisions: list[Revision] = field(default_factory=list)
    approvals: list[Approval] = field(default_factory=list)

    @staticmethod
    def read(design: DesignDir, stores: Sequence[RevisionStore]) -> Directory:
        return Directory(design, history(design, stores), parse_approvals(design.root / NAME))

    def current(self, file: str) -> Revision | None:
        return latest(self.revisions, file)

    def accepted(self, file: str) -> Approval | None:
        return accepted(self.approvals, file)

    def on_disk(self, file: str) -> str | None:
        return digest(self.design.root / FILES[file])

    def rejected(self, rev: Revision) -> Approval | None:
        return next((a for a in self.approvals if a.action == "rejected" and a.names(rev)), None)


def open_findings(design: DesignDir, rev: Revision) -> list[str]:
    """The blocker and should-fix lines the revision's run left, as its review-log entry lists them."""
    return entry_findings(design.mutations, rev.entry) if rev.entry is not None else []


def revision_stores(store: RunStore) -> list[RevisionStore]:
    """Where revisions are looked up: the store named, then (for a shared store) this checkout's
    local one, where interactive edits record theirs."""
    from pipeline.runs.store import LocalStore

    found = [store.revisions()]
    if not isinstance(store, LocalStore):
        found.append(LocalStore(store.runs_dir).revisions())
    return found


def revision_states(store: RunStore, run_id: str) -> dict[tuple[str, int], str]:
    """The state of every revision of a run's design directory, as this checkout (the one the
    run is found in: runs.records.locate) tells it; empty when it does not hold the directory."""
    from pipeline.formats.design_dir import open_design_dir
    from pipeline.runs.records import locate

    try:
        _, directory, _ = locate(store.record(run_id), store.runs_dir / run_id)
        d = Directory.read(open_design_dir(directory), revision_stores(store))
    except InputError:
        return {}
    out: dict[tuple[str, int], str] = {}
    for rev in d.revisions:
        current = d.current(rev.file)
        out[rev.file, rev.number] = state_of(d.approvals, rev, current.number if current else 0)
    return out


def _which(d: Directory, file: str, which: str) -> tuple[int, str]:
    """The number and SHA-256 of the revision ``which`` names (a number, accepted or current)."""
    name = basename(file)
    if which == "current":
        rev = d.current(file)
        if rev is None:
            raise InputError(f"{name} has no revision", file=d.design.root, hint="designloop status DIR")
        return rev.number, rev.sha256
    if which == "accepted":
        acc = d.accepted(file)
        if acc is None:
            raise InputError(
                f"no revision of {name} is accepted",
                file=d.design.root,
                hint="pass --revision N or --revision current (designloop status DIR lists them)",
            )
        return acc.number, acc.sha256
    if not which.isdigit():
        raise InputError(
            f"--revision {which!r} is not a number, accepted or current", hint="e.g. --revision 3"
        )
    found = next((r for r in d.revisions if r.file == file and r.number == int(which)), None)
    if found is None:
        raise InputError(
            f"no revision {which} of {name} is recorded",
            file=d.design.root,
            hint="designloop status DIR lists them",
        )
    return found.number, found.sha256


def find_bytes(design: DesignDir, stores: Sequence[RevisionStore], file: str, which: str) -> bytes:
    """A revision's bytes: from a run store that kept them, else the file on disk when it still
    is that revision. The bytes are checked against the revision's SHA-256 either way."""
    from pipeline.runs.records import portable

    d = Directory.read(design, stores)
    number, sha = _which(d, file, which)
    directory = portable(design.root, design.repo_root)
    for store in stores:
        data = store.content(directory, file, number)
        if data is not None and hashlib.sha256(data).hexdigest() == sha:
            return data
    path = design.root / FILES[file]
    if d.on_disk(file) == sha:
        return confinement.read_bytes(path)
    raise InputError(
        f"the bytes of {basename(file)} r{number} (sha256 {sha[:12]}…) are not in this run store, and the "
        "file on disk has moved on",
        file=design.root,
        hint="run designloop show where the revision's run ran (its --runs-dir or --store), or find the "
        f"commit whose {FILES[file]} has that SHA-256 in version control",
    )
