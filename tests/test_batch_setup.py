"""A batch sets up once, not once per directory: the settings, roles and prompts are read and
the repository is walked for runs directories once per repository, shared by every run; and the
first run starts while the rest are still being planned."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from batchkit import batch_repo, rows, run_batch

import pipeline.agents.session
import pipeline.fleet.batch
import pipeline.runs.fingerprint
import pipeline.runs.preflight
from pipeline.fleet.rows import Row, plan_row

NAMES = ["a", "b", "c", "d"]


def counting(monkeypatch: pytest.MonkeyPatch, module: object, name: str) -> list[Path]:
    """Every call of ``module.name``, by its first argument."""
    calls: list[Path] = []
    real: Callable[..., Any] = getattr(module, name)

    def counted(first: Path, *args: Any, **kwargs: Any) -> Any:
        calls.append(first)
        return real(first, *args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_a_batch_reads_the_roles_and_walks_the_repository_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = batch_repo(tmp_path, NAMES)
    roles = counting(monkeypatch, pipeline.agents.session, "load_roles")
    walks = counting(monkeypatch, pipeline.agents.session, "store_dirs")
    walks_again = counting(monkeypatch, pipeline.runs.fingerprint, "store_dirs")
    batch = run_batch(repo, NAMES, jobs=2)
    assert {name: got[:2] for name, got in rows(batch).items()} == {n: ("new", "PASS") for n in NAMES}
    assert roles == [repo] and walks == [repo] and walks_again == []
    # An identical batch plans every directory again, over one set-up of its own.
    roles.clear()
    walks.clear()
    again = run_batch(repo, NAMES, jobs=2)
    assert {r.action for r in again.rows} == {"skipped"}
    assert roles == [repo] and walks == [repo] and walks_again == []


def test_the_first_run_starts_while_the_rest_are_still_being_planned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last directory is planned only once the first one's run has started (the planner
    waits for it): a batch that planned every directory before starting any run never gets
    there, and its last row says so."""
    repo = batch_repo(tmp_path, NAMES)
    first_started = threading.Event()

    def waits(row: Row, directory: Path, *args: Any) -> Any:
        if directory.name == NAMES[-1] and not first_started.wait(timeout=120):
            raise AssertionError("planned every directory before any run started")
        return plan_row(row, directory, *args)

    def progress(row: Row, event: object) -> None:
        if row.directory.endswith(f"/{NAMES[0]}") and row.action == "new":
            first_started.set()

    monkeypatch.setattr(pipeline.fleet.batch, "plan_row", waits)
    batch = run_batch(repo, NAMES, jobs=1, progress=progress)
    assert {name: got[:2] for name, got in rows(batch).items()} == {n: ("new", "PASS") for n in NAMES}


def test_the_runs_directory_stores_are_checked_once_before_any_run_holds_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading a store's header opens and closes its file, which drops the SQLite locks this
    process holds on it: a batch checks the stores once, before its first run opens them, and
    never again while its runs (and its worker processes' runs) write them."""
    repo = batch_repo(tmp_path, NAMES)
    checked = counting(monkeypatch, pipeline.runs.preflight, "check_database")
    batch = run_batch(repo, NAMES, jobs=2)
    assert {r.outcome for r in batch.rows} == {"PASS"}
    runs = repo / "runs"
    assert sorted(checked) == sorted(
        [runs / "checkpoints.sqlite", runs / "cache" / "cache.db", runs / "revisions.sqlite"]
    )
