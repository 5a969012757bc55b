"""A design directory's lock on the PostgreSQL store: a session advisory lock, and the file lock
of the checkout the run works in.

The key is the directory's path relative to the repository root, so two checkouts of the same
repository on two machines contend for the same lock. The lock is held on a connection of its
own for the whole run; PostgreSQL drops it when that session ends, so a worker killed with
SIGKILL leaves no stale lock: its socket closes and the next run takes the lock at once. For a
host that vanishes, server-side TCP keepalives end the session in about 25 s.

A session can also end under a live run (a server restart or failover, a network cut, an
``idle_session_timeout``, ``pg_terminate_backend``). ``check`` asks that very session whether
it still holds the lock; the runner calls it every few seconds (which also keeps the session
from ever being idle) and right before the finish's writes that cannot be taken back, and
stops the run when it fails (graph.watch).

The directory's file lock (runs.lock.FileRunLock) is taken first, so an edit or a local-store
run in the same checkout is excluded too. Who holds the lock is written to the ``holders``
table, with a token only this holder knows, so that a refused run can name it and a release
deletes only its own row; ``holder()`` asks ``pg_locks`` who holds the lock and takes nothing.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol

import psycopg
from psycopg.types.json import Jsonb

from pipeline.errors import InputError, first_line
from pipeline.runs.address import scrub
from pipeline.runs.lock import FileRunLock, Holder, holder_from, lost, refusal


class Database(Protocol):
    """The store a lock records its holder in (``pg_store.PgStore``)."""

    dsn: str
    url: str | None
    secrets: tuple[str, ...]

    def db(self) -> AbstractContextManager[psycopg.Connection[Any]]:
        """The store's shared connection."""


SCHEMA = "designloop"
KEEPALIVE = "-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3"
LOCK_SQL = "hashtextextended(%s, 0)"
HELD_SQL = """
    SELECT l.pid FROM pg_locks l, (SELECT hashtextextended(%s, 0) AS k) h
    WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND l.classid = ((h.k >> 32) & 4294967295)::oid AND l.objid = (h.k & 4294967295)::oid"""
"""The session holding a key's advisory lock, read from pg_locks (a bigint key shows as its
high and low 32 bits in classid and objid, objsubid 1) without taking it."""


SETUP_LOCK = "designloop:setup"
SETUP_RETRY = 0.1
"""Schema setup is serialised by an advisory lock taken with try-lock and a short sleep, never a
blocking wait: a session waiting on a lock holds a snapshot, and the saver's ``CREATE INDEX
CONCURRENTLY`` in the holder waits for every older snapshot, a deadlock PostgreSQL would break
by aborting one of them."""


def setup_lock(conn: psycopg.Connection[Any]) -> None:
    """Take the schema-setup lock on ``conn`` (release it with ``setup_unlock``)."""
    while True:
        got = conn.execute(f"SELECT pg_try_advisory_lock({LOCK_SQL})", (SETUP_LOCK,)).fetchone()
        if got and got[0]:
            return
        time.sleep(SETUP_RETRY)


def setup_unlock(conn: psycopg.Connection[Any]) -> None:
    conn.execute(f"SELECT pg_advisory_unlock({LOCK_SQL})", (SETUP_LOCK,))


async def asetup_lock(conn: psycopg.AsyncConnection[Any]) -> None:
    """``setup_lock`` on an async connection."""
    while True:
        cursor = await conn.execute(f"SELECT pg_try_advisory_lock({LOCK_SQL})", (SETUP_LOCK,))
        got = await cursor.fetchone()
        if got and got[0]:
            return
        await asyncio.sleep(SETUP_RETRY)


def schema_options() -> str:
    return f"-c search_path={SCHEMA}"


def connect(
    dsn: str, shown: str, keepalive: bool = False, hidden: tuple[str, ...] = ()
) -> psycopg.Connection[Any]:
    """An autocommit connection with the store's schema on its search path; a store that cannot
    be reached is bad input, named with its (redacted) address."""
    options = schema_options() + (" " + KEEPALIVE if keepalive else "")
    extra: dict[str, Any] = (
        {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3}
        if keepalive
        else {}
    )
    try:
        return psycopg.connect(dsn, autocommit=True, options=options, connect_timeout=10, **extra)
    except (psycopg.OperationalError, psycopg.ProgrammingError) as exc:
        first = first_line(exc)
        raise InputError(
            f"cannot reach the run store {shown}: {scrub(first, hidden)}",
            hint="check the --store address (or DESIGNLOOP_STORE) and that the PostgreSQL server is up",
        ) from None


class PgLock:
    """A session advisory lock keyed on ``designloop:dir:<directory relative to the repository>``,
    with the file lock of the directory in this checkout."""

    def __init__(self, store: Database, rel: str, directory: Path) -> None:
        self.store = store
        self.key = f"designloop:dir:{rel}"
        self.directory = directory
        self.local = FileRunLock(directory)
        self._conn: psycopg.Connection[Any] | None = None
        self._token = ""
        self._holder: Holder | None = None

    def acquire(
        self, holder: Holder, wait: bool = False, on_wait: Callable[[Holder | None], None] | None = None
    ) -> None:
        if self._conn is not None:
            raise RuntimeError("the run lock is already held by this process")
        self.local.acquire(holder, wait, on_wait)  # this checkout's edits and local-store runs
        try:
            self._advisory(holder, wait, on_wait)
        except BaseException:
            self.local.release()
            raise

    def _advisory(self, holder: Holder, wait: bool, on_wait: Callable[[Holder | None], None] | None) -> None:
        conn = connect(self.store.dsn, self.store.url or "", keepalive=True, hidden=self.store.secrets)
        try:
            got = conn.execute(f"SELECT pg_try_advisory_lock({LOCK_SQL})", (self.key,)).fetchone()
            if not got or not got[0]:
                current = self._recorded()
                if not wait:
                    raise refusal(self.directory, current)
                if on_wait is not None:
                    on_wait(current)
                conn.execute(f"SELECT pg_advisory_lock({LOCK_SQL})", (self.key,))
            self._token = secrets.token_hex(16)
            self._write(holder)
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    def _write(self, holder: Holder) -> None:
        row = asdict(holder) | {"token": self._token}
        with self.store.db() as db:
            db.execute(
                "INSERT INTO holders (key, holder) VALUES (%s, %s) "
                "ON CONFLICT (key) DO UPDATE SET holder = EXCLUDED.holder",
                (self.key, Jsonb(row)),
            )
        self._holder = holder

    def relabel(self, holder: Holder) -> None:
        if self._conn is None:
            raise RuntimeError("the run lock is not held by this process")
        self.check()
        self._write(holder)
        self.local.relabel(holder)

    def check(self) -> None:
        conn = self._conn
        if conn is None:
            raise lost(self.directory, self._holder, "it was released")
        try:
            held = conn.execute(HELD_SQL, (self.key,)).fetchall()
            mine = any(pid == conn.info.backend_pid for (pid,) in held)
        except psycopg.Error as exc:
            first = first_line(exc)
            raise lost(self.directory, self._holder, f"the store's session ended: {first}") from None
        if not mine:
            raise lost(self.directory, self._holder, "the store's session no longer holds it")
        self.local.check()

    def release(self) -> None:
        if self._conn is None:
            return
        conn, self._conn = self._conn, None
        try:
            with self.store.db() as db:
                db.execute(
                    "DELETE FROM holders WHERE key = %s AND holder->>'token' = %s", (self.key, self._token)
                )
        except (psycopg.Error, InputError):
            pass  # a store that is gone keeps a stale row; holder() asks the lock, not the row
        finally:
            conn.close()  # ending the session releases the advisory lock
            self.local.release()

    def holder(self) -> Holder | None:
        with self.store.db() as db:
            held = db.execute(HELD_SQL, (self.key,)).fetchone()
        if held is None:
            return None
        return self._recorded()

    def _recorded(self) -> Holder | None:
        with self.store.db() as db:
            row = db.execute("SELECT holder FROM holders WHERE key = %s", (self.key,)).fetchone()
        if row is None:
            return None
        return holder_from(row[0] if isinstance(row[0], dict) else json.loads(row[0]))
