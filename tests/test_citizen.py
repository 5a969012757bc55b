"""A good citizen in the user's repository: the files designloop writes follow the process
umask, no lock or scratch file stays in a design directory, and the runs directory keeps
itself out of `git status`."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from agentkit import make_repo
from conftest import run_cli


@pytest.fixture(params=[0o022, 0o002])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_files_follow_the_umask_and_nothing_is_left_behind(
    tmp_path: Path, umask: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = make_repo(tmp_path)
    shutil.rmtree(d.repo_root / ".git")
    subprocess.run(["git", "init", "-q", str(d.repo_root)], check=True)
    subprocess.run(["git", "-C", str(d.repo_root), "add", "-A"], check=True)
    monkeypatch.chdir(d.repo_root)
    d.design.unlink()
    created = run_cli(["create", str(d.root), "--json"])
    assert created.code == 0, created.err
    final = run_cli(["final", str(d.root), "--json"])
    assert final.code in (0, 1), final.err
    run_id = json.loads(final.out)["run_id"]
    report = run_cli(["report", run_id, "--out", str(d.repo_root / "out")])
    assert report.code == 0, report.err
    sarif = d.repo_root / "findings.sarif"
    batch = run_cli(["batch", "create", str(d.root), "--sarif", str(sarif), "--json"])
    assert batch.code == 0, batch.err
    written = [
        d.design,
        d.final,
        d.mutations,
        d.repo_root / "out" / "report.html",
        d.repo_root / "out" / "report.md",
        sarif,
    ]
    want = 0o666 & ~umask
    assert {p.name: oct(mode(p)) for p in written} == {p.name: oct(want) for p in written}
    reviews = [p for p in d.reviews.rglob("*") if p.is_file()]
    assert reviews and all(mode(p) == want for p in reviews)
    events = list((d.repo_root / "runs").glob("*/events.jsonl"))
    assert events and all(mode(p) == want for p in events)
    # No lock, temporary or scratch file in the design directory.
    debris = [p for p in d.root.rglob("*") if p.name.endswith((".lock", ".tmp")) or p.name.startswith(".")]
    assert debris == []
    # runs/ carries its own .gitignore, as .pytest_cache does: git status does not list it.
    assert (d.repo_root / "runs" / ".gitignore").read_text().splitlines()[-1] == "*"
    status = subprocess.run(
        ["git", "-C", str(d.repo_root), "status", "--porcelain", "--untracked-files=all"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert "runs/" not in status
