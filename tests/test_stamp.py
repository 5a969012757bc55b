from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import STAMP, write

from pipeline.errors import StampViolation
from pipeline.formats.stamp import (
    WorkflowSha,
    assert_line1_preserved,
    definitions_digest,
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


def test_sha_is_the_last_commit_touching_the_users_overrides(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    write(tmp_path / ".designloop" / "agents" / "a.md", "a")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "agents")
    agents_sha = git(tmp_path, "rev-parse", "HEAD")
    write(tmp_path / "other.txt", "b")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "other")
    sha = WorkflowSha(tmp_path, [Path(".designloop/agents")], [("agents/a.md", b"a")])
    assert sha.get() == agents_sha and sha.get() == agents_sha and sha.computations == 1


def test_without_overrides_the_sha_is_a_digest_that_ignores_unrelated_commits(tmp_path: Path) -> None:
    definitions = [("agents/a.md", b"A"), ("prompts/p.md", b"P")]
    git(tmp_path, "init", "-q")
    write(tmp_path / "x.txt", "1")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "one")
    first = WorkflowSha(tmp_path, [], definitions).get()
    write(tmp_path / "x.txt", "2")
    git(tmp_path, "commit", "-qam", "two")
    assert WorkflowSha(tmp_path, [], list(reversed(definitions))).get() == first
    assert first != git(tmp_path, "rev-parse", "HEAD") and len(first) == 40
    assert WorkflowSha(tmp_path, [], [("agents/a.md", b"A2"), ("prompts/p.md", b"P")]).get() != first


def test_uncommitted_overrides_fall_back_to_the_digest(tmp_path: Path) -> None:
    write(tmp_path / ".designloop" / "prompts" / "p.md", "P")
    definitions = [("prompts/p.md", b"P")]
    assert WorkflowSha(tmp_path, [Path(".designloop/prompts")], definitions).get() == definitions_digest(
        definitions
    )


def test_the_effective_definitions_count_shipped_files_and_overrides(tmp_path: Path) -> None:
    from pipeline.agents.roles import workflow_definitions, workflow_overrides

    shipped = dict(workflow_definitions(tmp_path))
    assert {"agents/design-author.md", "prompts/house-style.md", "params/rules.toml"} <= set(shipped)
    assert workflow_overrides(tmp_path) == []
    write(tmp_path / ".designloop" / "prompts" / "house-style.md", "# mine\n")
    overridden = dict(workflow_definitions(tmp_path))
    assert overridden["prompts/house-style.md"] == b"# mine\n"
    assert workflow_overrides(tmp_path) == [Path(".designloop/prompts")]
    write(tmp_path / "designloop.toml", '[models.tiers]\nstrong = "openai:gpt-5"\n')
    assert definitions_digest(workflow_definitions(tmp_path)) == definitions_digest(list(overridden.items()))
    write(tmp_path / "designloop.toml", "[loop]\niteration_budget = 5\n")
    assert definitions_digest(workflow_definitions(tmp_path)) != definitions_digest(list(overridden.items()))


def test_prepend_is_idempotent(tmp_path: Path) -> None:
    path = write(tmp_path / "design.md", "# T\r\n\r\nx\r\n")
    sha = WorkflowSha(tmp_path, [], [("agents/a.md", b"a")])
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


def test_re_creating_a_stamped_design_keeps_its_stamp(tmp_path: Path) -> None:
    """The seed's idempotency guard: phase1-creation on an already-stamped design.md keeps line 1
    byte for byte, whatever the workflow's SHA is now."""
    from agentkit import make_repo
    from conftest import STAMP, run_cli

    d = make_repo(tmp_path)
    d.design.write_text(STAMP + "\n" + d.design.read_text())
    done = run_cli(["create", str(d.root), "--runs-dir", str(tmp_path / "runs"), "--json"])
    assert done.code == 0, done.err
    assert d.design.read_text().splitlines()[0] == STAMP
