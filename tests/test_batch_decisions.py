"""What a batch decides for each directory, and when: again once it holds the lock (two batches
that waited never run the same inputs twice), anew when the unfinished run cannot be resumed
(its checkpoint is gone), with the lock naming the run that really works; whatever goes wrong
taking one directory's lock is that directory's row; batch-wide bad flags and a --sarif that
cannot be written are bad input before anything runs or is written."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from batchkit import HeldLock, batch_repo, cli_json, open_gate, rows, run_batch
from conftest import run_cli

from pipeline.cli.batch_sarif import batch_findings
from pipeline.errors import ExitCode
from pipeline.fleet.rows import Batch, Row
from pipeline.formats.contracts import ReviewOutput
from pipeline.formats.review_log import parse_entries
from pipeline.formats.spawn_params import SpawnParams
from pipeline.graph.deps import RunDeps
from pipeline.offline.driver import engine_model
from pipeline.offline.observe import Observations
from pipeline.runs.events import RoundStarted
from pipeline.runs.lock import Holder, RunLock
from pipeline.runs.store import LocalStore
from pipeline.runs.views import read_view
from pipeline.settings import CHECKPOINTS


def entries(repo: Path, name: str) -> list[str]:
    log = repo / "docs" / "adr" / name / "_workflow" / "design-mutations.md"
    return [str(e.run_id) for e in parse_entries(log)]


def resolve_gate(directory: Path) -> None:
    log = directory / "_workflow" / "research-log.md"
    log.write_text(log.read_text().replace("- [ ] blocker: the refill", "- [x] blocker: the refill"))


@pytest.mark.slow
def test_two_batches_that_waited_for_a_directory_run_its_inputs_once(tmp_path: Path) -> None:
    repo = batch_repo(tmp_path, ["a"])
    held = HeldLock(repo / "docs" / "adr" / "a")
    waiting = {name: threading.Event() for name in ("first", "second")}
    out: dict[str, Any] = {}

    def progress(name: str) -> Callable[[Any, Any], None]:
        def say(row: Any, event: Any) -> None:
            if row.message and row.message.startswith("waiting for"):
                waiting[name].set()

        return say

    threads = [
        threading.Thread(
            target=lambda n=n: out.setdefault(n, run_batch(repo, ["a"], wait=True, progress=progress(n)))
        )
        for n in waiting
    ]
    for thread in threads:
        thread.start()
    try:
        assert all(event.wait(120) for event in waiting.values())  # both decided, both wait
    finally:
        held.release()
    for thread in threads:
        thread.join(300)
    actions = sorted(out[n].rows[0].action for n in waiting)
    assert actions == ["new", "skipped"]  # the second saw the first's PASS once it held the lock
    assert len(entries(repo, "a")) == 1


def test_a_run_whose_checkpoint_is_gone_is_started_anew_with_the_lock_naming_the_new_run(
    tmp_path: Path,
) -> None:
    repo = batch_repo(tmp_path, ["a"])
    directory = repo / "docs" / "adr" / "a"
    open_gate(directory)
    first = run_batch(repo, ["a"])
    old = first.rows[0].run_id
    assert first.rows[0].outcome == "PAUSED"
    for path in (repo / "runs").glob(CHECKPOINTS + "*"):
        path.unlink()  # cleaned up, or a cache restored without it
    resolve_gate(directory)
    entered, release = threading.Event(), threading.Event()
    seen: list[str] = []

    def held(params: SpawnParams, obs: Observations) -> ReviewOutput:
        entered.set()
        release.wait(120)
        return ReviewOutput(verdict="PASS")

    def slow(deps: RunDeps) -> None:
        deps.runtime.model_overrides["comprehension-review"] = engine_model("comprehension-review", held)

    out: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: out.setdefault("b", run_batch(repo, ["a"], configure=slow)))
    worker.start()
    try:
        assert entered.wait(120)
        new = next(
            p for p in (repo / "runs").iterdir() if p.name not in (old,) and (p / "run.json").is_file()
        )
        seen.append(read_view(new).state)  # the new run, while it works
    finally:
        release.set()
        worker.join(300)
    row = out["b"].rows[0]
    assert (row.action, row.outcome, row.exit_code) == ("new", "PASS", 0)
    assert row.message and f"run {old} could not be resumed" in row.message and "started anew" in row.message
    assert seen == ["running"]
    assert entries(repo, "a") == [row.run_id]
    again = run_batch(repo, ["a"])  # the directory is not stuck: next time it is unchanged
    assert rows(again)["a"] == ("skipped", "PASS", 0)


def test_a_run_that_cannot_be_resumed_is_replaced_and_status_shows_the_new_one_running(
    tmp_path: Path,
) -> None:
    repo = batch_repo(tmp_path, ["a"])
    directory = repo / "docs" / "adr" / "a"
    open_gate(directory)
    old = run_batch(repo, ["a"]).rows[0].run_id
    assert old is not None
    record = repo / "runs" / old / "run.json"  # its recorded model no longer exists
    record.write_text(record.read_text().replace('"model": null', '"model": "bogus:x"'))
    resolve_gate(directory)
    states: list[str] = []

    def progress(row: Any, event: Any) -> None:
        if isinstance(event, RoundStarted) and row.run_id and row.run_id != old:
            states.append(read_view(repo / "runs" / row.run_id).state)

    batch = run_batch(repo, ["a"], progress=progress)
    assert rows(batch)["a"] == ("new", "PASS", 0)
    assert states and set(states) == {"running"}


class FailingLocks(LocalStore):
    """The local store, but taking directory ``b``'s lock fails (a store connection refused)."""

    def lock(self, directory: Path, rel: str) -> RunLock:
        real = super().lock(directory, rel)
        if directory.name != "b":
            return real

        class Broken:
            def acquire(self, holder: Holder, wait: bool, on_wait: Any) -> None:
                raise OSError(24, "Too many open files")

            def release(self) -> None:
                real.release()

            def holder(self) -> Holder | None:
                return None

            def check(self) -> None:
                real.check()

            def relabel(self, holder: Holder) -> None:
                real.relabel(holder)

        return Broken()


def test_a_failure_taking_one_directorys_lock_is_that_directorys_row(tmp_path: Path) -> None:
    repo = batch_repo(tmp_path, ["a", "b"])
    batch = run_batch(repo, ["a", "b"], store=FailingLocks(repo / "runs"), jobs=2)
    got = {Path(r.directory).name: r for r in batch.rows}
    assert (got["a"].action, got["a"].outcome) == ("new", "PASS")
    assert got["b"].exit_code == ExitCode.INTERNAL and "Too many open files" in (got["b"].message or "")
    assert batch.exit_code == ExitCode.INTERNAL
    assert len(list((repo / "runs" / "batches").glob("*.json"))) == 1  # the batch is on record


@pytest.mark.slow
def test_batch_wide_bad_flags_write_nothing_and_name_the_flag(tmp_path: Path) -> None:
    repo = batch_repo(tmp_path, ["a", "b"])
    batch = ["batch", "create", "docs/adr/*", "--no-warmup"]
    for args, named in (
        (["--model", "bogus:x"], "bogus"),
        (["--role-model", "nobody=offline"], "nobody"),
        (["--base-url", "ftp://x"], "--base-url"),
        (["--budget", "0"], "--budget 0"),
        (["--batch-budget", "0"], "--batch-budget 0"),
        (["--batch-max-cost", "-1"], "--batch-max-cost"),
        (["--sarif", str(repo)], "--sarif names a directory"),
        (["--sarif", str(tmp_path / "missing" / "x.sarif")], "does not exist"),
    ):
        result = run_cli([*batch, *args, "--json"], repo)
        assert result.code == ExitCode.BAD_INPUT, (args, result.err)
        assert named in result.err, (args, result.err)
        assert not (repo / "runs").exists(), args  # no checkpoint store, no batch record
        assert not (tmp_path / "missing").exists()
    assert entries(repo, "a") == [] and entries(repo, "b") == []


@pytest.mark.slow
def test_a_batch_of_bad_directories_only_leaves_nothing_behind(tmp_path: Path) -> None:
    repo = batch_repo(tmp_path, ["a"])
    (repo / "docs" / "adr" / "a" / "_workflow" / "research-log.md").write_bytes(b"\xff")
    code, out = cli_json(["batch", "create", "docs/adr/*", "--no-warmup"], repo)
    assert code == ExitCode.BAD_INPUT and out["directories"][0]["action"] == "bad"
    assert not (repo / "runs").exists()


def test_an_inconclusive_directory_tells_to_run_the_batch_again() -> None:
    batch = Batch("b1", "phase1-creation", [Row("docs/adr/a", "new", "r1", "INCONCLUSIVE", 5)])
    (finding,) = batch_findings(batch)
    assert finding.rule == "designloop-inconclusive"
    assert finding.suggested_fix and "run the batch again" in finding.suggested_fix
    assert "resume" not in finding.suggested_fix


def test_a_directory_a_single_create_finished_is_skipped_until_its_inputs_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = batch_repo(tmp_path, ["a"])
    monkeypatch.chdir(repo)
    created = run_cli(["create", "docs/adr/a", "--no-warmup"])
    assert created.code == ExitCode.OK, created.err
    first = run_batch(repo, ["a"])  # the single run's inputs and outputs are on record
    assert rows(first)["a"] == ("skipped", "PASS", 0)
    assert entries(repo, "a") == [first.rows[0].run_id]  # no second review-log entry
    code = next(p for p in (repo / "code").rglob("*") if p.is_file())
    code.write_text(code.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    second = run_batch(repo, ["a"])
    assert rows(second)["a"] == ("new", "PASS", 0)
