"""Helpers for batch tests: a repository with several design directories, a lock held by
another process, the events of every run."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentkit import make_repo
from conftest import run_cli

from pipeline.agents.session import SessionOptions
from pipeline.fleet.batch import Batch, BatchOptions, BatchRunner
from pipeline.formats.kinds import PHASE1
from pipeline.graph.deps import RunDeps
from pipeline.runs.event_log import read_events
from pipeline.runs.events import Event
from pipeline.runs.store import LocalStore, RunStore

OPEN_GATE = "\n### 2026-12-01 — NEEDS REVISION\n- [ ] blocker: the refill rate per route is not decided.\n"


def batch_repo(tmp_path: Path, names: list[str]) -> Path:
    """A repository with one copy of the example design directory per name under docs/adr/."""
    first = make_repo(tmp_path)
    adr = first.root.parent
    for name in names:
        shutil.copytree(first.root, adr / name)
    shutil.rmtree(first.root)
    return first.repo_root


def open_gate(directory: Path) -> None:
    log = directory / "_workflow" / "research-log.md"
    log.write_text(log.read_text(encoding="utf-8") + OPEN_GATE, encoding="utf-8")


def run_batch(
    repo: Path,
    names: list[str],
    store: RunStore | None = None,
    configure: Callable[[RunDeps], None] | None = None,
    progress: Callable[[Any, Any], None] | None = None,
    **options: Any,
) -> Batch:
    runs = repo / "runs"
    opts = BatchOptions(PHASE1, SessionOptions(runs_dir=runs), warmup=False, **options)
    runner = BatchRunner(opts, store or LocalStore(runs), progress=progress, configure=configure)
    return asyncio.run(runner.run([repo / "docs" / "adr" / n for n in names]))


def all_events(runs: Path) -> list[Event]:
    return [e for d in sorted(runs.iterdir()) if (d / "events.jsonl").is_file() for e in read_events(d)]


def rows(batch: Batch) -> dict[str, tuple[str, str | None, int | None]]:
    return {Path(r.directory).name: (r.action, r.outcome, r.exit_code) for r in batch.rows}


HOLD = """
import sys
from pathlib import Path
from pipeline.runs.lock import FileRunLock, holder_for
lock = FileRunLock(Path(sys.argv[1]))
lock.acquire(holder_for("20260101-000000-p1-holder"))
print("held", flush=True)
sys.stdin.read()
lock.release()
"""


class HeldLock:
    """Another process holding a design directory's lock until ``release``."""

    def __init__(self, directory: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLD, str(directory)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "held"

    def release(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        assert self.proc.wait(timeout=60) == 0


def cli_json(args: list[str], cwd: Path) -> tuple[int, dict[str, Any]]:
    """``designloop ARGS --json`` in ``cwd`` (in this process): its exit code and its object."""
    done = run_cli([*args, "--json"], cwd)
    assert done.out, done.err
    return done.code, json.loads(done.out)
