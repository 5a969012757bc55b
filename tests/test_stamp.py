from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import STAMP, write

from pipeline.errors import StampViolation
from pipeline.formats.stamp import (
    WorkflowSha,
    assert_line1_preserved,
    has_stamp,
    line1_preserved,
    prepend_stamp,
)


def git(cwd: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "PATH": "/usr/bin:/bin",
    }
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_presence(tmp_path: Path) -> None:
    assert not has_stamp(tmp_path / "missing.md")
    assert has_stamp(write(tmp_path / "a.md", STAMP + "\r\n# T\n"))
    assert not has_stamp(write(tmp_path / "b.md", "# T\n" + STAMP + "\n"))


def test_sha_from_workflow_commit_then_head(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    write(tmp_path / "agents" / "a.md", "a")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "agents")
    agents_sha = git(tmp_path, "rev-parse", "HEAD")
    write(tmp_path / "other.txt", "b")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "other")
    sha = WorkflowSha(tmp_path, [Path("agents")])
    assert sha.get() == agents_sha and sha.get() == agents_sha and sha.computations == 1
    assert WorkflowSha(tmp_path, [Path("prompts")]).get() == git(tmp_path, "rev-parse", "HEAD")


def test_sha_outside_git_hashes_the_files(tmp_path: Path) -> None:
    write(tmp_path / "agents" / "b.md", "B")
    write(tmp_path / "agents" / "a.md", "A")
    import hashlib

    assert WorkflowSha(tmp_path, [Path("agents")]).get() == hashlib.sha1(b"AB").hexdigest()


def test_prepend_is_idempotent(tmp_path: Path) -> None:
    path = write(tmp_path / "design.md", "# T\r\n\r\nx\r\n")
    sha = WorkflowSha(tmp_path, [Path("agents")])
    assert prepend_stamp(path, sha)
    first = path.read_bytes()
    assert first.startswith(b"<!-- workflow-sha: ") and first.endswith(b"# T\r\n\r\nx\r\n")
    assert not prepend_stamp(path, sha)
    assert path.read_bytes() == first


def test_line1_helper() -> None:
    before = (STAMP + "\n# T\nbody\n").encode()
    assert line1_preserved(before, (STAMP + "\n# T\nnew body\n").encode())
    assert not line1_preserved(before, (STAMP + "\r\n# T\n").encode())
    with pytest.raises(StampViolation):
        assert_line1_preserved(before, b"# T\nbody\n", Path("design.md"))
    assert_line1_preserved(b"# T\n", b"# U\n", Path("design.md"))  # unstamped: nothing to keep
