"""A real PostgreSQL server for the tests that need one, started on a free port by .ci/pg.sh
(initdb and pg_ctl; as root the server runs as an unprivileged user), one per test session,
with a database of its own for each test."""

from __future__ import annotations

import glob
import os
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

PG_SH = Path(__file__).resolve().parent.parent / ".ci" / "pg.sh"


def server_binaries() -> bool:
    found = glob.glob("/usr/lib/postgresql/*/bin/initdb")
    config = shutil.which("pg_config")
    if config:
        bindir = subprocess.run([config, "--bindir"], capture_output=True, text=True).stdout.strip()
        found += [p for p in (os.path.join(bindir, "initdb"),) if os.path.exists(p)]
    return bool(found)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """The address of a PostgreSQL server's ``postgres`` database, up for the whole session."""
    if not server_binaries():
        reason = "no PostgreSQL server binaries (initdb, pg_ctl): bash .ci/pg.sh install brings them"
        if os.environ.get("CI"):
            pytest.fail(reason)  # CI installs them: there a missing server is a failure
        pytest.skip(reason)
    started = subprocess.run(["bash", str(PG_SH), "start"], capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stderr
    env = dict(
        part.split("=", 1) for line in started.stdout.splitlines() for part in line.split()[1:] if "=" in part
    )
    try:
        yield env["DESIGNLOOP_TEST_PG"]
    finally:
        subprocess.run(["bash", str(PG_SH), "stop", env["PGDIR"]], capture_output=True, timeout=60)


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    """A fresh database on the session's server."""
    import psycopg
    from psycopg import sql

    name = f"t_{secrets.token_hex(4)}"
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield pg_server.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(pg_server, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
