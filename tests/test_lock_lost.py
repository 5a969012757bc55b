"""A run that loses its design directory's lock stops: the store's session holding the advisory
lock ends under a live run (a server restart, a network cut, idle_session_timeout,
pg_terminate_backend), and the run notices, by its watch while it works or by the fence right
before the review-log entry, stops resumable, and writes nothing more to the directory; the
lock's release deletes only its own holder row."""

from __future__ import annotations

import asyncio
import errno
import os
import threading
from pathlib import Path
from typing import Any, cast

import psycopg
import pytest
from batchkit import batch_repo, run_batch
from workerkit import query, wait_until

from pipeline.errors import ExitCode
from pipeline.formats.contracts import ReviewOutput
from pipeline.formats.review_log import parse_entries
from pipeline.formats.spawn_params import SpawnParams
from pipeline.graph.deps import RunDeps
from pipeline.graph.watch import watched
from pipeline.offline.driver import engine_model
from pipeline.offline.observe import Observations
from pipeline.runs.lock import LOCK_NAME, FileRunLock, LockLost, RunLock, holder_for
from pipeline.runs.pg_lock import PgLock
from pipeline.runs.pg_store import PgStore

PASSING = ReviewOutput(verdict="PASS")


def end_lock_sessions(url: str) -> int:
    """End every session holding an advisory lock in the test's database; how many there were."""
    with psycopg.connect(url, autocommit=True) as conn:
        pids = [
            r[0]
            for r in conn.execute(
                "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted "
                "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            ).fetchall()
        ]
        for pid in pids:
            conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
    return len(pids)


def reviewed_by(engine: Any) -> Any:
    def configure(deps: RunDeps) -> None:
        deps.runtime.model_overrides["comprehension-review"] = engine_model("comprehension-review", engine)

    return configure


def entries(repo: Path) -> list[str]:
    log = repo / "docs" / "adr" / "a" / "_workflow" / "design-mutations.md"
    return [str(e.run_id) for e in parse_entries(log)]


def test_a_run_whose_lock_session_ends_stops_at_once_and_is_resumed_later(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = batch_repo(tmp_path, ["a"])
    entered, release, noticed = threading.Event(), threading.Event(), threading.Event()
    check = PgLock.check

    def watched_check(self: PgLock) -> None:
        try:
            check(self)
        except LockLost:
            noticed.set()
            raise

    monkeypatch.setattr(PgLock, "check", watched_check)
    monkeypatch.setattr("pipeline.graph.watch.WATCH_SECONDS", 0.2)

    def held(params: SpawnParams, obs: Observations) -> ReviewOutput:  # the review takes a while
        entered.set()
        release.wait(120)
        return PASSING

    store = PgStore(pg_url, repo / "runs")
    out: dict[str, Any] = {}
    worker = threading.Thread(
        target=lambda: out.setdefault(
            "batch", run_batch(repo, ["a"], store=store, configure=reviewed_by(held))
        )
    )
    worker.start()
    try:
        assert entered.wait(120)
        assert end_lock_sessions(pg_url) == 1  # the lock's session ends under the live run
        # Evidence, not a clock: the watch finds the lock lost while the review is still held.
        assert noticed.wait(120)
        release.set()  # the held review answers PASS, but the run was cancelled already
        wait_until(lambda: query(pg_url, "SELECT 1 FROM events WHERE event->>'type' = 'stopped'"))
    finally:
        release.set()
        worker.join(300)
        store.close()
    row = out["batch"].rows[0]
    assert row.exit_code == ExitCode.INTERNAL and row.message and "lost its lock" in row.message
    assert entries(repo) == []  # nothing more was written to the directory
    assert query(pg_url, "SELECT COUNT(*) FROM holders")[0][0] == 0

    store = PgStore(pg_url, repo / "runs")
    try:
        assert row.run_id is not None and store.view(row.run_id).state == "stopped"
        again = run_batch(repo, ["a"], store=store)  # resumable like any interrupted run
    finally:
        store.close()
    assert [(r.action, r.run_id, r.outcome) for r in again.rows] == [("resumed", row.run_id, "PASS")]
    assert entries(repo) == [row.run_id]


def test_a_lock_lost_between_two_watches_is_caught_by_the_fence_before_the_review_log(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("pipeline.graph.watch.WATCH_SECONDS", 3600.0)  # only the fence can see it
    repo = batch_repo(tmp_path, ["a"])

    def cut(params: SpawnParams, obs: Observations) -> ReviewOutput:  # the session ends mid-review
        end_lock_sessions(pg_url)
        return PASSING

    store = PgStore(pg_url, repo / "runs")
    try:
        batch = run_batch(repo, ["a"], store=store, configure=reviewed_by(cut))
        row = batch.rows[0]
        assert row.exit_code == ExitCode.INTERNAL and row.message and "lost its lock" in row.message
        assert entries(repo) == []  # the fence stopped the review-log entry
        assert row.run_id is not None and store.view(row.run_id).state == "stopped"
        again = run_batch(repo, ["a"], store=store)
    finally:
        store.close()
    assert [(r.action, r.outcome) for r in again.rows] == [("resumed", "PASS")]
    assert entries(repo) == [row.run_id]


def test_a_holder_that_lost_its_lock_releases_only_its_own_row(pg_url: str, tmp_path: Path) -> None:
    one, two = (tmp_path / name / "docs" / "adr" / "a" for name in ("one", "two"))
    for directory in (one, two):
        (directory / "_workflow").mkdir(parents=True)
    first, second = PgStore(pg_url, tmp_path / "runs1"), PgStore(pg_url, tmp_path / "runs2")
    try:
        lost = first.lock(one, "docs/adr/a")
        lost.acquire(holder_for("20260101-000000-p1-first"))
        assert end_lock_sessions(pg_url) == 1
        with pytest.raises(LockLost, match="20260101-000000-p1-first"):
            lost.check()
        live = second.lock(two, "docs/adr/a")  # the same directory in another checkout
        live.acquire(holder_for("20260101-000000-p1-second"))
        lost.release()
        current = live.holder()
        assert current is not None and current.run_id == "20260101-000000-p1-second"
        live.check()
        live.release()
        assert live.holder() is None
    finally:
        first.close()
        second.close()


def test_a_lock_file_that_cannot_be_checked_stops_the_run_and_a_failing_check_never_ends_the_watch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "_workflow").mkdir()
    lock = FileRunLock(tmp_path)
    lock.acquire(holder_for("20260101-000000-p1-nfs"))
    real_stat = os.stat

    def stale(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if str(path).endswith(LOCK_NAME):
            raise OSError(errno.ESTALE, "Stale file handle")
        return real_stat(path, *args, **kwargs)

    try:
        with monkeypatch.context() as patched:  # an NFS checkout after a failover
            patched.setattr("pipeline.runs.lock.os.stat", stale)
            with pytest.raises(LockLost, match="cannot be checked: Stale file handle"):
                lock.check()
    finally:
        lock.release()

    class Flaky:  # a check that fails for another reason is asked again; the work's result stands
        def __init__(self) -> None:
            self.calls = 0

        def check(self) -> None:
            self.calls += 1
            if self.calls == 1:
                raise RuntimeError("the store's pool is being reset")

    flaky = Flaky()

    async def work() -> str:
        while flaky.calls < 3:  # evidence: the watch went on after the failed check
            await asyncio.sleep(0.01)
        return "finished"

    assert asyncio.run(watched(cast(RunLock, flaky), work(), every=0.01)) == "finished"
