"""LangGraph's development server (``langgraph dev``) refuses any blocking call made on the
event loop a run runs on: it activates BlockBuster for its runs. designloop's runs keep their
file and SQLite work off the loop, so the Studio application runs there as it is, without
``--allow-blocking``. BlockBuster is configured here as the development server configures it
(langgraph_runtime_inmem's queue: the same allowances and the same functions left unchecked),
so a blocking call that server would refuse fails these tests."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from blockbuster import BlockBuster
from conftest import EXAMPLE_OUTPUTS
from editkit import stamped_repo
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from pipeline.agents.cache import LazyCache
from pipeline.agents.review import review_once
from pipeline.agents.session import SessionOptions, open_session
from pipeline.formats.design_dir import DesignDir, open_design_dir
from pipeline.formats.edit_request import EditRequest
from pipeline.formats.review_log import parse_entries
from pipeline.graph.deps import build_deps
from pipeline.graph.edit.build import build_edit_graph
from pipeline.graph.edit.state import EditState
from pipeline.graph.studio import build_studio_graph
from pipeline.runs.event_log import events_of
from pipeline.runs.events import Finished, Spawned
from pipeline.runs.setup import plan_edit, start_run

ROOT = Path(__file__).resolve().parent.parent
DIRECTORY = "docs/adr/0001-request-rate-limiter"


@contextmanager
def blockbuster_as_langgraph_dev() -> Iterator[BlockBuster]:
    """BlockBuster as langgraph_runtime_inmem's ``_enable_blockbuster`` sets it up for runs."""
    bb = BlockBuster(excluded_modules=[])
    bb.functions["os.path.abspath"].can_block_in("inspect.py", "getmodule")
    for fn in ("os.access", "os.getcwd", "os.unlink", "os.write"):
        bb.functions[fn].can_block_in("langgraph_api/api/profile.py", "_profile_with_pyspy")
    for module, func in (
        ("memory/__init__.py", "sync"),
        ("memory/__init__.py", "load"),
        ("memory/__init__.py", "dump"),
        ("pydantic/main.py", "__init__"),
    ):
        bb.functions["os.remove"].can_block_in(module, func)
        bb.functions["os.rename"].can_block_in(module, func)
    for module, func in (
        ("uvicorn/lifespan/on.py", "startup"),
        ("uvicorn/lifespan/on.py", "shutdown"),
        ("ansitowin32.py", "write_plain_text"),
        ("logging/__init__.py", "flush"),
        ("logging/__init__.py", "emit"),
    ):
        bb.functions["io.TextIOWrapper.write"].can_block_in(module, func)
        bb.functions["io.BufferedWriter.write"].can_block_in(module, func)
    bb.functions["builtins.input"].can_block_in("bdb.py", "trace_dispatch")
    bb.functions["builtins.input"].can_block_in("pdb.py", "user_line")
    unchecked = [
        "os.stat",
        "os.listdir",
        "os.remove",
        "io.BufferedReader.read",
        "io.BufferedWriter.write",
        "io.TextIOWrapper.read",
        "io.TextIOWrapper.write",
        "threading.Lock.acquire",
        *(name for name in bb.functions if name.startswith("os.path.")),
    ]
    for name in unchecked:
        function = bb.functions.pop(name, None)
        if function is not None:
            function.deactivate()
    bb.activate()
    try:
        yield bb
    finally:
        bb.deactivate()


def test_the_detector_refuses_what_the_event_log_did_on_the_loop(tmp_path: Path) -> None:
    """The detector is live in these tests: a write of the kind the event log makes, made on
    the loop, is refused; the same write made in a thread is not."""
    from blockbuster import BlockingError

    from pipeline.runs.event_log import EventLog
    from pipeline.runs.events import Warmed

    log = EventLog(tmp_path / "run")

    async def on_the_loop() -> None:
        log.emit(Warmed(round=1))

    async def in_a_thread() -> None:
        await asyncio.to_thread(log.emit, Warmed(round=2))

    with blockbuster_as_langgraph_dev():
        with pytest.raises(BlockingError):
            asyncio.run(on_the_loop())
        asyncio.run(in_a_thread())
    assert [e.round for e in events_of(log.run_dir, type(Warmed(round=1)))] == [2]


def example_repository(tmp_path: Path) -> Path:
    """The bundled example as a repository of its own (its code root: ratelimit/)."""
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "examples", repo, ignore=EXAMPLE_OUTPUTS)
    (repo / ".git").mkdir()
    return repo


def test_studio_runs_of_the_example_make_no_blocking_call_on_the_loop(tmp_path: Path) -> None:
    """A run of the example to its end; then, once an open gate entry is added to the research
    log, a second run on the same directory that pauses at the S3 gate and resumes, partly
    answered from the model-call cache the first run filled."""
    repo = example_repository(tmp_path)
    directory = repo / DIRECTORY
    log = directory / "_workflow" / "research-log.md"
    app = build_studio_graph(InMemorySaver())
    context = {"directory": str(directory)}

    async def go(value: Any, thread: str) -> dict[str, Any]:
        return dict(await app.ainvoke(value, {"configurable": {"thread_id": thread}}, context=context))

    opened = (
        log.read_text()
        + "\n### 2026-11-25 — NEEDS REVISION\n- [ ] blocker: D2 ignores Redis cluster slots.\n"
    )
    with blockbuster_as_langgraph_dev():
        done = asyncio.run(go({"run_id": "studio-1", "kind": "phase1-creation"}, "t1"))
        log.write_text(opened)
        paused = asyncio.run(go({"run_id": "studio-2", "kind": "phase1-creation"}, "t2"))
        log.write_text(opened.replace("- [ ] blocker: D2", "- [x] blocker: D2"))
        resumed = asyncio.run(go(Command(resume={"resumed_at": "now"}), "t2"))
    assert "__interrupt__" not in done and done["outcome"]["verdict"] == "PASS"
    assert paused["__interrupt__"][0].value["gate"]["state"] == "open"
    assert resumed["outcome"]["verdict"] == "PASS"
    d = open_design_dir(directory)
    assert [entry.run_id for entry in parse_entries(d.mutations)] == ["studio-1", "studio-2"]
    first, second = repo / "runs" / "studio-t1", repo / "runs" / "studio-t2"
    assert [e.outcome for e in events_of(first, Finished)] == ["PASS"]
    assert [e.outcome for e in events_of(second, Finished)] == ["PASS"]
    # Every role ran (on the offline engine) and recorded its spawn; the rule engine is no
    # model: it makes no calls and is never answered from the request cache.
    spawns = events_of(first, Spawned)
    roles = {e.role for e in spawns}
    assert {"design-author", "readability-auditor", "absorption-check", "comprehension-review"} <= roles
    assert all(e.calls == 0 and e.cache_hits == 0 for e in [*spawns, *events_of(second, Spawned)])


def edit_under_the_detector(d: DesignDir, runs: Path, request: EditRequest) -> EditState:
    """An interactive edit through the edit graph, its nodes run with the detector on (the run
    is planned, and its services built, before the loop starts, as a server would)."""
    run = start_run(plan_edit(request, d.root, SessionOptions(runs_dir=runs)))
    session, edit = run.session, run.record.edit
    assert edit is not None
    deps = build_deps(session.runtime, run.design, session.limits, session.run, run.run_dir, warmup=True)
    start = EditState(
        run_id=run.run_id,
        kind=edit.kind,
        request=edit,
        budget=session.limits.iteration_budget,
        draft=run.record.draft,
    )
    app = build_edit_graph(InMemorySaver())
    config: Any = {"configurable": {"thread_id": run.run_id}, "recursion_limit": 400}
    with blockbuster_as_langgraph_dev():
        out = asyncio.run(app.ainvoke(start.model_dump(mode="json"), config, context=deps))
    return EditState.model_validate(out)


def test_the_edit_graphs_nodes_make_no_blocking_call_on_the_loop(tmp_path: Path) -> None:
    """An instruction (the inline editor at Step 1), an edit whose blocker the fix loop
    applies (Step 6), and a design-sync (Step 1.5 and both cold reads)."""
    d = stamped_repo(tmp_path)
    runs = tmp_path / "runs"
    instruction = EditRequest(
        kind="content-edit",
        section="Buckets per tenant and route",
        instruction='replace "never less than one" with "at least one second"',
    )
    state = edit_under_the_detector(d, runs, instruction)
    assert state.outcome is not None and state.outcome.verdict == "PASS"
    assert "at least one second" in d.design.read_text()
    fixed = EditRequest(kind="content-edit", old="at least one second.", new="at least one second (per D6).")
    state = edit_under_the_detector(d, runs, fixed)
    assert state.outcome is not None and state.outcome.verdict == "PASS" and state.round == 2
    assert "(per D6)" not in d.design.read_text() and [t.auto for t in state.fixes] == [1]
    edit_under_the_detector(d, runs, EditRequest(kind="length-trigger-crossing"))
    mechanics = EditRequest(
        kind="mechanics-edit", old="so idle tenants cost no memory", new="so an idle tenant costs no memory"
    )
    edit_under_the_detector(d, runs, mechanics)
    state = edit_under_the_detector(d, runs, EditRequest(kind="design-sync"))
    assert state.outcome is not None and state.outcome.verdict == "PASS"
    assert state.sync is not None and not state.sync.zero
    assert {r.role for r in state.reads} == {"comprehension-review", "readability-auditor"}
    assert "so an idle tenant costs no memory" in d.design.read_text()
    assert [e.kind for e in parse_entries(d.mutations)] == [
        "content-edit",
        "content-edit",
        "length-trigger-crossing",
        "mechanics-edit",
        "design-sync",
    ]


def test_a_one_off_review_makes_no_blocking_call_on_the_loop(tmp_path: Path) -> None:
    """``designloop review``: the adversarial review appends its gate entry, and a comprehension
    review run without keeping its params leaves the design directory as it was."""
    d = stamped_repo(tmp_path)
    session = open_session(d.repo_root, SessionOptions(runs_dir=tmp_path / "runs"))
    log = d.research_log.read_text()
    with blockbuster_as_langgraph_dev():
        adversarial = asyncio.run(review_once(session.runtime, "adversarial-review", d, session.limits))
        comprehension = asyncio.run(
            review_once(session.runtime, "comprehension-review", d, session.limits, keep_params=False)
        )
    assert adversarial.gate_entry is not None and d.research_log.read_text() != log
    assert [r.status for r in adversarial.results + comprehension.results] == ["ok", "ok"]
    assert not (d.reviews / "review").exists()


def test_the_cache_used_from_many_threads_closes_whole(tmp_path: Path) -> None:
    """Spawns use the model-call cache from threads of their own; closing it leaves no
    connection to its database open in any of them."""
    cache = LazyCache(tmp_path / "cache")

    def opened() -> list[str]:
        fds = Path("/proc/self/fd")
        return [target for fd in fds.iterdir() if (target := os.path.realpath(fd)).startswith(str(tmp_path))]

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(lambda i: cache.set(f"k{i}", b"v"), range(8)))
        assert list(pool.map(lambda i: cache.get(f"k{i}"), range(8))) == [b"v"] * 8
    assert opened()
    cache.close()
    assert opened() == []
    assert cache.get("k1") == b"v"  # it opens again on its next use
    cache.close()
