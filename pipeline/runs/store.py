"""Where runs live: the run store. The local one (the default) keeps run records and events as
files under the runs directory, checkpoints in one SQLite file and the model-call cache in a
diskcache beside them; ``pipeline.runs.pg_store`` keeps them in PostgreSQL so that every
worker on every machine sees every run (docs/scale.md).

Either way a run being worked on has a local run directory (run.json, events.jsonl, the
before-snapshots and summary.md) that the nodes read and write; a shared store mirrors it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pipeline.bounded import load_json
from pipeline.errors import InputError
from pipeline.formats.textio import atomic_write
from pipeline.runs.address import require_postgres, store_url
from pipeline.runs.batch_record import BatchRecord, parse_batch
from pipeline.runs.event_fields import BaseEvent
from pipeline.runs.event_log import EVENTS, EventLog, Listener
from pipeline.runs.lock import RunLock, run_lock
from pipeline.runs.records import RECORD, RunRecord
from pipeline.runs.revisions import RevisionStore, SqliteRevisions
from pipeline.runs.run_view import RunView
from pipeline.runs.views import ViewKeeper, list_runs, read_view
from pipeline.settings import CHECKPOINTS, make_runs_dir

if TYPE_CHECKING:  # what runs a graph imports; the commands that read run records never load it
    from pipeline.agents.cache import RequestCache
    from pipeline.runs.checkpoints import Saver

BATCHES = "batches"


class RunStore(Protocol):
    """What a run store gives the commands: checkpoints, locks, the cache and the run records."""

    runs_dir: Path
    """The local runs directory: the run directories being worked on here."""
    url: str | None
    """The shared store's address (without credentials), None for the local store."""

    def checkpointer(self) -> AbstractAsyncContextManager[Saver]:
        """A checkpointer for this process's runs (one is shared by concurrent runs)."""

    async def prune(self, saver: Saver, run_id: str) -> None:
        """Keep only the latest checkpoint of a finished run's thread (retention)."""

    def has_checkpoints(self) -> bool:
        """Whether the checkpoint store exists and holds data (a deleted one is named, not restarted)."""

    def lock(self, directory: Path, rel: str) -> RunLock:
        """The lock of a design directory (``rel``: its path relative to the repository root)."""

    def cache(self) -> RequestCache | None:
        """The model-call cache shared by every run, or None for each session's own local one."""

    def publish(self, run_dir: Path) -> Listener | None:
        """A listener that copies a run's events (and its files at the finish) into the store."""

    def register(self, run_dir: Path) -> None:
        """Copy a newly started run's directory into the store."""

    def run_dir(self, run_id: str) -> Path:
        """The local run directory of a run, fetched from the store when it lives elsewhere."""

    def views(self, warn: Callable[[InputError], None] | None = None) -> list[RunView]:
        """Every run, replayed from its events, oldest first."""

    def view(self, run_id: str) -> RunView:
        """One run, replayed from its events."""

    def records(self, directory: str | None = None) -> list[RunRecord]:
        """Every readable run's record (a damaged one is left out); with ``directory``, only the
        runs of that design directory (its path as records store it). No event log is read."""

    def record(self, run_id: str) -> RunRecord:
        """A run's record, without writing its run directory here."""

    def save_batch(self, batch_id: str, data: dict[str, Any]) -> None:
        """Keep a batch's record (its directories and their runs) for ``report --batch``."""

    def load_batch(self, batch_id: str | None) -> BatchRecord:
        """A batch's record; the latest batch when no id is given."""

    def revisions(self) -> RevisionStore:
        """The revisions of design documents this store keeps, with their bytes."""

    def close(self) -> None:
        """Let go of connections and files."""


class LocalStore:
    """Run directories, an SQLite checkpoint file and a diskcache under one runs directory."""

    url: str | None = None

    def __init__(self, runs_dir: Path) -> None:
        self.runs_dir = runs_dir
        self._records: dict[Path, tuple[tuple[int, int, int], RunRecord | None]] = {}
        """Each run record read, by its file's inode, size and time: a batch asks for the
        records of every directory it plans, and a run.json that did not change is not read
        (and validated) again."""

    def checkpointer(self) -> AbstractAsyncContextManager[Saver]:
        from pipeline.runs.checkpoints import sqlite_checkpointer

        return sqlite_checkpointer(self.runs_dir)

    async def prune(self, saver: Saver, run_id: str) -> None:
        from pipeline.runs.checkpoints import prune_sqlite

        await prune_sqlite(saver, run_id)

    def has_checkpoints(self) -> bool:
        path = self.runs_dir / CHECKPOINTS
        return path.is_file() and path.stat().st_size > 0

    def lock(self, directory: Path, rel: str) -> RunLock:
        return run_lock(directory)

    def cache(self) -> RequestCache | None:
        return None

    def publish(self, run_dir: Path) -> Listener | None:
        return None

    def register(self, run_dir: Path) -> None:
        return None

    def run_dir(self, run_id: str) -> Path:
        check_existing_runs_dir(self.runs_dir)
        if not run_id or run_id.startswith(".") or "/" in run_id or "\\" in run_id:
            raise InputError(f"{run_id!r} is not a run id", hint="designloop runs lists the runs")
        path = self.runs_dir / run_id
        if not (path / RECORD).is_file():
            raise InputError(
                f"no run named {run_id!r}", file=self.runs_dir, hint="designloop runs lists the runs"
            )
        return path

    def views(self, warn: Callable[[InputError], None] | None = None) -> list[RunView]:
        check_existing_runs_dir(self.runs_dir)
        return list_runs(self.runs_dir, warn)

    def view(self, run_id: str) -> RunView:
        return read_view(self.run_dir(run_id))

    def records(self, directory: str | None = None) -> list[RunRecord]:
        out: list[RunRecord] = []
        if not self.runs_dir.is_dir():
            return out
        for child in sorted(self.runs_dir.iterdir()):
            if (child / EVENTS).is_file():
                record = self._record_of(child)
                if record is not None and (directory is None or record.directory == directory):
                    out.append(record)
        return out

    def _record_of(self, run_dir: Path) -> RunRecord | None:
        """The run's record (None: none, or a damaged one), read again only when its file changed."""
        from pipeline.runs.records import read_record

        try:
            info = (run_dir / RECORD).stat()
        except OSError:
            return None
        key = (info.st_ino, info.st_size, info.st_mtime_ns)
        known = self._records.get(run_dir)
        if known is not None and known[0] == key:
            return known[1]
        try:
            record: RunRecord | None = read_record(run_dir)
        except InputError:
            record = None
        self._records[run_dir] = (key, record)
        return record

    def record(self, run_id: str) -> RunRecord:
        from pipeline.runs.records import read_record

        return read_record(self.run_dir(run_id))

    def save_batch(self, batch_id: str, data: dict[str, Any]) -> None:
        make_runs_dir(self.runs_dir)
        atomic_write(self.runs_dir / BATCHES / f"{batch_id}.json", json.dumps(data, indent=2) + "\n")

    def load_batch(self, batch_id: str | None) -> BatchRecord:
        folder = self.runs_dir / BATCHES
        if batch_id is None:
            found = sorted(folder.glob("*.json")) if folder.is_dir() else []
            if not found:
                raise InputError(
                    "no batch yet",
                    file=folder,
                    hint="run one with designloop batch create|final DIR_OR_GLOB...",
                )
            path = found[-1]
        else:
            if not batch_id or "/" in batch_id or batch_id.startswith("."):
                raise InputError(f"{batch_id!r} is not a batch id", hint="see runs/batches/")
            path = folder / f"{batch_id}.json"
        return load_batch_file(path)

    def revisions(self) -> RevisionStore:
        return SqliteRevisions(self.runs_dir)

    def close(self) -> None:
        return None


def check_existing_runs_dir(runs_dir: Path) -> None:
    """A runs directory to read from: one that names a file is refused."""
    if runs_dir.exists() and not runs_dir.is_dir():
        raise InputError(
            "the runs directory names a file, not a directory",
            file=runs_dir,
            hint="pass --runs-dir DIR naming the directory that holds the runs",
        )


def load_batch_file(path: Path) -> BatchRecord:
    try:
        data = load_json(path.read_bytes(), file=path, what="batch record", hint="run the batch again")
    except FileNotFoundError:
        raise InputError(
            "no such batch", file=path, hint="the batch ids are the names under runs/batches/"
        ) from None
    except OSError as exc:
        raise InputError(
            f"the batch record cannot be read: {exc}", file=path, hint="run the batch again"
        ) from None
    return parse_batch(data, str(path))


def emit(store: RunStore, run_dir: Path, event: BaseEvent) -> None:
    """Append one event to a run's log, published to the store the run lives in."""
    log = EventLog(run_dir)
    log.subscribe(ViewKeeper(run_dir))
    published = store.publish(run_dir)
    if published is not None:
        log.subscribe(published)
    log.emit(event)


def open_store(url: str | None, runs_dir: Path) -> RunStore:
    """The local store, or the PostgreSQL one for a PostgreSQL address (a ``postgresql://`` URI
    or a ``key=value`` connection string, checked before anything connects: runs.address)."""
    url = store_url(url)
    if url is None:
        return LocalStore(runs_dir)
    require_postgres()
    from pipeline.runs.pg_store import PgStore

    store: RunStore = PgStore(url, runs_dir)
    return store
