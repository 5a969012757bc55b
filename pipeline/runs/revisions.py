"""Where revisions are kept (docs/lifecycle.md): the run store keeps each revision with its bytes
(the local store in ``runs/revisions.sqlite``, the PostgreSQL store in its ``revisions``
table), and the review log names each one (formats.revisions). A directory's history is the
union of the two, so a clone without the run store still knows every revision but its bytes.

Numbers are allocated once per run and document, in one transaction, above every number the
store or the review log already has: a finish run again after a crash finds its own revision.
"""

from __future__ import annotations

import contextlib
import getpass
import hashlib
import json
import os
import sqlite3
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from pipeline import confinement
from pipeline.formats.database import check_database, sqlite_failure
from pipeline.formats.design_dir import DesignDir
from pipeline.formats.kinds import PHASE1, PHASE4
from pipeline.formats.review_log import log_revisions, parse_entries
from pipeline.formats.revisions import Finalised, Revision, merge
from pipeline.settings import REVISIONS, make_runs_dir

if TYPE_CHECKING:  # a finish digests its inputs; the commands that read revisions never load it
    from pipeline.runs.fingerprint import Fingerprints

WHAT = "revision store"
INPUT_DIGEST = 16
"""Hex digits kept of each input part's SHA-256: enough to tell a change, short in the log."""
COLUMNS = (
    "file, number, sha256, run_id, kind, outcome, requested_by, actor, recorded_at, workflow, inputs, "
    "finalised"
)
SCHEMA = """CREATE TABLE IF NOT EXISTS revisions (
    directory TEXT NOT NULL, file TEXT NOT NULL, number INTEGER NOT NULL, family TEXT NOT NULL,
    sha256 TEXT NOT NULL, run_id TEXT NOT NULL, kind TEXT NOT NULL, outcome TEXT NOT NULL,
    requested_by TEXT NOT NULL, actor TEXT NOT NULL, recorded_at TEXT NOT NULL, workflow TEXT,
    inputs TEXT NOT NULL, finalised TEXT, content BLOB NOT NULL,
    PRIMARY KEY (directory, file, number), UNIQUE (directory, file, run_id))"""


class RevisionStore(Protocol):
    """A run store's revisions: each with the bytes it names."""

    def revisions(self, directory: str) -> list[Revision]:
        """Every revision of the design directory (its path relative to the repository root)."""

    def add(self, directory: str, revision: Revision, content: bytes, floor: int) -> Revision:
        """Record ``revision`` (its number is allocated: above ``floor`` and every stored one)
        with ``content``; a revision of the same run and document already there is returned
        as it is."""

    def content(self, directory: str, file: str, number: int) -> bytes | None:
        """A revision's bytes, or None when this store does not hold them."""


def row_revision(row: Sequence[object]) -> Revision:
    """A revision from a row of COLUMNS (either store)."""
    file, number, sha, run_id, kind, outcome, by, actor, time, workflow, inputs, finalised = row
    return Revision(
        file=str(file),
        number=int(str(number)),
        sha256=str(sha),
        run_id=str(run_id),
        kind=str(kind),
        outcome=str(outcome),
        requested_by=str(by),
        actor=str(actor),
        time=str(time),
        workflow=str(workflow) if workflow else None,
        inputs=dict(json.loads(str(inputs))) if inputs else {},
        finalised=Finalised.decode(str(finalised)) if finalised else None,
    )


def row_values(directory: str, rev: Revision, content: bytes) -> tuple[object, ...]:
    return (
        directory,
        rev.file,
        rev.number,
        rev.family(directory),
        rev.sha256,
        rev.run_id,
        rev.kind,
        rev.outcome,
        rev.requested_by,
        rev.actor,
        rev.time,
        rev.workflow,
        json.dumps(rev.inputs, sort_keys=True),
        rev.finalised.encode() if rev.finalised else None,
        content,
    )


INSERT = (
    "INSERT INTO revisions (directory, file, number, family, sha256, run_id, kind, outcome, "
    "requested_by, actor, recorded_at, workflow, inputs, finalised, content) VALUES ({})"
)


class SqliteRevisions:
    """The local store's revisions: one SQLite file under the runs directory."""

    def __init__(self, runs_dir: Path) -> None:
        self.runs_dir = runs_dir
        self.path = runs_dir / REVISIONS

    @contextlib.contextmanager
    def _db(self, write: bool) -> Iterator[sqlite3.Connection | None]:
        if not write and not self.path.is_file():
            yield None
            return
        check_database(self.path, WHAT)
        if write:
            make_runs_dir(self.runs_dir)
        try:
            with contextlib.closing(sqlite3.connect(self.path, timeout=30, isolation_level=None)) as db:
                db.execute("PRAGMA busy_timeout = 30000")
                db.execute(SCHEMA)
                yield db
        except sqlite3.Error as exc:
            named = sqlite_failure(exc, self.path, WHAT)
            if named is None:
                raise
            raise named from None

    def revisions(self, directory: str) -> list[Revision]:
        with self._db(write=False) as db:
            if db is None:
                return []
            query = f"SELECT {COLUMNS} FROM revisions WHERE directory = ? ORDER BY file, number"
            return [row_revision(row) for row in db.execute(query, (directory,))]

    def add(self, directory: str, revision: Revision, content: bytes, floor: int) -> Revision:
        with self._db(write=True) as db:
            assert db is not None
            db.execute("BEGIN IMMEDIATE")
            try:
                mine = db.execute(
                    f"SELECT {COLUMNS} FROM revisions WHERE directory = ? AND file = ? AND run_id = ?",
                    (directory, revision.file, revision.run_id),
                ).fetchone()
                if mine is not None:
                    db.execute("COMMIT")
                    return row_revision(mine)
                top = db.execute(
                    "SELECT MAX(number) FROM revisions WHERE directory = ? AND file = ?",
                    (directory, revision.file),
                ).fetchone()
                numbered = replace(revision, number=max(floor, int(top[0] or 0)) + 1)
                db.execute(INSERT.format(", ".join("?" * 15)), row_values(directory, numbered, content))
                db.execute("COMMIT")
                return numbered
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def content(self, directory: str, file: str, number: int) -> bytes | None:
        with self._db(write=False) as db:
            if db is None:
                return None
            row = db.execute(
                "SELECT content FROM revisions WHERE directory = ? AND file = ? AND number = ?",
                (directory, file, number),
            ).fetchone()
            return bytes(row[0]) if row else None


def directory_of(design: DesignDir) -> str:
    """The design directory as revisions are keyed: relative to the repository root."""
    from pipeline.runs.records import portable

    return portable(design.root, design.repo_root)


def history(design: DesignDir, stores: Sequence[RevisionStore]) -> list[Revision]:
    """Every revision of the directory's documents: the stores' (with their bytes) and the
    review log's, by document and number."""
    directory = directory_of(design)
    return merge(*(s.revisions(directory) for s in stores), log_revisions(parse_entries(design.mutations)))


def latest(revisions: Sequence[Revision], file: str) -> Revision | None:
    return max((r for r in revisions if r.file == file), key=lambda r: r.number, default=None)


def digest(path: Path) -> str | None:
    """A document's SHA-256; None when it does not exist. Anything but a regular file (a FIFO
    or a device in its place is never waited on) is ``not-a-file``, a file that cannot be read
    ``unreadable:<errno>``: no revision is either."""
    try:
        fd = confinement.open_fd(path)
    except FileNotFoundError:
        return None
    except (IsADirectoryError, confinement.NotRegularFile):
        return "not-a-file"
    except confinement.OutsideRepository:  # a link out of the repository is no revision
        return "outside-the-repository"
    except OSError as exc:  # a permission taken away: no revision matches it either
        return f"unreadable:{exc.errno}"
    try:
        h = hashlib.sha256()
        while chunk := os.read(fd, 2**20):
            h.update(chunk)
        return h.hexdigest()
    finally:
        os.close(fd)


def input_digests(design: DesignDir, kind: str, prints: Fingerprints) -> dict[str, str]:
    """What a run of ``kind`` read, part by part (formats.revisions.INPUT_NAMES): the files the
    batch fingerprint reads, grouped, and the code under the code root as the code index walks it
    (each a SHA-256 cut to INPUT_DIGEST hex digits). ``prints`` digests each code root once."""
    from pipeline.runs.fingerprint import input_files

    groups: dict[str, list[Path]] = {}
    # Phase 4 reads the frozen design; phase 1 and the edits read the research log and the plan
    # (an edit's own document is what it changes, not what it read).
    for path in input_files(design, PHASE4 if kind == PHASE4 else PHASE1):
        if path == design.research_log:
            name = "research-log"
        elif path.name == "designloop.toml":
            name = "settings"
        elif path in (design.design, design.mechanics):
            name = "frozen-design"
        else:
            name = "plan"
        groups.setdefault(name, []).append(path)
    out: dict[str, str] = {}
    for name, paths in groups.items():
        h = hashlib.sha256()
        for path in paths:
            h.update(f"{path.relative_to(design.root).as_posix()}\0{digest(path) or '-'}\n".encode())
        out[name] = h.hexdigest()[:INPUT_DIGEST]
    out["code"] = prints.code(design.code_root, design.repo_root, wide=False)[:INPUT_DIGEST]
    return out


def actor(repo_root: Path) -> str:
    """Who this is: git's ``user.email`` for the repository, else the operating system's user."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        done = subprocess.run(
            ["git", "-C", str(repo_root), "config", "--get", "user.email"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        email = done.stdout.strip()
        if done.returncode == 0 and email and not any(c.isspace() for c in email):
            return email
    with contextlib.suppress(Exception):
        return getpass.getuser()
    return "unknown"
