"""The local store's checkpointer: LangGraph's SQLite saver on one file under the runs directory,
and its retention. Only the commands that run a graph import this module (it loads LangGraph);
the commands that read run records never do (runs.store opens it on first use)."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from pipeline.formats.database import sqlite_failure
from pipeline.settings import CHECKPOINTS, make_runs_dir

CHECKPOINT_STORE = "checkpoint store"
Saver = BaseCheckpointSaver[Any]
"""A checkpointer of either store (the local SQLite one here, PostgreSQL's in runs.pg_store)."""


@asynccontextmanager
async def sqlite_checkpointer(runs_dir: Path) -> AsyncIterator[AsyncSqliteSaver]:
    """One SQLite checkpointer: one file under the runs directory, WAL, a busy timeout.

    The state is plain JSON (graph.build.node), so the serializer imports no classes on load.
    """
    make_runs_dir(runs_dir)
    path = runs_dir / CHECKPOINTS
    try:
        async with aiosqlite.connect(path, timeout=30) as conn:
            await conn.execute("PRAGMA busy_timeout = 30000")
            saver = AsyncSqliteSaver(conn, serde=JsonPlusSerializer(allowed_msgpack_modules=None))
            await saver.setup()
            yield saver
    except sqlite3.Error as exc:
        named = sqlite_failure(exc, path, CHECKPOINT_STORE)
        if named is None:
            raise
        raise named from None


KEEP_LATEST_SQL = (
    # The newest checkpoint of each namespace stays; ids are time-ordered (uuid6), as the saver's
    # own "latest" query assumes (ORDER BY checkpoint_id DESC).
    """DELETE FROM writes WHERE thread_id = :t AND checkpoint_id NOT IN (
         SELECT MAX(checkpoint_id) FROM checkpoints WHERE thread_id = :t GROUP BY checkpoint_ns)""",
    """DELETE FROM checkpoints WHERE thread_id = :t AND checkpoint_id NOT IN (
         SELECT MAX(checkpoint_id) FROM checkpoints WHERE thread_id = :t GROUP BY checkpoint_ns)""",
    "UPDATE checkpoints SET parent_checkpoint_id = NULL WHERE thread_id = :t",
)


async def prune_sqlite(saver: Saver, run_id: str) -> None:
    """``keep_latest`` for the SQLite saver, which has no prune of its own: delete every
    checkpoint of the thread but the newest per namespace, and the writes of the deleted ones,
    in one transaction under the saver's lock. The SQLite saver stores whole channel values in
    each checkpoint (no blob table), so the newest checkpoint alone restores the state."""
    assert isinstance(saver, AsyncSqliteSaver)
    async with saver.lock:
        conn = saver.conn
        try:
            for sql in KEEP_LATEST_SQL:
                await conn.execute(sql, {"t": run_id})
            await conn.commit()
        except BaseException:
            await conn.rollback()
            raise
