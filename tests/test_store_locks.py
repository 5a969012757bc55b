"""The PostgreSQL store's directory lock with the rest of the world: a run on the store also
holds its checkout's file lock (an edit or a local-store run there is refused), asking who
holds a lock takes nothing (a concurrent acquire is never refused because of it), and
``resume --wait`` reads the run only once it holds the lock."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from batchkit import batch_repo, run_batch
from conftest import cli_done
from workerkit import query

from pipeline.errors import ExitCode
from pipeline.formats.contracts import ReviewOutput
from pipeline.formats.review_log import parse_entries
from pipeline.formats.spawn_params import SpawnParams
from pipeline.graph.deps import RunDeps
from pipeline.offline.driver import engine_model
from pipeline.offline.observe import Observations
from pipeline.runs.lock import holder_for
from pipeline.runs.pg_store import PgStore

HOLD_PG = """
import sys
from pathlib import Path
from pipeline.runs.lock import holder_for
from pipeline.runs.pg_store import PgStore
store = PgStore(sys.argv[1], Path(sys.argv[2]) / "runs")
lock = store.lock(Path(sys.argv[2]) / "docs" / "adr" / "a", "docs/adr/a")
lock.acquire(holder_for("20260101-000000-p1-worker"))
print("held", flush=True)
sys.stdin.read()
lock.release()
"""


def designloop(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return cli_done(list(args), repo)


@pytest.mark.slow
def test_a_directory_a_store_run_holds_is_refused_to_edits_and_local_runs(
    pg_url: str, tmp_path: Path
) -> None:
    repo = batch_repo(tmp_path, ["a"])
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_PG, pg_url, str(repo)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        edit = designloop(
            repo, "edit", "docs/adr/a", "--kind", "content-edit", "--old", "never less than one",
            "--new", "never below one second", "--json",
        )  # fmt: skip
        local = designloop(repo, "create", "docs/adr/a", "--json")
        on_store = designloop(repo, "create", "docs/adr/a", "--store", pg_url, "--json")
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(60)
    for refused in (edit, local, on_store):
        assert refused.returncode == ExitCode.BAD_INPUT, refused.stderr
        assert "20260101-000000-p1-worker" in refused.stderr  # the store run is named
    assert not (repo / "runs").exists() or not any((repo / "runs").glob("*-p1-*"))
    assert "never less than one" in (repo / "docs/adr/a/_workflow/design.md").read_text()


class Recording:
    """The store's connection, recording every statement run on it."""

    def __init__(self, conn: psycopg.Connection[Any], seen: list[str]) -> None:
        self.conn, self.seen = conn, seen

    def execute(self, sql: Any, *args: Any, **kwargs: Any) -> Any:
        self.seen.append(str(sql))
        return self.conn.execute(sql, *args, **kwargs)


def test_asking_who_holds_a_lock_takes_nothing(pg_url: str, tmp_path: Path) -> None:
    for name in ("one", "two"):
        (tmp_path / name / "_workflow").mkdir(parents=True)
    prober, runner = PgStore(pg_url, tmp_path / "runs1"), PgStore(pg_url, tmp_path / "runs2")
    seen: list[str] = []
    real = prober.db

    @contextmanager
    def recorded() -> Iterator[Any]:
        with real() as conn:
            yield Recording(conn, seen)

    prober.db = recorded  # type: ignore[method-assign]
    try:
        for key in ("docs/adr/a", "docs/adr/b", "docs/adr/c", "docs/adr/d"):  # keys of either sign
            probe = prober.lock(tmp_path / "one", key)
            assert probe.holder() is None
            taken = runner.lock(tmp_path / "two", key)
            taken.acquire(holder_for("20260101-000000-p1-held"))
            current = probe.holder()
            assert current is not None and current.run_id == "20260101-000000-p1-held"
            taken.release()
            assert probe.holder() is None
    finally:
        prober.close()
        runner.close()
    assert seen and not [s for s in seen if "advisory_lock" in s or "advisory_unlock" in s]


@pytest.mark.slow
def test_resume_wait_reads_the_run_once_it_holds_the_lock(pg_url: str, tmp_path: Path) -> None:
    repo = batch_repo(tmp_path, ["a"])
    entered, release = threading.Event(), threading.Event()

    def held(params: SpawnParams, obs: Observations) -> ReviewOutput:
        entered.set()
        release.wait(120)
        return ReviewOutput(verdict="PASS")

    def configure(deps: RunDeps) -> None:
        deps.runtime.model_overrides["comprehension-review"] = engine_model("comprehension-review", held)

    store = PgStore(pg_url, repo / "runs")
    out: dict[str, Any] = {}
    first = threading.Thread(
        target=lambda: out.setdefault("batch", run_batch(repo, ["a"], store=store, configure=configure))
    )
    first.start()
    assert entered.wait(120)
    run_id = query(pg_url, "SELECT run_id FROM runs")[0][0]
    other = subprocess.Popen(
        [sys.executable, "-m", "pipeline.cli", "resume", run_id, "--store", pg_url, "--runs-dir",
         str(tmp_path / "other-runs"), "--wait", "--json"],
        cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert other.stderr is not None and other.stderr.readline().startswith("waiting:")  # evidence
    finally:
        release.set()
        first.join(300)
        store.close()
    _, stderr = other.communicate(timeout=300)
    assert other.returncode == 0, stderr
    outcomes = query(pg_url, "SELECT 1 FROM events WHERE run_id = %s AND event->>'type' = 'outcome'", run_id)
    assert len(outcomes) == 1  # the finish ran once, in the first run
    entries = parse_entries(repo / "docs/adr/a/_workflow/design-mutations.md")
    assert [e.run_id for e in entries] == [run_id]
