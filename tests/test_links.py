"""Symbolic links where designloop writes: refused before anything is written, never followed out
of the repository, never replaced silently (docs/formats.md, "Links")."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from agentkit import make_repo
from conftest import STAMP, run_cli
from test_store import snapshot

from pipeline.agents.tools import ToolContext, write
from pipeline.errors import ExitCode, InputError
from pipeline.formats.design_dir import DesignDir
from pipeline.formats.textio import atomic_write, check_write_target

PRECIOUS = b"the user's own file, outside the repository\n"


class Ctx:
    def __init__(self, deps: ToolContext) -> None:
        self.deps = deps


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> DesignDir:
    d = make_repo(tmp_path)
    monkeypatch.chdir(d.repo_root)
    return d


def _outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside" / "precious.txt"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(PRECIOUS)
    return path


def _link(link: Path, target: Path) -> None:
    if link.exists() or link.is_symlink():
        link.unlink()
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)


def _refused(args: list[str], tmp_path: Path, *words: str) -> None:
    before = snapshot(tmp_path)
    result = run_cli([*args, "--runs-dir", str(tmp_path / "runs")] if args[0] != "check" else args)
    assert result.code == ExitCode.BAD_INPUT, (result.code, result.err, result.out[-400:])
    assert "what to do:" in result.err and "Traceback" not in result.err
    for word in words:
        assert word in result.err, result.err
    assert snapshot(tmp_path) == before


def test_create_never_overwrites_a_file_outside_through_design_md(repo: DesignDir, tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    _link(repo.design, outside)
    _refused(["create", str(repo.root)], tmp_path, "symbolic link", "outside the repository")
    assert outside.read_bytes() == PRECIOUS and repo.design.is_symlink()


def test_create_refuses_a_design_md_linked_inside_the_repository(repo: DesignDir, tmp_path: Path) -> None:
    """A link inside the repository is refused too: following it would overwrite what it names
    (here the research log), replacing it would break it silently."""
    log = repo.research_log.read_bytes()
    _link(repo.design, Path("research-log.md"))
    _refused(["create", str(repo.root)], tmp_path, "symbolic link")
    assert repo.research_log.read_bytes() == log


def test_final_never_overwrites_a_file_outside_through_design_final(repo: DesignDir, tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    _link(repo.final, outside)
    _refused(["final", str(repo.root)], tmp_path, "symbolic link")
    assert outside.read_bytes() == PRECIOUS


def test_final_refuses_a_linked_companion_output(repo: DesignDir, tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    _link(repo.final_mechanics, outside)
    _refused(["final", str(repo.root)], tmp_path, "symbolic link")
    assert outside.read_bytes() == PRECIOUS


def test_edit_keeps_a_linked_design_as_a_link_and_changes_nothing(repo: DesignDir, tmp_path: Path) -> None:
    real = repo.repo_root / "shared-design.md"
    real.write_bytes(repo.design.read_bytes())
    _link(repo.design, real)
    args = ["edit", str(repo.root), "--kind", "content-edit", "--old", "Overview", "--new", "Overview"]
    _refused([*args[:4], "--section", "Overview", "--instruction", "shorter"], tmp_path, "symbolic link")
    assert repo.design.is_symlink()


def test_check_fix_refuses_a_linked_design_and_keeps_the_link(repo: DesignDir, tmp_path: Path) -> None:
    real = repo.repo_root / "linked.md"
    real.write_text(f"{STAMP}\n# T\n\n## Overview\n\nIt works (per D27).\n")
    link = repo.repo_root / "design-link.md"
    _link(link, real)
    _refused(["check", "--design-path", str(link), "--fix"], tmp_path, "symbolic link")
    assert link.is_symlink() and "(per D27)" in real.read_text()


def test_a_linked_reviews_directory_leading_out_is_refused(repo: DesignDir, tmp_path: Path) -> None:
    outside = tmp_path / "outside-dir"
    outside.mkdir()
    _link(repo.reviews, outside)
    _refused(["create", str(repo.root)], tmp_path, "outside the repository")
    assert not any(outside.iterdir())


def test_a_linked_params_file_is_refused_before_the_run(repo: DesignDir, tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    repo.reviews.mkdir(exist_ok=True)
    _link(repo.reviews / "r1-design-author.json", outside)
    _refused(["create", str(repo.root)], tmp_path, "symbolic link")
    assert outside.read_bytes() == PRECIOUS


def test_a_research_log_behind_a_link_out_of_the_repository_is_bad_input(
    repo: DesignDir, tmp_path: Path
) -> None:
    """Every role would be refused it (the tools stay inside the repository): refused up front."""
    moved = tmp_path / "outside-log.md"
    moved.write_bytes(repo.research_log.read_bytes())
    _link(repo.research_log, moved)
    _refused(["create", str(repo.root)], tmp_path, "outside the repository")


def test_a_linked_review_log_is_refused(repo: DesignDir, tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    _link(repo.mutations, outside)
    _refused(["create", str(repo.root)], tmp_path, "symbolic link")
    assert outside.read_bytes() == PRECIOUS


def test_a_linked_run_lock_is_never_written_through(repo: DesignDir, tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    _link(repo.workflow / ".designloop-run.lock", outside)
    before = snapshot(tmp_path)
    result = run_cli(["create", str(repo.root), "--runs-dir", str(tmp_path / "runs")])
    assert result.code == ExitCode.BAD_INPUT and "what to do:" in result.err, result.err
    assert outside.read_bytes() == PRECIOUS and snapshot(tmp_path) == before


def test_a_design_directory_linked_out_of_the_repository_is_refused(repo: DesignDir, tmp_path: Path) -> None:
    away = tmp_path / "away"
    os.rename(repo.root, away)
    _link(repo.root, away)
    _refused(["create", str(repo.root)], tmp_path, "outside the repository")


@pytest.mark.parametrize("linked_first", [True, False])
def test_the_write_tool_never_writes_through_a_link(
    repo: DesignDir, tmp_path: Path, linked_first: bool
) -> None:
    """Whether the link was there when the spawn began or appeared during it (after the
    pre-flight), the tool refuses and nothing moves."""
    outside = _outside(tmp_path)
    if linked_first:
        _link(repo.design, outside)
    deps = ToolContext(role="design-author", repo_root=repo.repo_root, output_path=repo.design)
    _link(repo.design, outside)
    for path in (str(repo.design.relative_to(repo.repo_root)), str(outside)):
        result = write(Ctx(deps), path, "# Overwritten\n")  # type: ignore[arg-type]
        assert result.startswith("refused:"), result
    assert outside.read_bytes() == PRECIOUS and repo.design.is_symlink()


def test_atomic_write_refuses_links_and_linked_directories(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    outside = _outside(tmp_path)
    _link(repo / "file.md", outside)
    with pytest.raises(InputError, match="symbolic link"):
        atomic_write(repo / "file.md", "x")
    _link(repo / "dir", outside.parent)
    with pytest.raises(InputError, match="outside the repository"):
        atomic_write(repo / "dir" / "new.md", "x")
    assert sorted(p.name for p in outside.parent.iterdir()) == ["precious.txt"]
    assert outside.read_bytes() == PRECIOUS
    # A directory link that stays inside the repository is followed; regular files are written.
    (repo / "real").mkdir()
    _link(repo / "alias", repo / "real")
    atomic_write(repo / "alias" / "ok.md", "fine\n")
    assert (repo / "real" / "ok.md").read_text() == "fine\n"
    check_write_target(repo / "real" / "ok.md")


def test_a_runs_directory_linked_out_of_the_repository_is_refused(repo: DesignDir, tmp_path: Path) -> None:
    """A checked-in ``runs`` link: designloop would write its runs where nobody named them."""
    outside = tmp_path / "outside-runs"
    outside.mkdir()
    (repo.repo_root / "runs").symlink_to(outside)
    before = snapshot(tmp_path)
    result = run_cli(["create", str(repo.root)])
    assert result.code == ExitCode.BAD_INPUT and "runs directory leads outside" in result.err, result.err
    assert "what to do:" in result.err and snapshot(tmp_path) == before
    assert not any(outside.iterdir())
    # Named outright (its own path), a runs directory outside the repository is the user's choice.
    assert run_cli(["create", str(repo.root), "--runs-dir", str(outside), "--json"]).code == 0


def test_report_and_sarif_outputs_never_go_through_a_link(repo: DesignDir, tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    (repo.repo_root / "findings.sarif").symlink_to(outside)
    result = run_cli(
        ["batch", "create", str(repo.root), "--sarif", "findings.sarif", "--runs-dir", str(tmp_path / "r")]
    )
    assert result.code == ExitCode.BAD_INPUT and "symbolic link" in result.err, result.err
    assert outside.read_bytes() == PRECIOUS
    run = run_cli(["create", str(repo.root), "--runs-dir", str(tmp_path / "r"), "--json"])
    run_id = json.loads(run.out)["run_id"]
    (repo.repo_root / "reports").symlink_to(outside.parent)
    result = run_cli(["report", run_id, "--out", "reports", "--runs-dir", str(tmp_path / "r")])
    assert result.code == ExitCode.BAD_INPUT and "outside the repository" in result.err, result.err
    assert sorted(p.name for p in outside.parent.iterdir()) == ["precious.txt"]
