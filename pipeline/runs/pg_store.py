"""The PostgreSQL run store (``--store postgresql://...`` or DESIGNLOOP_STORE).

Everything lives in the schema ``designloop`` of the database named: LangGraph's PostgreSQL
saver's tables (checkpoints, blobs, writes, migrations), the queue's tables
(``pipeline.fleet.worker``), and designloop's own:

* ``runs``: one row per run: its record (run.json) and the design directory it works on;
* ``run_files``: the run directory's other files (before-snapshots, summary.md);
* ``events``: every event of every run, in order;
* ``cache``: the model-call cache, keyed like the local one;
* ``holders``: who holds a design directory's lock (the lock itself is an advisory lock);
* ``batches``: the record of each batch, for ``report --batch``;
* ``revisions``: each revision of a design document with its bytes (``pipeline.runs.pg_revisions``).

A process that works on a run keeps a local copy of its run directory under its runs
directory (the nodes read and write files there); the store is the copy every machine sees:
each event is written to it as it happens, the files when the run starts and when it finishes.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.types.json import Jsonb
from pydantic import ValidationError

from pipeline.errors import InputError
from pipeline.formats.textio import atomic_write_bytes
from pipeline.runs.address import parse_store
from pipeline.runs.batch_record import BatchRecord, parse_batch
from pipeline.runs.event_fields import BaseEvent
from pipeline.runs.event_log import EVENTS, Listener, read_events
from pipeline.runs.events import Finished, Paused, Stopped, parse_event
from pipeline.runs.pg_lock import PgLock, asetup_lock, connect, schema_options, setup_lock, setup_unlock
from pipeline.runs.pg_revisions import TABLE as REVISIONS_TABLE
from pipeline.runs.pg_revisions import PgRevisions
from pipeline.runs.records import RECORD, RunRecord
from pipeline.runs.replay import apply
from pipeline.runs.run_view import RunView
from pipeline.runs.views import VIEW, settle

if TYPE_CHECKING:  # what runs a graph imports; the commands that read run records never load it
    from pipeline.agents.cache import RequestCache
    from pipeline.runs.checkpoints import Saver

SCHEMA = "designloop"
FILES_AT = (Finished, Paused, Stopped)
"""Events after which the run directory's files are copied to the store (summary.md is new)."""
TABLES = (
    f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}",
    """CREATE TABLE IF NOT EXISTS runs (
         run_id text PRIMARY KEY, kind text NOT NULL, directory text NOT NULL,
         created text NOT NULL, record jsonb NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS run_files (
         run_id text NOT NULL REFERENCES runs ON DELETE CASCADE, name text NOT NULL,
         content bytea NOT NULL, PRIMARY KEY (run_id, name))""",
    """CREATE TABLE IF NOT EXISTS events (
         id bigserial PRIMARY KEY, run_id text NOT NULL, event jsonb NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS events_run ON events (run_id, id)",
    "CREATE TABLE IF NOT EXISTS cache (key text PRIMARY KEY, value bytea NOT NULL)",
    "CREATE TABLE IF NOT EXISTS holders (key text PRIMARY KEY, holder jsonb NOT NULL)",
    """CREATE TABLE IF NOT EXISTS batches (
         batch_id text PRIMARY KEY, created timestamptz NOT NULL DEFAULT now(), data jsonb NOT NULL)""",
    REVISIONS_TABLE,
)


class PgCache:
    """The model-call cache in the store's ``cache`` table (content-keyed, like the local one)."""

    def __init__(self, store: PgStore) -> None:
        self.store = store

    def get(self, key: str) -> Any:
        with self.store.db() as db:
            row = db.execute("SELECT value FROM cache WHERE key = %s", (key,)).fetchone()
        return bytes(row[0]) if row else None

    def set(self, key: str, value: bytes) -> Any:
        with self.store.db() as db:
            db.execute("INSERT INTO cache (key, value) VALUES (%s, %s) ON CONFLICT DO NOTHING", (key, value))
        return True

    def close(self) -> None:
        return None


class PgStore:
    """Runs, events, files, the cache and checkpoints in PostgreSQL; locks as advisory locks."""

    def __init__(self, dsn: str, runs_dir: Path) -> None:
        address = parse_store(dsn)  # a malformed address is bad input before anything connects
        self.dsn = dsn
        self.url: str | None = address.shown
        self.secrets = address.secrets
        self.runs_dir = runs_dir
        self._conn: psycopg.Connection[Any] | None = None
        self._lock = threading.RLock()

    # -- connections -------------------------------------------------------------------

    @contextmanager
    def db(self) -> Iterator[psycopg.Connection[Any]]:
        """The store's connection (autocommit, the schema on its search path), one user at a time."""
        with self._lock:
            if self._conn is None or self._conn.closed:
                conn = connect(self.dsn, self.url or "", hidden=self.secrets)
                setup_lock(conn)
                try:
                    for sql in TABLES:
                        conn.execute(sql)
                finally:
                    setup_unlock(conn)
                self._conn = conn
            yield self._conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # -- checkpoints -------------------------------------------------------------------

    def checkpointer(self) -> AbstractAsyncContextManager[Saver]:
        return self._checkpointer()

    @asynccontextmanager
    async def _checkpointer(self) -> AsyncIterator[Saver]:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
        from psycopg.rows import dict_row
        from psycopg_pool import AsyncConnectionPool

        with self.db():
            pass  # the schema exists before the saver's migrations run in it
        kwargs = {
            "autocommit": True,
            "prepare_threshold": 0,
            "row_factory": dict_row,
            "options": schema_options(),
        }
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            self.dsn, open=False, min_size=1, max_size=8, kwargs=kwargs
        )
        await pool.open()
        try:
            saver = AsyncPostgresSaver(pool, serde=JsonPlusSerializer(allowed_msgpack_modules=None))
            async with await psycopg.AsyncConnection.connect(self.dsn, autocommit=True) as guard:
                # Two workers starting at once must not run the saver's migrations side by side;
                # closing the guard's session lets the lock go.
                await asetup_lock(guard)
                await saver.setup()
            yield saver
        finally:
            await pool.close()

    async def prune(self, saver: Saver, run_id: str) -> None:
        from psycopg.errors import DeadlockDetected, SerializationFailure

        for attempt in range(3):  # a prune of the same thread at the same moment: try again
            try:
                await saver.aprune([run_id], strategy="keep_latest")
                return
            except (SerializationFailure, DeadlockDetected):
                if attempt == 2:
                    raise

    def has_checkpoints(self) -> bool:
        with self.db() as db:
            row = db.execute("SELECT to_regclass('checkpoints') IS NOT NULL").fetchone()
            if not row or not row[0]:
                return False
            return db.execute("SELECT EXISTS (SELECT 1 FROM checkpoints)").fetchone() == (True,)

    # -- locks and the cache -----------------------------------------------------------

    def lock(self, directory: Path, rel: str) -> PgLock:
        return PgLock(self, rel, directory)

    def cache(self) -> RequestCache | None:
        return PgCache(self)

    # -- run records -------------------------------------------------------------------

    def register(self, run_dir: Path) -> None:
        record = json.loads((run_dir / RECORD).read_text(encoding="utf-8"))
        events = read_events(run_dir)
        with self.db() as db, db.transaction():
            db.execute(
                "INSERT INTO runs (run_id, kind, directory, created, record) VALUES (%s, %s, %s, %s, %s) "
                "ON CONFLICT (run_id) DO UPDATE SET record = EXCLUDED.record",
                (record["run_id"], record["kind"], record["directory"], record["created"], Jsonb(record)),
            )
            for event in events:
                db.execute(
                    "INSERT INTO events (run_id, event) VALUES (%s, %s)",
                    (record["run_id"], Jsonb(event.model_dump(mode="json"))),
                )
            self._put_files(db, run_dir)

    def _put_files(self, db: psycopg.Connection[Any], run_dir: Path) -> None:
        for path in sorted(p for p in run_dir.rglob("*") if p.is_file()):
            name = path.relative_to(run_dir).as_posix()
            if name in (EVENTS, RECORD) or name.startswith(("report.", VIEW)):
                continue
            db.execute(
                "INSERT INTO run_files (run_id, name, content) VALUES (%s, %s, %s) "
                "ON CONFLICT (run_id, name) DO UPDATE SET content = EXCLUDED.content",
                (run_dir.name, name, path.read_bytes()),
            )

    def publish(self, run_dir: Path) -> Listener | None:
        run_id = run_dir.name

        def listener(event: BaseEvent) -> None:
            with self.db() as db, db.transaction():
                if isinstance(event, FILES_AT):
                    self._put_files(db, run_dir)
                db.execute(
                    "INSERT INTO events (run_id, event) VALUES (%s, %s)",
                    (run_id, Jsonb(event.model_dump(mode="json"))),
                )

        return listener

    def _events(self, db: psycopg.Connection[Any], run_id: str) -> list[dict[str, Any]]:
        rows = db.execute("SELECT event FROM events WHERE run_id = %s ORDER BY id", (run_id,)).fetchall()
        return [row[0] for row in rows]

    def run_dir(self, run_id: str) -> Path:
        """The run's directory here, written afresh from the store (the store is the truth)."""
        with self.db() as db:
            row = db.execute("SELECT record FROM runs WHERE run_id = %s", (run_id,)).fetchone()
            if row is None:
                raise InputError(
                    f"no run named {run_id!r} in {self.url}", hint="designloop runs lists the runs"
                )
            files = db.execute("SELECT name, content FROM run_files WHERE run_id = %s", (run_id,)).fetchall()
            events = self._events(db, run_id)
        target = self.runs_dir / run_id
        atomic_write_bytes(target / RECORD, (json.dumps(row[0], indent=2) + "\n").encode())
        for name, content in files:
            atomic_write_bytes(target / name, bytes(content))
        lines = "".join(json.dumps(e, ensure_ascii=False, default=str) + "\n" for e in events)
        atomic_write_bytes(target / EVENTS, lines.encode())
        return target

    def _view(self, db: psycopg.Connection[Any], run_id: str, directory: str) -> RunView:
        view = RunView(run_id)
        for number, data in enumerate(self._events(db, run_id), start=1):
            try:
                event = parse_event(data)
            except ValidationError as exc:
                raise InputError(
                    f"event {number} of run {run_id} in {self.url} is damaged: {exc.errors()[0]['msg']}",
                    hint="the run cannot be shown; delete that row of the events table, or the run",
                ) from None
            apply(view, event)
        return settle(
            view, self.lock(Path(directory), directory).holder() if view.state == "running" else None
        )

    def views(self, warn: Callable[[InputError], None] | None = None) -> list[RunView]:
        with self.db() as db:
            rows = db.execute("SELECT run_id, directory FROM runs ORDER BY created, run_id").fetchall()
            return [self._view(db, run_id, directory) for run_id, directory in rows]

    def view(self, run_id: str) -> RunView:
        with self.db() as db:
            row = db.execute("SELECT directory FROM runs WHERE run_id = %s", (run_id,)).fetchone()
            if row is None:
                raise InputError(
                    f"no run named {run_id!r} in {self.url}", hint="designloop runs lists the runs"
                )
            return self._view(db, run_id, row[0])

    def records(self, directory: str | None = None) -> list[RunRecord]:
        with self.db() as db:
            if directory is None:
                rows = db.execute("SELECT record FROM runs ORDER BY created, run_id").fetchall()
            else:
                rows = db.execute(
                    "SELECT record FROM runs WHERE directory = %s ORDER BY created, run_id", (directory,)
                ).fetchall()
        return [RunRecord.model_validate(raw) for (raw,) in rows]

    def record(self, run_id: str) -> RunRecord:
        with self.db() as db:
            row = db.execute("SELECT record FROM runs WHERE run_id = %s", (run_id,)).fetchone()
        if row is None:
            raise InputError(f"no run named {run_id!r} in {self.url}", hint="designloop runs lists the runs")
        try:
            return RunRecord.model_validate(row[0])
        except ValidationError as exc:
            raise InputError(
                f"the record of run {run_id} in {self.url} is damaged: {exc.errors()[0]['msg']}",
                hint="the run cannot be resumed; start a new run on the same directory",
            ) from None

    # -- batches -----------------------------------------------------------------------

    def save_batch(self, batch_id: str, data: dict[str, Any]) -> None:
        with self.db() as db:
            db.execute(
                "INSERT INTO batches (batch_id, data) VALUES (%s, %s) "
                "ON CONFLICT (batch_id) DO UPDATE SET data = EXCLUDED.data",
                (batch_id, Jsonb(data)),
            )

    def load_batch(self, batch_id: str | None) -> BatchRecord:
        with self.db() as db:
            if batch_id is None:
                row = db.execute(
                    "SELECT data FROM batches ORDER BY created DESC, batch_id DESC LIMIT 1"
                ).fetchone()
            else:
                row = db.execute("SELECT data FROM batches WHERE batch_id = %s", (batch_id,)).fetchone()
        if row is None:
            raise InputError(
                f"no batch {batch_id or 'yet'} in {self.url}",
                hint="run one with designloop batch or designloop enqueue",
            )
        return parse_batch(row[0], str(self.url))

    # -- revisions ---------------------------------------------------------------------

    def revisions(self) -> PgRevisions:
        return PgRevisions(self)
