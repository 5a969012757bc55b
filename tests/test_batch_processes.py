"""An offline batch runs directories in worker processes besides its own (real parallelism for
rule work that holds the interpreter's lock), each reporting its steps back as a run in the
batch's own process does; a batch whose roles wait on models keeps its runs in one process."""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
from pathlib import Path

import pytest
from batchkit import all_events, batch_repo

from pipeline.agents.session import SessionOptions, Sessions
from pipeline.fleet.batch import BatchOptions, BatchRunner, Row, worker_processes
from pipeline.formats.kinds import PHASE1
from pipeline.runs.event_fields import BaseEvent
from pipeline.runs.events import Finished, Spawned
from pipeline.runs.store import LocalStore


def in_workers(repo: Path, names: list[str], workers: int) -> tuple[list[Row], list[tuple[str, str]]]:
    """The batch over ``names`` with ``workers`` processes besides this one: its rows, and every
    (directory, step) its progress callback was told, in this process."""
    runs = repo / "runs"
    told: list[tuple[str, str]] = []
    lock = threading.Lock()

    def progress(row: Row, event: BaseEvent | None) -> None:
        with lock:
            told.append((Path(row.directory).name, type(event).__name__ if event else row.action))

    options = BatchOptions(PHASE1, SessionOptions(runs_dir=runs), jobs=workers + 1, warmup=False)
    runner = BatchRunner(options, LocalStore(runs), progress=progress, workers=workers)
    batch = asyncio.run(runner.run([repo / "docs" / "adr" / n for n in names]))
    return batch.rows, told


@pytest.mark.slow
def test_an_offline_batch_runs_in_worker_processes_and_reports_every_step(tmp_path: Path) -> None:
    names = ["a", "b", "c"]
    repo = batch_repo(tmp_path, names)
    bad = repo / "docs" / "adr" / "c" / "_workflow" / "research-log.md"
    bad.write_bytes(b"# Log\n\xff not UTF-8\n")
    before = {p: p.read_bytes() for p in bad.parent.parent.rglob("*") if p.is_file()}
    batch_rows, told = in_workers(repo, names, workers=1)
    got = {Path(r.directory).name: (r.action, r.outcome, r.exit_code) for r in batch_rows}
    assert got == {"a": ("new", "PASS", 0), "b": ("new", "PASS", 0), "c": ("bad", None, 2)}
    (c,) = [r for r in batch_rows if r.directory.endswith("/c")]
    assert c.message and "research-log.md" in c.message and "what to do" in c.message
    # One run was written by this process, the other by a worker process.
    writers = {e.pid for e in all_events(repo / "runs")}
    assert len(writers) == 2 and os.getpid() in writers
    # Their steps reached this process's progress callback, each directory's own.
    for name in ("a", "b"):
        steps = [step for where, step in told if where == name]
        assert "new" in steps and Spawned.__name__ in steps and Finished.__name__ in steps
        (row,) = [r for r in batch_rows if r.directory.endswith(f"/{name}")]
        assert row.spawns == steps.count(Spawned.__name__) and row.run_id
        log = repo / "docs" / "adr" / name / "_workflow" / "design-mutations.md"
        assert log.read_text(encoding="utf-8").count("## Mutation") == 1
    assert ("c", "bad") in told
    assert {p: p.read_bytes() for p in bad.parent.parent.rglob("*") if p.is_file()} == before


@pytest.mark.slow
def test_an_identical_batch_with_worker_processes_skips_every_directory(tmp_path: Path) -> None:
    names = ["a", "b"]
    repo = batch_repo(tmp_path, names)
    in_workers(repo, names, workers=1)
    again, _ = in_workers(repo, names, workers=1)
    assert {Path(r.directory).name: r.action for r in again} == {"a": "skipped", "b": "skipped"}
    assert sum(1 for p in (repo / "runs").iterdir() if (p / "events.jsonl").is_file()) == 2  # no new run


def test_processes_only_when_every_role_runs_offline_and_nothing_is_pooled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = batch_repo(tmp_path, ["a"])
    store = LocalStore(repo / "runs")
    offline = SessionOptions(runs_dir=repo / "runs")
    setup = Sessions().set_up(repo, offline)
    cores = len(os.sched_getaffinity(0))
    assert worker_processes(BatchOptions(PHASE1, offline, jobs=2), setup, store, 10) == min(1, cores - 1)
    assert worker_processes(BatchOptions(PHASE1, offline, jobs=8), setup, store, 3) == min(2, cores - 1)
    assert worker_processes(BatchOptions(PHASE1, offline, jobs=1), setup, store, 10) == 0
    assert worker_processes(BatchOptions(PHASE1, offline, jobs=4), setup, store, 1) == 0
    pooled = BatchOptions(PHASE1, offline, jobs=2, batch_tokens=1000)
    assert worker_processes(pooled, setup, store, 10) == 0
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    modelled = SessionOptions(model="openai:gpt-4.1-mini", runs_dir=repo / "runs")
    with_model = Sessions().set_up(repo, modelled)
    assert worker_processes(BatchOptions(PHASE1, modelled, jobs=2), with_model, store, 10) == 0


@pytest.mark.slow
def test_the_command_with_worker_processes_leaves_nothing_behind_and_says_nothing_more(
    tmp_path: Path,
) -> None:
    """`designloop batch create --jobs 2` as a process: every run passes, and what it says (in a
    pipe, the summary on stderr) is the summary alone: nothing is reported on the way out (no
    semaphore or process left over for the interpreter's trackers to name)."""
    repo = batch_repo(tmp_path, ["a", "b", "c"])
    done = subprocess.run(
        ["designloop", "batch", "create", "docs/adr/*", "--jobs", "2", "-q"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    said = done.stderr.splitlines()
    assert (
        said[0].startswith("3 directories: 3 PASS") and said[1].startswith("reviewed by") and len(said) == 2
    )
    assert len({e.pid for e in all_events(repo / "runs")}) == 2
