"""One run per design directory: a second run exits 2 naming the first or waits with --wait;
a lock left by a killed process is taken over; the lock file goes when its holder lets go."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from agentkit import make_repo
from conftest import run_cli
from faultkit import launch
from graphkit import start
from test_store import snapshot

from pipeline.errors import ExitCode
from pipeline.formats.review_log import parse_entries
from pipeline.runs.lock import LOCK_NAME, FileRunLock, RunLocked, holder_for


def test_a_second_run_exits_2_naming_the_running_one_and_writes_nothing(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    lock = FileRunLock(d.root)
    lock.acquire(holder_for("20260101-000000-p1-aaaaaa"))
    try:
        before = snapshot(tmp_path)
        for args in (["create", str(d.root)], ["final", str(d.root)]):
            result = run_cli([*args, "--runs-dir", str(tmp_path / "runs")])
            assert result.code == ExitCode.BAD_INPUT, result.err
            assert f"run 20260101-000000-p1-aaaaaa (pid {os.getpid()}" in result.err
            assert "is working on this design directory" in result.err and "--wait" in result.err
            assert snapshot(tmp_path) == before
    finally:
        lock.release()
    assert not (d.workflow / LOCK_NAME).exists()


def test_a_resume_of_a_running_run_is_refused(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    run_dir = start(d, tmp_path)
    lock = FileRunLock(d.root)
    lock.acquire(holder_for(run_dir.name))
    try:
        status = json.loads(
            run_cli(["status", run_dir.name, "--runs-dir", str(tmp_path / "runs"), "--json"]).out
        )
        assert status["state"] == "running"
        result = run_cli(["resume", run_dir.name, "--runs-dir", str(tmp_path / "runs")])
        assert result.code == ExitCode.BAD_INPUT and f"run {run_dir.name} (pid" in result.err
    finally:
        lock.release()
    status = json.loads(run_cli(["status", run_dir.name, "--runs-dir", str(tmp_path / "runs"), "--json"]).out)
    assert status["state"] == "interrupted"


@pytest.mark.slow
def test_wait_starts_when_the_running_one_is_done(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    d.design.unlink()
    lock = FileRunLock(d.root)
    lock.acquire(holder_for("20260101-000000-p1-bbbbbb"))
    args = ["create", str(d.root), "--runs-dir", str(tmp_path / "runs"), "--no-warmup", "--wait", "--json"]
    proc = subprocess.Popen(
        launch(args), cwd=d.repo_root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # evidence that it is waiting, not a clock
        assert "waiting: run 20260101-000000-p1-bbbbbb" in line, line
        assert not d.design.exists() and not (tmp_path / "runs").exists()
    finally:
        lock.release()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == ExitCode.OK, err
    assert json.loads(out)["outcome"] == "PASS"
    assert [e.number for e in parse_entries(d.mutations)] == [1]
    assert not (d.workflow / LOCK_NAME).exists()


HOLD = """
import sys
from pathlib import Path
from pipeline.runs.lock import FileRunLock, holder_for
FileRunLock(Path(sys.argv[1])).acquire(holder_for("20260101-000000-p1-cccccc"))
print("held", flush=True)
sys.stdin.read()
"""


@pytest.mark.slow
def test_a_lock_left_by_a_killed_process_is_taken_over(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    d.design.unlink()
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(d.root)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    try:
        FileRunLock(d.root).acquire(holder_for("x"))
        raise AssertionError("the lock was not held")
    except RunLocked as exc:
        assert "run 20260101-000000-p1-cccccc" in exc.message
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    assert (d.workflow / LOCK_NAME).exists()  # the dead holder's file stays, but not its lock
    assert FileRunLock(d.root).holder() is None
    result = run_cli(["create", str(d.root), "--runs-dir", str(tmp_path / "runs"), "--no-warmup"])
    assert result.code == ExitCode.OK, result.err
    assert not (d.workflow / LOCK_NAME).exists()
