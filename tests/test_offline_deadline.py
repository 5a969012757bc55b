"""``[run] spawn_timeout`` binds the offline engine as it binds a model: a role past it is
stopped, re-run once, and the run ends INCONCLUSIVE naming the role; never a hang."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from agentkit import runtime
from editkit import edit, entry_text, stamped_repo
from timekit import stopped_after

from pipeline.agents.review import review_once
from pipeline.formats.design_dir import DesignDir, open_design_dir
from pipeline.offline import comprehension
from pipeline.offline.deadline import checkpoint
from pipeline.settings import Limits

HANGED = """# Composition functions

## Overview

Functions write connection details to a secret in the claim's namespace.`publishConnectionDetailsTo.configRef` will
name the store configuration to use.

Use the API.[link](https://example.com/aaaaaaaaaaaaaaaaaaaaaaa) and go on.
"""
"""Nine lines that once kept the readability auditor busy for ever (a full stop before code or a
link, then a lower-case word)."""


def endless(*args: object, **kwargs: object) -> None:
    """An engine that never finishes but keeps its deadline, as every engine does between steps."""
    while True:
        checkpoint()


def _design(tmp_path: Path, text: str) -> DesignDir:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    workflow = repo / "docs" / "adr" / "x" / "_workflow"
    workflow.mkdir(parents=True)
    (workflow / "design.md").write_text(text, encoding="utf-8")
    return open_design_dir(workflow.parent)


@pytest.mark.parametrize("role", ["readability-auditor", "comprehension-review"])
def test_the_document_that_once_hung_is_reviewed(tmp_path: Path, role: str) -> None:
    d = _design(tmp_path, HANGED)
    with stopped_after():
        run = asyncio.run(review_once(runtime(d, timeout=60.0), role, d, Limits()))
    assert [r.status for r in run.results] == ["ok"]


def test_an_offline_role_past_its_timeout_is_stopped_and_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = _design(tmp_path, HANGED)
    monkeypatch.setattr(comprehension, "review", endless)
    with stopped_after():
        run = asyncio.run(review_once(runtime(d, timeout=0.3), "comprehension-review", d, Limits()))
    (result,) = run.results
    assert (result.status, result.attempts) == ("inconclusive", 2)
    assert result.error == (
        "the offline comprehension-review ran past [run] spawn_timeout (0.3 s) and was stopped"
    )


def test_an_edit_whose_offline_review_runs_past_spawn_timeout_ends_inconclusive_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = stamped_repo(tmp_path)
    (d.repo_root / "designloop.toml").write_text("[run]\nspawn_timeout = 0.3\n", encoding="utf-8")
    monkeypatch.setattr(comprehension, "review", endless)
    with stopped_after():
        code, out, _ = edit(
            d, tmp_path, "content-edit", "--old", "never less than one", "--new", "at least one second"
        )
    assert code == 5 and out["outcome"] == "INCONCLUSIVE"
    entry = entry_text(d, out["review_log_entry"])
    assert "comprehension-review was INCONCLUSIVE twice" in entry
    assert "ran past [run] spawn_timeout (0.3 s)" in entry
