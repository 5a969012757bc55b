"""A CI cache miss never re-runs an accepted, unchanged directory: in a fresh clone without the
run store, ``batch final`` (with or without ``--stale-only``) skips a directory whose accepted
revision is on disk and whose inputs are those it was written from, told from the committed
review log and approvals alone; and a run that leaves the accepted bytes records no new
candidate, so ``ready`` stays green."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agentkit import make_repo
from conftest import run_cli
from editkit import tree

from pipeline.formats.review_log import parse_entries


def cli(args: list[str], runs: Path) -> tuple[int, dict[str, Any], str]:
    done = run_cli([*args, "--runs-dir", str(runs), "--json"])
    return done.code, json.loads(done.out) if done.out.strip() else {}, done.err


@pytest.fixture
def accepted(tmp_path: Path) -> Any:
    d = make_repo(tmp_path)
    d.design.unlink()
    runs = tmp_path / "runs"
    assert cli(["create", str(d.root), "--approve-if-ready"], runs)[0] == 0
    code, out, err = cli(["final", str(d.root), "--approve-if-ready"], runs)
    assert code == 0 and out["approval"]["approved"], err
    return d


@pytest.mark.parametrize("stale_only", [False, True])
def test_a_fresh_clone_skips_the_accepted_unchanged_final(
    accepted: Any, tmp_path: Path, stale_only: bool
) -> None:
    d = accepted
    clone_runs = tmp_path / "evicted-cache"
    before, entries = tree(d.repo_root), len(parse_entries(d.mutations))
    code, out, err = cli(
        ["batch", "final", str(d.root), *(["--stale-only"] if stale_only else [])], clone_runs
    )
    row = out["directories"][0]
    assert (code, row["action"]) == (0, "skipped"), (row, err)
    assert "accepted design-final.md r1" in row["message"]
    assert tree(d.repo_root) == before and len(parse_entries(d.mutations)) == entries
    assert cli(["ready", str(d.root)], clone_runs)[0] == 0


def test_a_changed_input_is_run_again(accepted: Any, tmp_path: Path) -> None:
    d = accepted
    track = next((d.workflow / "plan").glob("track-*.md"))
    track.write_text(track.read_text() + "\n- Episode: one more thing was built.\n")
    _, out, _ = cli(["batch", "final", str(d.root)], tmp_path / "evicted-cache")
    assert out["directories"][0]["action"] == "new"


def test_a_run_leaving_the_accepted_bytes_records_no_new_candidate(accepted: Any, tmp_path: Path) -> None:
    d = accepted
    clone_runs = tmp_path / "evicted-cache"
    code, _, err = cli(["final", str(d.root), "--force"], clone_runs)
    assert code == 0, err
    status = cli(["status", str(d.root)], clone_runs)[1]
    final = next(f for f in status["files"] if f["file"] == "final")
    assert [r["number"] for r in final["revisions"]] == [1]
    assert cli(["ready", str(d.root)], clone_runs)[0] == 0
