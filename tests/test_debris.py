"""No debris: a write killed mid-way (kill -9) leaves a temporary file in the design directory;
the next command sweeps it, so ``git add -A`` never picks one up. A writer still at work, and
another machine's, are left alone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from agentkit import make_repo
from conftest import ROOT, run_cli

from pipeline.formats.textio import _writer, sweep_debris

HANG = """
import os, sys, time
from pathlib import Path
import pipeline.formats.textio as textio
def hang(fd):
    Path(sys.argv[2]).write_text("written")
    time.sleep(600)
textio.os.fsync = hang
textio.atomic_write(Path(sys.argv[1]), "# Approvals\\n")
"""


def _killed_mid_write(target: Path, tmp: Path) -> list[Path]:
    """Start a writer of ``target`` that stops inside its atomic write, kill -9 it there."""
    flag = tmp / f"in-the-write-{target.name}"
    proc = subprocess.Popen([sys.executable, "-c", HANG, str(target), str(flag)], cwd=ROOT)
    try:
        while not flag.exists():  # evidence, not the clock: the writer says it is in the write
            if proc.poll() is not None:
                raise AssertionError("the writer ended before its write")
            time.sleep(0.01)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    return sorted(p for p in target.parent.iterdir() if p.name.endswith(".tmp"))


def test_a_write_killed_mid_way_is_swept_by_the_next_command(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    left = _killed_mid_write(d.root / "design-approvals.md", tmp_path)
    left += _killed_mid_write(d.mutations, tmp_path)
    assert len(left) == 2 and all(
        p.name.startswith((".design-approvals.md.", ".design-mutations.md.")) for p in left
    )
    result = run_cli(["status", str(d.root), "--runs-dir", str(tmp_path / "runs")], cwd=d.repo_root)
    assert result.code == 0, result.err
    assert [p for p in left if p.exists()] == []
    assert not (d.root / "design-approvals.md").exists()  # the write never happened: nothing half-done


def test_a_writer_still_at_work_and_another_machines_are_left_alone(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    mine = d.workflow / f".design.md.{_writer()}-abcd1234.tmp"
    other = d.workflow / f".design.md.dl-00000000-{os.getpid()}-abcd1234.tmp"
    unrelated = d.workflow / ".notes.tmp"
    for path in (mine, other, unrelated):
        path.write_text("x")
    assert sweep_debris(d.workflow) == []
    assert mine.exists() and other.exists() and unrelated.exists()
