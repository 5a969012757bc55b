"""Finishing is exactly once: a kill injected between a finish step's side effects and its
checkpoint (never raced against a clock) ends, after `resume`, with one review-log entry, the
stamp, the summary and one recorded outcome; status and resume never report an outcome that
was not recorded."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from agentkit import make_repo
from conftest import run_cli
from faultkit import FINISH_NODES, KILLED, launch
from graphkit import go, start

from pipeline.errors import ExitCode
from pipeline.formats.design_dir import DesignDir
from pipeline.formats.review_log import parse_entries
from pipeline.formats.stamp import has_stamp
from pipeline.runs.event_log import events_of
from pipeline.runs.events import Finished, RevisionRecorded
from pipeline.runs.revisions import SqliteRevisions


def _killed_run(tmp_path: Path, node: str, when: str) -> tuple[DesignDir, Path, str]:
    d = make_repo(tmp_path)
    d.design.unlink()
    runs = tmp_path / "runs"
    args = ["create", str(d.root), "--runs-dir", str(runs), "--no-warmup", "--json"]
    done = subprocess.run(
        launch(args, node, when), cwd=d.repo_root, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == KILLED, done.stderr
    run_id = next(p.name for p in runs.iterdir() if (p / "run.json").is_file())
    return d, runs, run_id


def _finished_once(d: DesignDir, run_dir: Path) -> None:
    entries = parse_entries(d.mutations)
    assert [(e.number, e.run_id) for e in entries] == [(1, run_dir.name)]
    assert has_stamp(d.design)
    assert "## Outcome\n\nPASS" in (run_dir / "summary.md").read_text()
    outcomes = events_of(run_dir, Finished)
    assert [(e.outcome, e.review_log_entry) for e in outcomes] == [("PASS", 1)]
    # One revision, recorded once, and the entry names that very one.
    stored = SqliteRevisions(run_dir.parent).revisions(d.rel(d.root))
    assert [(r.file, r.number, r.run_id) for r in stored] == [("design", 1, run_dir.name)]
    assert [(r.number, r.sha256) for r in entries[0].revisions] == [(1, stored[0].sha256)]
    assert [e.files["design"].number for e in events_of(run_dir, RevisionRecorded)] == [1]


@pytest.mark.slow
@pytest.mark.parametrize("when", ["before", "after"])
@pytest.mark.parametrize("node", FINISH_NODES)
def test_a_kill_in_the_finish_window_finishes_exactly_once_on_resume(
    tmp_path: Path, node: str, when: str
) -> None:
    d, runs, run_id = _killed_run(tmp_path, node, when)
    status = run_cli(["status", run_id, "--runs-dir", str(runs), "--json"])
    view = json.loads(status.out)
    if node == "step9_present":
        # Its outcome event, the finish's record, is its last write: the finish is complete.
        assert (view["state"], view["outcome"]) == ("finished", "PASS"), view
        _finished_once(d, runs / run_id)
    else:
        # Nothing is reported that was not recorded: the process is gone, the finish not on record.
        assert view["outcome"] is None and view["state"] == "interrupted", view
        assert f"designloop resume {run_id}" in view["message"]
    result = run_cli(["resume", run_id, "--runs-dir", str(runs), "--json"])
    assert result.code == ExitCode.OK, result.err
    out = json.loads(result.out)
    assert (out["outcome"], out["review_log_entry"]) == ("PASS", 1)
    _finished_once(d, runs / run_id)
    view = json.loads(run_cli(["status", run_id, "--runs-dir", str(runs), "--json"]).out)
    assert (view["state"], view["outcome"], view["review_log_entry"]) == ("finished", "PASS", 1)
    again = run_cli(["resume", run_id, "--runs-dir", str(runs), "--json"])
    assert again.code == ExitCode.OK and json.loads(again.out)["review_log_entry"] == 1
    _finished_once(d, runs / run_id)


def test_a_finish_missing_from_the_record_is_completed_on_resume(tmp_path: Path) -> None:
    """The graph ended but its outcome is not on record: resume runs the finish again, once."""
    d = make_repo(tmp_path)
    d.design.unlink()
    run_dir = start(d, tmp_path)
    assert go(run_dir).exit_code == ExitCode.OK
    events = run_dir / "events.jsonl"
    lines = events.read_text().splitlines(keepends=True)
    events.write_text("".join(line for line in lines if '"type": "outcome"' not in line))
    (run_dir / "summary.md").unlink()
    status = json.loads(run_cli(["status", run_dir.name, "--runs-dir", str(tmp_path / "runs"), "--json"]).out)
    assert status["outcome"] is None and status["state"] == "interrupted"
    result = go(run_dir, resume=True)
    assert result.exit_code == ExitCode.OK and result.state.review_entry == 1
    _finished_once(d, run_dir)


def test_a_state_without_the_appended_entry_finishes_again_from_the_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A state saved after Step 7 without the entry Step 9 presents (an earlier designloop kept
    none) is finished again from the outcome: the entry is found, never appended twice."""
    import asyncio

    from langchain_core.runnables import RunnableConfig

    from pipeline.graph import finish
    from pipeline.graph.runner import graph_for
    from pipeline.runs.checkpoints import sqlite_checkpointer

    d = make_repo(tmp_path)
    d.design.unlink()
    run_dir = start(d, tmp_path)
    presented = finish.present

    def stop(*args: object, **kwargs: object) -> object:
        raise RuntimeError("stopped before Step 9")

    monkeypatch.setattr(finish, "present", stop)
    with pytest.raises(RuntimeError, match="before Step 9"):
        go(run_dir)
    monkeypatch.setattr(finish, "present", presented)

    async def forget_entry() -> None:
        async with sqlite_checkpointer(tmp_path / "runs") as saver:
            graph = graph_for("phase1-creation", saver)
            config: RunnableConfig = {"configurable": {"thread_id": run_dir.name}}
            state = await graph.aget_state(config)
            assert state.values["entry"] and state.next == ("step9_present",)
            await graph.aupdate_state(config, {"entry": None}, as_node="step7_review_log")

    asyncio.run(forget_entry())
    done = go(run_dir, resume=True)
    assert done.exit_code == ExitCode.OK and done.state is not None and done.state.entry
    _finished_once(d, run_dir)
    summary = (run_dir / "summary.md").read_text()
    assert f"<!-- designloop-run: {run_dir.name} -->" in summary and summary.count("## Mutation 1 —") == 1
