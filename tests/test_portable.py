"""Portable run records (paths relative to the repository root: a run resumes from a copy of
the checkout at another path) and checkpoint retention (a finished run keeps only its latest
checkpoint; the store does not grow with every batch)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from agentkit import make_repo
from batchkit import batch_repo, run_batch
from conftest import run_cli
from faultkit import KILLED, launch
from graphkit import go, start

from pipeline.errors import ExitCode
from pipeline.formats.review_log import parse_entries
from pipeline.runs.event_log import read_events
from pipeline.runs.events import Spawned, Started
from pipeline.settings import CHECKPOINTS


def checkpoints(runs: Path) -> dict[str, int]:
    with sqlite3.connect(runs / CHECKPOINTS) as conn:
        return dict(conn.execute("SELECT thread_id, COUNT(*) FROM checkpoints GROUP BY thread_id").fetchall())


@pytest.mark.slow
def test_a_run_resumes_from_a_copied_checkout_at_another_path(tmp_path: Path) -> None:
    d = make_repo(tmp_path / "one")
    repo = d.repo_root
    killed = subprocess.run(
        launch(["create", "docs/adr/0001", "--no-warmup", "--json"], "step3_mechanical_checks", "after"),
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert killed.returncode == KILLED, killed.stderr
    (run_dir,) = [p for p in (repo / "runs").iterdir() if (p / "run.json").is_file()]
    record = json.loads((run_dir / "run.json").read_text())
    assert record["directory"] == "docs/adr/0001" and record["code_root"] == "code"
    assert record["options"]["runs_dir"] == "runs" and record["draft"] == "docs/adr/0001/_workflow/design.md"
    start_event = json.loads((run_dir / "events.jsonl").read_text().splitlines()[0])
    assert start_event["directory"] == "docs/adr/0001"

    moved = tmp_path / "elsewhere" / "checkout"
    shutil.copytree(repo, moved)
    shutil.rmtree(tmp_path / "one")  # nothing may still point at the first checkout
    resumed = run_cli(["resume", run_dir.name, "--json"], moved)
    assert resumed.code == ExitCode.OK, resumed.err
    out = json.loads(resumed.out)
    assert out["outcome"] == "PASS" and out["draft"] == "docs/adr/0001/_workflow/design.md"
    entries = parse_entries(moved / "docs" / "adr" / "0001" / "_workflow" / "design-mutations.md")
    assert len(entries) == 1
    # The resumed run did not start over: the author's spawn was not repeated.
    events = read_events(moved / "runs" / run_dir.name)
    assert sum(isinstance(e, Spawned) and e.role == "design-author" for e in events) == 1
    assert sum(isinstance(e, Started) and e.type == "resume" for e in events) == 1


def test_a_record_from_another_runs_directory_is_found_by_its_recorded_repository(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    run_dir = start(d, tmp_path)  # runs directory outside the repository: recorded absolute
    record = json.loads((run_dir / "run.json").read_text())
    assert record["directory"] == "docs/adr/0001" and Path(record["options"]["runs_dir"]).is_absolute()
    assert go(run_dir).state.outcome.verdict == "PASS"


def test_a_finished_run_keeps_only_its_latest_checkpoint(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    run_dir = start(d, tmp_path)
    runs = tmp_path / "runs"
    result = go(run_dir)
    assert result.state.outcome.verdict == "PASS"
    assert checkpoints(runs) == {run_dir.name: 1}
    # What status and resume need is still there: a resume of the finished run is a no-op.
    again = go(run_dir, resume=True)
    assert again.exit_code == ExitCode.OK and again.state.outcome.verdict == "PASS"
    assert len(parse_entries(d.mutations)) == 1


def test_a_paused_run_keeps_its_history_and_batches_do_not_grow_the_store(tmp_path: Path) -> None:
    repo = batch_repo(tmp_path, ["a", "b"])
    log = repo / "docs" / "adr" / "b" / "_workflow" / "research-log.md"
    log.write_text(
        log.read_text() + "\n### 2026-12-01 — NEEDS REVISION\n- [ ] blocker: open.\n", encoding="utf-8"
    )
    runs = repo / "runs"
    first = run_batch(repo, ["a", "b"])
    paused = next(r.run_id for r in first.rows if r.directory.endswith("b"))
    passed = next(r.run_id for r in first.rows if r.directory.endswith("a"))
    counts = checkpoints(runs)
    assert passed is not None and paused is not None
    assert counts[passed] == 1 and counts[paused] > 1  # a paused run may still resume
    for n in range(3):  # three more batches, each with a changed input: three more runs of a
        research = repo / "docs" / "adr" / "a" / "_workflow" / "research-log.md"
        research.write_text(research.read_text() + f"\n<!-- change {n} -->\n", encoding="utf-8")
        run_batch(repo, ["a"])
    counts = checkpoints(runs)
    a_runs = [p.name for p in runs.iterdir() if (p / "run.json").is_file() and p.name != paused]
    assert len(a_runs) == 4 and all(counts[r] == 1 for r in a_runs)
    with sqlite3.connect(runs / CHECKPOINTS) as conn:
        orphans = conn.execute(
            "SELECT COUNT(*) FROM writes w WHERE NOT EXISTS (SELECT 1 FROM checkpoints c WHERE "
            "c.thread_id = w.thread_id AND c.checkpoint_ns = w.checkpoint_ns AND c.checkpoint_id = w.checkpoint_id)"
        ).fetchone()[0]
    assert orphans == 0
