"""The PostgreSQL run store against a real server: a batch whose runs every checkout sees,
status, runs, resume and report through --store, the advisory lock across processes (and
released by a SIGKILL), retention through LangGraph's prune."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from batchkit import batch_repo, rows, run_batch
from conftest import cli_done

from pipeline.errors import ExitCode
from pipeline.runs.lock import RunLocked, holder_for
from pipeline.runs.pg_store import PgStore


def designloop(
    args: list[str], cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return cli_done(args, cwd, env)


def checkpoint_counts(url: str) -> dict[str, int]:
    with psycopg.connect(url, options="-c search_path=designloop") as conn:
        got = conn.execute("SELECT thread_id, COUNT(*) FROM checkpoints GROUP BY thread_id").fetchall()
    return dict(got)


@pytest.mark.slow
def test_a_batch_on_the_store_is_seen_from_another_checkout(pg_url: str, tmp_path: Path) -> None:
    repo = batch_repo(tmp_path / "one", ["a", "b"])
    store = PgStore(pg_url, repo / "runs")
    try:
        first = run_batch(repo, ["a", "b"], store=store, jobs=2)
    finally:
        store.close()
    assert rows(first) == {"a": ("new", "PASS", 0), "b": ("new", "PASS", 0)}
    assert all(n == 1 for n in checkpoint_counts(pg_url).values())  # finished: latest checkpoint only

    # Another checkout at another path with no runs directory at all: the store knows the runs.
    other = tmp_path / "two" / "repo"
    shutil.copytree(repo, other, ignore=shutil.ignore_patterns("runs"))
    store = PgStore(pg_url, other / "runs")
    try:
        again = run_batch(other, ["a", "b"], store=store, jobs=2)
    finally:
        store.close()
    assert [r.action for r in again.rows] == ["skipped", "skipped"]

    listed = designloop(["runs", "--json", "--store", pg_url], other)
    assert listed.returncode == 0, listed.stderr
    views = json.loads(listed.stdout)["runs"]
    assert sorted(v["directory"] for v in views) == ["docs/adr/a", "docs/adr/b"]
    assert {v["outcome"] for v in views} == {"PASS"} and {v["state"] for v in views} == {"finished"}
    run_id = views[0]["run_id"]
    status = designloop(["status", run_id, "--json"], other, {"DESIGNLOOP_STORE": pg_url})
    assert status.returncode == 0 and json.loads(status.stdout)["outcome"] == "PASS"
    resumed = designloop(["resume", run_id, "--json", "--store", pg_url], other)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["outcome"] == "PASS"  # a finished run: nothing ran again
    report = designloop(["report", run_id, "--store", pg_url], other)
    assert report.returncode == 0, report.stderr
    assert "PASS" in (other / "runs" / run_id / "report.md").read_text()
    batch_report = designloop(["report", "--batch", "--store", pg_url], other)
    assert batch_report.returncode == 0, batch_report.stderr
    assert batch_report.stdout.strip().endswith("report.md")


@pytest.mark.slow
def test_an_unreachable_store_is_bad_input_with_its_address_and_no_password(tmp_path: Path) -> None:
    repo = batch_repo(tmp_path, ["a"])
    bad = "postgresql://user:secret@127.0.0.1:1/nothing"
    result = designloop(["batch", "create", "docs/adr/a", "--store", bad], repo)
    assert result.returncode == ExitCode.BAD_INPUT
    assert "cannot reach the run store postgresql://user:***@127.0.0.1:1/nothing" in result.stderr
    assert "secret" not in result.stderr + result.stdout
    wrong = designloop(["runs", "--store", "mysql://x"], repo)
    assert wrong.returncode == ExitCode.BAD_INPUT and "not a postgresql:// address" in wrong.stderr
    for args in (["enqueue", "create", "docs/adr/a"], ["worker", "--drain"]):
        none = cli_done(args, repo, {"DESIGNLOOP_STORE": None})
        assert (
            none.returncode == ExitCode.BAD_INPUT and "the queue lives in a PostgreSQL store" in none.stderr
        )
    one = designloop(["worker", "--jobs", "1", "--store", bad], repo)
    assert one.returncode == ExitCode.BAD_INPUT and "--jobs 1" in one.stderr
    assert not (repo / "runs").exists()  # nothing written for bad input


HOLD = """
import sys
from pathlib import Path
from pipeline.runs.lock import holder_for
from pipeline.runs.pg_store import PgStore
store = PgStore(sys.argv[1], Path(sys.argv[2]))
lock = store.lock(Path(sys.argv[3]), "docs/adr/a")
lock.acquire(holder_for("20260101-000000-p1-pgholder"))
print("held", flush=True)
sys.stdin.read()
"""


def checkout(root: Path, directory: str) -> Path:
    """A design directory of a checkout at ``root`` (the file lock lives in its _workflow/)."""
    (root / directory / "_workflow").mkdir(parents=True)
    return root / directory


@pytest.mark.slow
def test_the_directory_lock_spans_processes_and_a_killed_holder_frees_it(pg_url: str, tmp_path: Path) -> None:
    elsewhere = checkout(tmp_path / "elsewhere", "docs/adr/a")  # another checkout of the repository
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, pg_url, str(tmp_path / "runs"), str(elsewhere)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    store = PgStore(pg_url, tmp_path / "runs")
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        lock = store.lock(checkout(tmp_path, "docs/adr/a"), "docs/adr/a")  # the same directory, here
        current = lock.holder()
        assert current is not None and current.run_id == "20260101-000000-p1-pgholder"
        with pytest.raises(RunLocked, match="20260101-000000-p1-pgholder"):
            lock.acquire(holder_for("20260101-000000-p1-second"))
        assert store.lock(checkout(tmp_path, "docs/adr/b"), "docs/adr/b").holder() is None  # another is free
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=60)
        lock.acquire(holder_for("20260101-000000-p1-second"), wait=True)  # freed by the kill
        lock.release()
        assert lock.holder() is None
    finally:
        if holder.poll() is None:
            holder.kill()
        store.close()
