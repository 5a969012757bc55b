"""A design directory's lock on the PostgreSQL store: a session advisory lock.

The key is the directory's path relative to the repository root, so two checkouts of the same
repository on two machines contend for the same lock. The lock is held on a connection of its
own for the whole run; PostgreSQL drops it when that session ends, so a worker killed with
SIGKILL leaves no stale lock: its socket closes and the next run takes the lock at once. For a
host that vanishes, server-side TCP keepalives end the session in about 25 s. Who holds the
lock is written to the ``holders`` table so that a refused run can name it; the row of a dead
holder is simply overwritten by the next one (``holder()`` asks the lock, not the row).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol

import psycopg
from psycopg.types.json import Jsonb

from pipeline.errors import InputError
from pipeline.runs.lock import Holder, holder_from, refusal


class Database(Protocol):
    """The store a lock records its holder in (``pg_store.PgStore``)."""

    dsn: str
    url: str | None

    def db(self) -> AbstractContextManager[psycopg.Connection[Any]]:
        """The store's shared connection."""


SCHEMA = "designloop"
KEEPALIVE = "-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3"
LOCK_SQL = "hashtextextended(%s, 0)"


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


def connect(dsn: str, shown: str, keepalive: bool = False) -> psycopg.Connection[Any]:
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
    except psycopg.OperationalError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(
            f"cannot reach the run store {shown}: {first}",
            hint="check the --store address (or DESIGNLOOP_STORE) and that the PostgreSQL server is up",
        ) from None


class PgLock:
    """A session advisory lock keyed on ``designloop:dir:<directory relative to the repository>``."""

    def __init__(self, store: Database, rel: str, directory: Path) -> None:
        self.store = store
        self.key = f"designloop:dir:{rel}"
        self.directory = directory
        self._conn: psycopg.Connection[Any] | None = None

    def acquire(
        self, holder: Holder, wait: bool = False, on_wait: Callable[[Holder | None], None] | None = None
    ) -> None:
        if self._conn is not None:
            raise RuntimeError("the run lock is already held by this process")
        conn = connect(self.store.dsn, self.store.url or "", keepalive=True)
        try:
            got = conn.execute(f"SELECT pg_try_advisory_lock({LOCK_SQL})", (self.key,)).fetchone()
            if not got or not got[0]:
                current = self._recorded()
                if not wait:
                    raise refusal(self.directory, current)
                if on_wait is not None:
                    on_wait(current)
                conn.execute(f"SELECT pg_advisory_lock({LOCK_SQL})", (self.key,))
            with self.store.db() as db:
                db.execute(
                    "INSERT INTO holders (key, holder) VALUES (%s, %s) "
                    "ON CONFLICT (key) DO UPDATE SET holder = EXCLUDED.holder",
                    (self.key, Jsonb(asdict(holder))),
                )
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    def release(self) -> None:
        if self._conn is None:
            return
        conn, self._conn = self._conn, None
        try:
            with self.store.db() as db:
                db.execute("DELETE FROM holders WHERE key = %s", (self.key,))
        finally:
            conn.close()  # ending the session releases the advisory lock

    def holder(self) -> Holder | None:
        with self.store.db() as db:
            got = db.execute(f"SELECT pg_try_advisory_lock({LOCK_SQL})", (self.key,)).fetchone()
            if got and got[0]:
                db.execute(f"SELECT pg_advisory_unlock({LOCK_SQL})", (self.key,))
                return None
        return self._recorded()

    def _recorded(self) -> Holder | None:
        with self.store.db() as db:
            row = db.execute("SELECT holder FROM holders WHERE key = %s", (self.key,)).fetchone()
        if row is None:
            return None
        return holder_from(row[0] if isinstance(row[0], dict) else json.loads(row[0]))
