"""Two worker processes on a real PostgreSQL store, one killed with SIGKILL mid-run (on
evidence: its run's request is held by the provider): the other takes the run over and
resumes it from its last checkpoint; every directory ends with exactly one review-log entry,
no answered request is paid again, no job is lost and none is left on the queue."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest
from batchkit import batch_repo
from conftest import cli_done
from faultkit import repaid
from graphkit import long_design
from rolekit import author_writes, reviewers, role_server
from workerkit import HoldingServer, finished, holder_pid, query, wait_until, worker

from pipeline.formats.review_log import parse_entries

DOC = long_design(sections=8) + "\n"
QUICK = "[worker]\nheartbeat = 4\ndequeue = 1\n"
"""A killed worker's job is stale after 4 s, and a draining worker looks every second, so the
takeover comes in seconds (the defaults, 20 s and 10 s, are for real machines)."""


def worker_repo(tmp_path: Path, names: list[str]) -> Path:
    repo = batch_repo(tmp_path, names)
    (repo / "designloop.toml").write_text(QUICK, encoding="utf-8")
    return repo


def enqueue(repo: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``designloop enqueue create 'docs/adr/*' --store URL ARGS --json`` in ``repo``."""
    return cli_done(["enqueue", "create", "docs/adr/*", "--store", url, *args, "--json"], repo)


@pytest.mark.slow
def test_a_killed_workers_run_is_taken_over_and_resumed(pg_url: str, tmp_path: Path) -> None:
    repo = worker_repo(tmp_path, ["a", "b", "c"])
    with HoldingServer(DOC, "comprehension-review", "docs/adr/a/") as server:
        model = ["--model", "openai:scripted", "--base-url", server.base_url]
        queued = enqueue(repo, pg_url, *model, "--no-warmup")
        assert queued.returncode == 0, queued.stderr
        runs = {Path(d["directory"]).name: d["run_id"] for d in json.loads(queued.stdout)["directories"]}
        assert len(set(runs.values())) == 3
        # The same directories again while queued: nothing is queued twice.
        again = enqueue(repo, pg_url, *model, "--no-warmup")
        assert {d["run_id"] for d in json.loads(again.stdout)["directories"]} == set(runs.values())
        assert query(pg_url, "SELECT COUNT(*) FROM pgqueuer")[0][0] == 3

        server.epoch = 1
        workers = [worker(pg_url, repo, "--jobs", "2"), worker(pg_url, repo, "--jobs", "2")]
        try:
            assert server.held.wait(timeout=240)  # run a is mid-run: its comprehension review is held
            cached = lambda: query(pg_url, "SELECT COUNT(*) FROM cache")[0][0]  # noqa: E731
            wait_until(lambda: server.settled(cached))  # what was answered so far is kept
            pid = wait_until(lambda: holder_pid(pg_url, "docs/adr/a"))
            killed = next(w for w in workers if w.pid == pid)
            killed.send_signal(signal.SIGKILL)
            killed.wait(timeout=60)
            server.epoch = 2
            server.release.set()
            wait_until(lambda: finished(pg_url) >= set(runs.values()))
            wait_until(lambda: query(pg_url, "SELECT COUNT(*) FROM pgqueuer")[0][0] == 0)
            survivor = next(w for w in workers if w.pid != pid)
            survivor.send_signal(signal.SIGTERM)
            assert survivor.wait(timeout=120) == 0  # SIGTERM: a graceful stop
        finally:
            for w in workers:
                if w.poll() is None:
                    w.send_signal(signal.SIGTERM)
                    try:
                        w.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        w.kill()
        assert repaid(server.log) == 0  # every answered request of the killed worker came from the cache

    for name, run_id in runs.items():
        entries = parse_entries(repo / "docs" / "adr" / name / "_workflow" / "design-mutations.md")
        assert [e.run_id for e in entries] == [run_id]
    events = [
        r[0] for r in query(pg_url, "SELECT event FROM events WHERE run_id = %s ORDER BY id", runs["a"])
    ]
    authors = [e for e in events if e["type"] == "spawn" and e["role"] == "design-author"]
    assert len(authors) == 1 and authors[0]["pid"] == pid  # the killed worker's finished spawn stands
    resumed = [e for e in events if e["type"] == "resume" and e["pid"] != pid]
    assert resumed, "another worker resumed the run"
    outcome = [e for e in events if e["type"] == "outcome"]
    assert len(outcome) == 1 and outcome[0]["outcome"] == "PASS" and outcome[0]["pid"] != pid


@pytest.mark.slow
def test_drain_workers_take_over_a_killed_workers_job_before_they_exit(pg_url: str, tmp_path: Path) -> None:
    repo = worker_repo(tmp_path, ["a", "b"])
    with HoldingServer(DOC, "comprehension-review", "docs/adr/a/") as server:
        model = ["--model", "openai:scripted", "--base-url", server.base_url]
        queued = enqueue(repo, pg_url, *model, "--no-warmup")
        assert queued.returncode == 0, queued.stderr
        runs = {Path(d["directory"]).name: d["run_id"] for d in json.loads(queued.stdout)["directories"]}
        workers = [worker(pg_url, repo, "--jobs", "2", "--drain") for _ in range(2)]
        try:
            assert server.held.wait(timeout=240)
            pid = wait_until(lambda: holder_pid(pg_url, "docs/adr/a"))
            killed = next(w for w in workers if w.pid == pid)
            killed.send_signal(signal.SIGKILL)
            killed.wait(timeout=60)
            server.release.set()
            survivor = next(w for w in workers if w.pid != pid)
            # The killed worker's job is still picked: the survivor takes it over, then drains.
            assert survivor.wait(timeout=240) == 0
        finally:
            for w in workers:
                if w.poll() is None:
                    w.kill()
    assert finished(pg_url) >= set(runs.values())
    assert query(pg_url, "SELECT COUNT(*) FROM pgqueuer")[0][0] == 0
    # Each run's revision is in the store, recorded as a worker's (docs/lifecycle.md).
    recorded = query(pg_url, "SELECT run_id, requested_by, number FROM revisions WHERE file = 'design'")
    assert sorted(recorded) == sorted((run_id, "worker", 1) for run_id in runs.values())


def states(url: str, run_id: str) -> list[str]:
    kinds = ("start", "resume", "stopped", "outcome")
    rows = query(url, "SELECT event->>'type' FROM events WHERE run_id = %s ORDER BY id", run_id)
    return [r[0] for r in rows if r[0] in kinds]


@pytest.mark.slow
def test_enqueue_raises_the_budget_of_a_run_it_queues_again(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = worker_repo(tmp_path, ["a"])
    # A model that spends tokens (each answer of the scripted server costs 120): the offline
    # engine spends none, so no budget would ever stop it.
    with role_server(reviewers(author_writes(long_design(sections=4) + "\n")), monkeypatch) as (_, model):

        def designloop(*args: str) -> subprocess.CompletedProcess[str]:
            return cli_done([*args, "--store", pg_url], repo)

        first = designloop("enqueue", "create", "docs/adr/a", *model, "--budget", "500", "--json")
        assert first.returncode == 0, first.stderr
        run_id = json.loads(first.stdout)["directories"][0]["run_id"]
        assert designloop("worker", "--drain").returncode == 0
        assert states(pg_url, run_id)[-1] == "stopped"  # the budget stopped it
        again = designloop("enqueue", "create", "docs/adr/a", *model, "--budget", "100000000", "--json")
        assert [d["run_id"] for d in json.loads(again.stdout)["directories"]] == [run_id]
        assert designloop("worker", "--drain").returncode == 0
    assert states(pg_url, run_id)[-2:] == ["resume", "outcome"]  # under the raised budget


@pytest.mark.slow
def test_enqueue_stale_only_queues_only_the_directories_whose_claims_went_stale(
    pg_url: str, tmp_path: Path
) -> None:
    repo = worker_repo(tmp_path, ["a", "b"])

    def designloop(*args: str) -> subprocess.CompletedProcess[str]:
        return cli_done([*args, "--store", pg_url], repo)

    def queued(*extra: str) -> dict[str, str]:
        done = designloop("enqueue", "create", "docs/adr/*", "--stale-only", "--json", *extra)
        assert done.returncode == 0, done.stderr
        return {Path(r["directory"]).name: r["action"] for r in json.loads(done.stdout)["directories"]}

    assert queued() == {"a": "queued", "b": "queued"}
    assert designloop("worker", "--drain").returncode == 0
    ledgers = {d: repo / "docs" / "adr" / d / "_workflow" / "design.claims.json" for d in "ab"}
    assert all(p.is_file() for p in ledgers.values())  # the workers' runs wrote them
    # a code change no claim rests on: nothing is queued
    (repo / "code" / "ratelimit" / "extra.py").write_text(
        "def unrelated():\n    return 1\n", encoding="utf-8"
    )
    assert queued() == {"a": "skipped", "b": "skipped"}
    ledgers["a"].unlink()  # a's claims can no longer be checked: a runs again, b does not
    assert queued() == {"a": "queued", "b": "skipped"}
