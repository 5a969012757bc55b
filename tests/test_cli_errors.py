"""Bad input: a clear error naming file, line and what to do; exit 2; nothing rewritten."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import EXAMPLE, body, design, write


def test_example_checks_clean(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import shutil

    target = tmp_path / "example"
    shutil.copytree(EXAMPLE, target)
    shutil.copy(Path(__file__).parent / "corpus" / "base" / "design.md", target / "_workflow" / "design.md")
    result = cli(["check", str(target)])
    assert result.code == 0 and json.loads(result.out)["findings"] == []


def test_missing_design_file(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = cli(["check", "--design-path", str(tmp_path / "nope.md")])
    assert result.code == 2
    assert "nope.md: design not found" in result.err and "what to do" in result.err
    assert "Traceback" not in result.err


def test_non_utf8_names_byte_offset(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "design.md"
    path.write_bytes(b"# T\n\n## Overview\n\ncaf\xe9\n")
    result = cli(["check", "--design-path", str(path)])
    assert result.code == 2
    assert f"{path}:5: not valid UTF-8: byte 0xe9 at byte offset 21" in result.err


def test_directory_and_unreadable_paths(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = cli(["check", "--design-path", str(tmp_path)])
    assert result.code == 2 and "is a directory" in result.err
    blocker = write(tmp_path / "file.md", "x")
    result = cli(["check", "--design-path", str(blocker / "design.md")])
    assert result.code == 2 and "could not be read" in result.err


def test_bad_flags_exit_2(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = write(tmp_path / "design.md", design(body("A")))
    assert cli(["check", "--design-path", str(path), "--target", "sideways"]).code == 2
    result = cli(["check", "--design-path", str(path), "--scope", "bounded"])
    assert result.code == 2 and "--changed-section" in result.err
    result = cli(["check", "--design-path", str(path), "--target", "both"])
    assert result.code == 2 and "--design-mechanics-path" in result.err


def test_unparseable_companion_means_nothing_is_fixed(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    text = design(body("A", "Cached (per D1)."))
    path = write(tmp_path / "design.md", text)
    mech = tmp_path / "design-mechanics.md"
    mech.write_bytes(b"# M\n\xff\n")
    result = cli(["check", "--design-path", str(path), "--design-mechanics-path", str(mech), "--fix"])
    assert result.code == 2
    assert path.read_text() == text


def test_duplicate_decision_ids(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    log = write(
        tmp_path / "research-log.md",
        "# L\n\n## Decision Log\n\n### D1: a\n**Decision:** x\n\n### D1: b\n**Decision:** y\n",
    )
    result = cli(["gate", str(log)])
    assert result.code == 2
    assert f"{log}:8: duplicate decision ID D1 (first at line 5, again at line 8)" in result.err


def test_malformed_gate_heading(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    log = write(tmp_path / "research-log.md", "# L\n\n## Adversarial gate record\n\n### Nov 20 — PASS\n")
    result = cli(["gate", str(log)])
    assert result.code == 2 and f"{log}:5: malformed gate record heading" in result.err
    log.write_text("# L\n\n## Adversarial gate record\n\n### 2026-02-30 — PASS\n")
    result = cli(["gate", str(log)])
    assert result.code == 2 and "impossible date" in result.err


def test_text_and_sarif_formats(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = write(tmp_path / "design.md", design("## A\n\nno tldr (per D2)\n"))
    text = cli(["check", "--design-path", str(path), "--format", "text"])
    assert text.code == 1
    assert "design.md:8:1: dsc-section-shape [blocker]" in text.out and "2 findings: 2 blocker" in text.out
    assert "dsc-parenthetical-aside [*] [blocker]" in text.out  # [*]: check --fix fixes it
    sarif = json.loads(cli(["check", "--design-path", str(path), "--format", "sarif"]).out)
    results = sarif["runs"][0]["results"]
    assert sarif["version"] == "2.1.0" and {r["level"] for r in results} == {"error"}
    aside = next(r for r in results if r["ruleId"] == "dsc-parenthetical-aside")
    assert aside["fixes"][0]["artifactChanges"][0]["replacements"][0]["insertedContent"] == {"text": ""}
    ids = {r["id"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert "dsc-top-level-cap" in ids


@pytest.mark.slow
def test_console_script_runs_without_traceback(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "gate", str(tmp_path / "x.md")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr and "research log not found" in done.stderr


def _without(modules: list[str], args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The CLI in a process where ``modules`` cannot be imported (an install without the extra)."""
    block = "; ".join(f"sys.modules[{m!r}] = None" for m in modules)
    code = f"import sys; {block}; from pipeline.cli import run; sys.argv = ['designloop', *{args!r}]; run()"
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_a_provider_whose_package_is_not_installed_names_the_extra(tmp_path: Path) -> None:
    from agentkit import make_repo

    d = make_repo(tmp_path)
    before = {p: p.read_bytes() for p in d.root.rglob("*") if p.is_file()}
    done = _without(["anthropic"], ["create", str(d.root), "--model", "anthropic:claude-x"], d.repo_root)
    assert done.returncode == 2, done.stderr
    assert (
        "model 'anthropic:claude-x' needs the anthropic client package, which is not installed" in done.stderr
    )
    assert "what to do: pip install 'designloop[anthropic]'" in done.stderr and "Traceback" not in done.stderr
    assert {p: p.read_bytes() for p in d.root.rglob("*") if p.is_file()} == before


@pytest.mark.slow
def test_the_postgresql_store_without_its_packages_names_the_extra(tmp_path: Path) -> None:
    done = _without(["psycopg"], ["runs", "--store", "postgresql://ci@db/x"], tmp_path)
    assert done.returncode == 2, done.stderr
    assert "the PostgreSQL store needs packages that are not installed (psycopg" in done.stderr
    assert "pip install 'designloop[postgres]'" in done.stderr
    assert "Traceback" not in done.stderr
    local = _without(["psycopg", "pgqueuer"], ["runs", "--runs-dir", str(tmp_path / "runs")], tmp_path)
    assert local.returncode == 0, local.stderr
    for argv in (["enqueue", "create", str(tmp_path)], ["worker", "--drain"]):
        queue = _without(["psycopg"], [*argv, "--store", "postgresql://ci@db/x"], tmp_path)
        assert queue.returncode == 2, queue.stderr
        assert (
            "what to do: pip install 'designloop[postgres]'" in queue.stderr
            and "Traceback" not in queue.stderr
        )
