"""designloop batch: a mix of outcomes where none stops the others, the aggregate exit code,
skipping what is unchanged since its last PASS, resuming what did not finish, the lock
across processes."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from batchkit import HeldLock, all_events, batch_repo, cli_json, open_gate, rows, run_batch
from conftest import run_cli
from graphkit import finding, returns, review

from pipeline.errors import ExitCode
from pipeline.graph.deps import RunDeps
from pipeline.offline import author
from pipeline.offline.driver import engine_model
from pipeline.runs.events import RoundStarted, Spawned
from pipeline.runs.lock import LOCK_NAME
from pipeline.runs.views import read_view


def blocks_in(name: str) -> Any:
    """The comprehension reviewer of directory ``name`` finds a blocker no round clears."""

    def configure(deps: RunDeps) -> None:
        if deps.design.root.name == name:
            blocker = finding(
                "cr-undefined-term", severity="blocker", section="Overview", quote="token bucket"
            )
            engine = returns(review(blocker))
            deps.runtime.model_overrides["comprehension-review"] = engine_model(
                "comprehension-review", engine
            )

    return configure


def spends_tokens(deps: RunDeps) -> None:
    """The author played by a model: the offline author behind a model's interface, whose
    requests are counted in tokens as a model's are (the rule engine itself spends none)."""
    deps.runtime.model_overrides["design-author"] = engine_model("design-author", author.run, review=False)


def spawn_count(runs: Path) -> int:
    return sum(isinstance(e, Spawned) for e in all_events(runs))


def test_a_mix_of_outcomes_none_stops_the_others_and_the_exit_is_the_most_urgent(tmp_path: Path) -> None:
    repo = batch_repo(tmp_path, ["pass", "fail", "paused", "bad"])
    adr = repo / "docs" / "adr"
    open_gate(adr / "paused")
    (adr / "bad" / "_workflow" / "research-log.md").write_bytes(b"# Log\n\xff\xfe not UTF-8\n")
    names = ["pass", "fail", "paused", "bad"]
    batch = run_batch(repo, names, configure=blocks_in("fail"), jobs=4)
    got = rows(batch)
    assert got["pass"] == ("new", "PASS", 0)
    assert got["fail"] == ("new", "BLOCKER REMAINS", 1)
    assert got["paused"] == ("new", "PAUSED", 3)
    assert got["bad"][0] == "bad" and got["bad"][2] == 2
    bad = next(r for r in batch.rows if r.directory.endswith("bad"))
    assert bad.message and "research-log.md" in bad.message and "what to do" in bad.message
    assert batch.exit_code == ExitCode.BAD_INPUT  # bad input outranks every outcome
    assert "(PASS)" in (adr / "pass" / "_workflow" / "design-mutations.md").read_text()
    assert "(BLOCKER REMAINS)" in (adr / "fail" / "_workflow" / "design-mutations.md").read_text()
    assert not (adr / "bad" / "_workflow" / "reviews").exists()  # nothing written for bad input

    # Without the bad directory: paused (3) outranks findings (1); the passing directory and the
    # failing one (finished on the same inputs) are skipped with their outcomes reported again,
    # the paused run is resumed (and pauses again).
    again = run_batch(repo, names[:3], configure=blocks_in("fail"), jobs=2)
    got = rows(again)
    assert got["pass"] == ("skipped", "PASS", 0)
    assert got["paused"] == ("resumed", "PAUSED", 3)
    assert got["fail"] == ("skipped", "BLOCKER REMAINS", 1)
    paused_run = next(r.run_id for r in batch.rows if r.directory.endswith("paused"))
    assert next(r.run_id for r in again.rows if r.directory.endswith("paused")) == paused_run
    assert again.exit_code == ExitCode.GATE_PAUSED
    totals = again.to_json()["totals"]
    assert totals["directories"] == 3 and totals["skipped"] == 2 and totals["resumed"] == 1


@pytest.mark.slow
def test_the_command_prints_one_object_per_directory_and_totals(tmp_path: Path) -> None:
    repo = batch_repo(tmp_path, ["a", "b"])
    (repo / "docs" / "adr" / "b" / "_workflow" / "research-log.md").write_bytes(b"\xff")
    code, out = cli_json(["batch", "create", "docs/adr/*", "--jobs", "2", "--no-warmup"], repo)
    assert code == ExitCode.BAD_INPUT
    by_dir = {d["directory"]: d for d in out["directories"]}
    assert by_dir["docs/adr/a"]["outcome"] == "PASS" and by_dir["docs/adr/a"]["spawns"] > 0
    # the rule engine asks no model: no tokens (a model's are counted by the budget tests)
    assert by_dir["docs/adr/a"]["tokens"] == 0 and by_dir["docs/adr/b"]["action"] == "bad"
    assert out["totals"]["directories"] == 2 and out["totals"]["exit_code"] == 2
    models = by_dir["docs/adr/a"]["models"]  # who played each role that spawned
    assert "design-author" in models and set(models.values()) == {"offline"}
    assert by_dir["docs/adr/b"]["models"] == {} and out["totals"]["models"] == models
    recorded = json.loads((repo / "runs" / "batches" / f"{out['batch_id']}.json").read_text())
    assert out.pop("schema_version") == 1 and recorded == out  # --json prints the batch's record


def test_the_summary_says_who_reviewed_and_nothing_when_no_run_spawned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = batch_repo(tmp_path, ["a"])
    monkeypatch.chdir(repo)
    first = run_cli(["batch", "create", "docs/adr/a", "--no-warmup"])
    assert first.code == ExitCode.OK, first.err
    assert "reviewed by the offline engine for every role (rule-based, no model)" in first.err
    # In a pipe stdout is pure TSV: the header on line 1, a row per directory, the summary on stderr.
    assert first.out.splitlines()[0].startswith("directory\taction\trun") and len(first.out.splitlines()) == 2
    again = run_cli(["batch", "create", "docs/adr/a", "--no-warmup"])  # skipped: nothing ran
    assert again.code == ExitCode.OK and "skipped" in again.out and "reviewed by" not in again.err


def test_unchanged_inputs_are_skipped_without_a_request_and_any_change_runs_again(tmp_path: Path) -> None:
    repo = batch_repo(tmp_path, ["a", "b", "c"])
    adr, runs = repo / "docs" / "adr", repo / "runs"
    first = run_batch(repo, ["a", "b", "c"], jobs=3)
    assert {r.outcome for r in first.rows} == {"PASS"}
    spawns = spawn_count(runs)
    count = len([d for d in runs.iterdir() if (d / "run.json").is_file()])
    second = run_batch(repo, ["a", "b", "c"], jobs=3)
    assert [r.action for r in second.rows] == ["skipped"] * 3 and second.exit_code == ExitCode.OK
    assert spawn_count(runs) == spawns  # not one spawn, so not one request
    assert len([d for d in runs.iterdir() if (d / "run.json").is_file()]) == count
    assert not any((adr / n / "_workflow" / LOCK_NAME).exists() for n in "abc")

    # An input of a (its research log) runs it again; an output of b (the design edited by
    # hand) is later work a new run would overwrite: b is shown as edited and left alone.
    # The code every directory reads runs a and c again (b stays edited).
    log = adr / "a" / "_workflow" / "research-log.md"
    log.write_text(log.read_text() + "\n", encoding="utf-8")
    design = adr / "b" / "_workflow" / "design.md"
    design.write_text(design.read_text() + "\nA line added by hand.\n", encoding="utf-8")
    third = run_batch(repo, ["a", "b", "c"], jobs=3)
    assert [r.action for r in third.rows] == ["new", "edited", "skipped"]
    (repo / "code" / "new_module.py").write_text("VALUE = 1\n")
    fourth = run_batch(repo, ["a", "b", "c"], jobs=3)
    assert [r.action for r in fourth.rows] == ["new", "edited", "new"]


@pytest.mark.slow
def test_a_directory_another_process_holds_is_busy_and_the_others_run(tmp_path: Path) -> None:
    repo = batch_repo(tmp_path, ["a", "b"])
    held = HeldLock(repo / "docs" / "adr" / "a")
    try:
        code, out = cli_json(["batch", "create", "docs/adr/a", "docs/adr/b", "--no-warmup"], repo)
        by_dir = {d["directory"]: d for d in out["directories"]}
        assert by_dir["docs/adr/a"]["action"] == "busy" and by_dir["docs/adr/a"]["exit_code"] == 2
        assert "20260101-000000-p1-holder" in by_dir["docs/adr/a"]["message"]
        assert by_dir["docs/adr/b"]["outcome"] == "PASS" and code == ExitCode.BAD_INPUT
        assert not (repo / "docs" / "adr" / "a" / "_workflow" / "design-mutations.md").exists()
    finally:
        held.release()
    code, out = cli_json(["batch", "create", "docs/adr/a", "docs/adr/b", "--no-warmup"], repo)
    assert code == 0 and [d["action"] for d in out["directories"]] == ["new", "skipped"]


@pytest.mark.slow
def test_with_wait_a_batch_starts_a_held_directory_once_it_is_free(tmp_path: Path) -> None:
    repo = batch_repo(tmp_path, ["a"])
    held = HeldLock(repo / "docs" / "adr" / "a")
    waiting = threading.Event()
    result: list[Any] = []

    def progress(row: Any, event: Any) -> None:
        if row.message and row.message.startswith("waiting for run 20260101-000000-p1-holder"):
            waiting.set()

    def go() -> None:
        result.append(run_batch(repo, ["a"], wait=True, progress=progress))

    worker = threading.Thread(target=go)
    worker.start()
    try:
        assert waiting.wait(timeout=120)  # evidence: the batch says whom it waits for
    finally:
        held.release()
    worker.join(timeout=300)
    assert rows(result[0])["a"] == ("new", "PASS", 0)


def test_a_batch_budget_stops_every_run_cleanly_and_the_next_batch_resumes_them(tmp_path: Path) -> None:
    repo = batch_repo(tmp_path, ["a", "b"])
    stopped = run_batch(repo, ["a", "b"], jobs=1, batch_tokens=1, configure=spends_tokens)
    assert [r.exit_code for r in stopped.rows] == [4, 4] and stopped.exit_code == ExitCode.BUDGET
    assert all("batch's token budget" in (r.message or "") for r in stopped.rows[1:])
    seen: list[str] = []

    def progress(row: Any, event: Any) -> None:  # mid-run, status tells the resumed run is running
        if isinstance(event, RoundStarted) and row.action == "resumed":
            seen.append(read_view(repo / "runs" / row.run_id).state)

    resumed = run_batch(repo, ["a", "b"], jobs=2, progress=progress, configure=spends_tokens)
    assert seen and set(seen) == {"running"}
    assert [r.action for r in resumed.rows] == ["resumed", "resumed"]
    assert [r.outcome for r in resumed.rows] == ["PASS", "PASS"]


@pytest.mark.slow
def test_the_batch_report_has_one_row_per_directory_linking_each_run(tmp_path: Path) -> None:
    repo = batch_repo(tmp_path, ["a", "b"])
    (repo / "docs" / "adr" / "b" / "_workflow" / "research-log.md").write_bytes(b"\xff")
    code, out = cli_json(["batch", "create", "docs/adr/*", "--no-warmup"], repo)
    assert code == ExitCode.BAD_INPUT
    made = run_cli(["report", "--batch"], repo)
    assert made.code == 0, made.err
    page = repo / "runs" / "batches" / out["batch_id"] / "report.html"
    text = page.read_text()
    run_a = out["directories"][0]["run_id"]
    # Each run's report sits beside the batch's, linked relatively: the links work in an artifact.
    assert f'<a href="runs/{run_a}/report.html">{run_a}</a>' in text and "docs/adr/b" in text
    assert (page.parent / "runs" / run_a / "report.html").is_file()
    assert "not valid UTF-8" in text  # the row says why b did not run
    md = (page.parent / "report.md").read_text()
    assert md.count("\n| docs/adr/") == 2 and "PASS" in md


@pytest.mark.slow
def test_sarif_has_one_result_for_each_directory_that_did_not_pass(tmp_path: Path) -> None:
    repo = batch_repo(tmp_path, ["a", "b"])
    open_gate(repo / "docs" / "adr" / "b")
    sarif = tmp_path / "batch.sarif"
    code, out = cli_json(["batch", "create", "docs/adr/*", "--no-warmup", "--sarif", str(sarif)], repo)
    assert code == ExitCode.GATE_PAUSED
    assert [d["outcome"] for d in out["directories"]] == ["PASS", "PAUSED"]
    log = json.loads(sarif.read_text())
    assert log["version"] == "2.1.0"
    results = log["runs"][0]["results"]
    paused = [r for r in results if r["ruleId"] == "designloop-paused"]
    assert len(paused) == 1 and paused[0]["level"] == "warning"
    uri = paused[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "docs/adr/b/_workflow/research-log.md"  # the gate to resolve is in the research log
    assert not any("docs/adr/a" in r["message"]["text"] for r in results)  # a passed


def test_sarif_puts_each_remaining_finding_at_its_file_line_and_quote(tmp_path: Path) -> None:
    from pipeline.cli.batch_sarif import batch_sarif

    repo = batch_repo(tmp_path, ["a", "b"])
    batch = run_batch(repo, ["a", "b"], configure=blocks_in("b"))
    assert [r.outcome for r in batch.rows] == ["PASS", "BLOCKER REMAINS"]
    results = json.loads(batch_sarif(batch))["runs"][0]["results"]
    found = [r for r in results if r["ruleId"] == "cr-undefined-term"]
    assert len(found) == 1 and found[0]["level"] == "error"
    place = found[0]["locations"][0]["physicalLocation"]
    assert place["artifactLocation"]["uri"] == "docs/adr/b/_workflow/design.md"
    line = place["region"]["startLine"]
    assert "token bucket" in place["region"]["snippet"]["text"]
    text = (repo / "docs/adr/b/_workflow/design.md").read_text().splitlines()
    assert "token bucket" in text[line - 1].lower()  # the line the finding names holds its quote
