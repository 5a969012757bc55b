"""Helpers for the lifecycle tests: the example in a throwaway repository, designloop through
the CLI with --json, who the actor is, and a digest of every file a transition must not touch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agentkit import make_repo
from conftest import run_cli
from editkit import tree

from pipeline.formats.design_dir import DesignDir

ACTOR = "ana@example.org"
OPEN_GATE = "\n### 2026-12-01 — NEEDS REVISION\n- [ ] blocker: the refill rate per route is not decided.\n"


@pytest.fixture
def actor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """git's user.email is ACTOR for every command the test runs."""
    config = tmp_path / "gitconfig"
    config.write_text(f"[user]\n\temail = {ACTOR}\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    return ACTOR


def fresh(tmp_path: Path) -> DesignDir:
    """The example with no design.md yet: its first create writes revision 1."""
    d = make_repo(tmp_path)
    d.design.unlink()
    return d


def dl(args: list[str], runs: Path) -> tuple[int, dict[str, Any], str]:
    """``designloop ARGS --runs-dir RUNS --json``: (exit code, the JSON or {}, stderr)."""
    done = run_cli([*args, "--runs-dir", str(runs), "--json"])
    return done.code, json.loads(done.out) if done.out.strip() else {}, done.err


def text(args: list[str], runs: Path) -> tuple[int, str, str]:
    done = run_cli([*args, "--runs-dir", str(runs)])
    return done.code, done.out, done.err


def everything(d: DesignDir, runs: Path) -> dict[str, str]:
    """Every file of the repository and of the runs directory (the store), by digest."""
    return {**tree(d.repo_root), **{f"runs:{k}": v for k, v in (tree(runs) if runs.exists() else {}).items()}}


def open_gate(d: DesignDir) -> None:
    d.research_log.write_text(d.research_log.read_text(encoding="utf-8") + OPEN_GATE, encoding="utf-8")


def refused(code: int, out: dict[str, Any], err: str, name: str) -> None:
    """A refused transition: exit 6, its name in the message and in --json."""
    assert code == 6, (code, err)
    assert out["error"]["name"] == name and out["error"]["exit_code"] == 6, out
    assert f"{name}:" in err and "what to do:" in err
