"""The PostgreSQL store's revisions: the ``revisions`` table of the schema ``designloop``
(docs/scale.md). A number is allocated under a transaction-scoped advisory lock on the
directory and document, so two processes recording at once never take the same one."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol

import psycopg

from pipeline.formats.revisions import Revision
from pipeline.runs.revisions import COLUMNS, INSERT, row_revision, row_values

TABLE = """CREATE TABLE IF NOT EXISTS revisions (
    directory text NOT NULL, file text NOT NULL, number integer NOT NULL, family text NOT NULL,
    sha256 text NOT NULL, run_id text NOT NULL, kind text NOT NULL, outcome text NOT NULL,
    requested_by text NOT NULL, actor text NOT NULL, recorded_at text NOT NULL, workflow text,
    inputs text NOT NULL, finalised text, content bytea NOT NULL,
    PRIMARY KEY (directory, file, number), UNIQUE (directory, file, run_id))"""


class Database(Protocol):
    def db(self) -> Any:
        """The store's shared connection (a context manager)."""


class PgRevisions:
    def __init__(self, store: Database) -> None:
        self.store = store

    def revisions(self, directory: str) -> list[Revision]:
        with self.store.db() as db:
            rows = db.execute(
                f"SELECT {COLUMNS} FROM revisions WHERE directory = %s ORDER BY file, number", (directory,)
            ).fetchall()
        return [row_revision(row) for row in rows]

    def add(self, directory: str, revision: Revision, content: bytes, floor: int) -> Revision:
        conn: psycopg.Connection[Any]
        with self.store.db() as conn, conn.transaction():
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                (f"designloop:revision:{directory}:{revision.file}",),
            )
            mine = conn.execute(
                f"SELECT {COLUMNS} FROM revisions WHERE directory = %s AND file = %s AND run_id = %s",
                (directory, revision.file, revision.run_id),
            ).fetchone()
            if mine is not None:
                return row_revision(mine)
            top = conn.execute(
                "SELECT MAX(number) FROM revisions WHERE directory = %s AND file = %s",
                (directory, revision.file),
            ).fetchone()
            numbered = replace(revision, number=max(floor, int(top[0] or 0) if top else 0) + 1)
            conn.execute(INSERT.format(", ".join(["%s"] * 15)), row_values(directory, numbered, content))
            return numbered

    def content(self, directory: str, file: str, number: int) -> bytes | None:
        with self.store.db() as db:
            row = db.execute(
                "SELECT content FROM revisions WHERE directory = %s AND file = %s AND number = %s",
                (directory, file, number),
            ).fetchone()
        return bytes(row[0]) if row else None
