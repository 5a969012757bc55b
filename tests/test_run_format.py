"""A run written by an earlier designloop is refused clearly (exit 2), never a traceback."""

from __future__ import annotations

import asyncio
import json
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

from agentkit import make_repo
from conftest import run_cli
from graphkit import start
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

from pipeline.errors import ExitCode
from pipeline.runs.checkpoints import sqlite_checkpointer
from pipeline.runs.records import RUN_FORMAT


class OldState(TypedDict, total=False):
    """The shape of the run state before it was typed (format 1): plain dicts, no format."""

    run_id: str
    kind: str
    round: int
    author: dict[str, Any]
    usage: Annotated[list[dict[str, Any]], operator.add]


def _write_old_checkpoint(runs: Path, run_id: str) -> None:
    async def write() -> None:
        graph: StateGraph[Any, Any, Any, Any] = StateGraph(OldState)
        graph.add_node("step1_author", lambda s: {"author": {"round": 1, "draft_ok": True}})
        graph.add_node("step3_mechanical_checks", lambda s: {})
        graph.add_edge(START, "step1_author")
        graph.add_edge("step1_author", "step3_mechanical_checks")
        graph.add_edge("step3_mechanical_checks", END)
        async with sqlite_checkpointer(runs) as saver:
            app = graph.compile(checkpointer=saver, interrupt_before=["step3_mechanical_checks"])
            config: RunnableConfig = {"configurable": {"thread_id": run_id}}
            await app.ainvoke({"run_id": run_id, "kind": "phase1-creation", "round": 1}, config)

    asyncio.run(write())


def test_a_checkpoint_of_the_previous_format_is_refused(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    run_dir = start(d, tmp_path)
    _write_old_checkpoint(tmp_path / "runs", run_dir.name)
    before = {p: p.read_bytes() for p in d.root.rglob("*") if p.is_file()}
    result = run_cli(["resume", run_dir.name, "--runs-dir", str(tmp_path / "runs")])
    assert result.code == ExitCode.BAD_INPUT, result.err
    assert "predates the current run format" in result.err and "format 1" in result.err
    assert "what to do: start a new run" in result.err
    assert "Traceback" not in result.err
    assert {p: p.read_bytes() for p in d.root.rglob("*") if p.is_file()} == before


def test_a_run_record_of_the_previous_format_is_refused(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    run_dir = start(d, tmp_path)
    record = json.loads((run_dir / "run.json").read_text())
    assert record["format"] == RUN_FORMAT
    del record["format"]  # format-1 records had no format field
    (run_dir / "run.json").write_text(json.dumps(record))
    result = run_cli(["resume", run_dir.name, "--runs-dir", str(tmp_path / "runs")])
    assert result.code == ExitCode.BAD_INPUT
    assert f"this designloop reads format {RUN_FORMAT}" in result.err and "Traceback" not in result.err


def test_every_kind_snapshots_under_before_and_an_older_creation_run_is_still_read(tmp_path: Path) -> None:
    from pipeline.runs.snapshot import SNAPSHOT, snapshot_reader

    d = make_repo(tmp_path)
    d.mechanics.write_text("# companion\n")
    run_dir = start(d, tmp_path)
    assert (run_dir / SNAPSHOT / "_workflow" / "design.md").read_bytes() == d.design.read_bytes()
    assert (run_dir / SNAPSHOT / "_workflow" / "design-mechanics.md").read_text() == "# companion\n"
    assert not (run_dir / "before.md").exists()
    # A run started by an earlier designloop kept before.md and before-companion.md at the top.
    old = tmp_path / "old-run"
    old.mkdir()
    (old / "before.md").write_text("old draft\n")
    (old / "before-companion.md").write_text("old companion\n")
    read = snapshot_reader(d, old)
    assert read(d.design) == b"old draft\n" and read(d.mechanics) == b"old companion\n"
    assert read(d.final) == b"old draft\n"  # a phase-4 run's draft was before.md as well
    assert snapshot_reader(d, run_dir)(d.final) is None  # absent when the run started
