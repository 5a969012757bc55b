"""create never silently overwrites later work, and a batch never re-runs a finished directory
whose inputs did not change: every case through the CLI, on the offline engine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agentkit import make_repo
from batchkit import batch_repo, open_gate
from conftest import run_cli
from editkit import tree

from pipeline.formats.review_log import parse_entries


def cli(args: list[str], runs: Path) -> tuple[int, dict[str, Any], str]:
    done = run_cli([*args, "--runs-dir", str(runs), "--json"])
    return done.code, json.loads(done.out) if done.out.strip() else {}, done.err


def test_create_refuses_to_overwrite_edits_logged_since_the_last_create(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    d.design.unlink()
    runs = tmp_path / "runs"
    assert cli(["create", str(d.root)], runs)[0] == 0
    edited = cli(
        [
            "edit",
            str(d.root),
            "--kind",
            "content-edit",
            "--old",
            "answers in under 1 ms",
            "--new",
            "answers in less than 1 ms",
        ],
        runs,
    )
    assert edited[0] == 0, edited[2]
    before, count = tree(d.repo_root), len(list(runs.iterdir()))
    code, out, err = cli(["create", str(d.root)], runs)
    assert (code, out) == (2, {})
    assert "Mutation 2 (content-edit)" in err and "--force" in err and "what to do:" in err
    assert tree(d.repo_root) == before and len(list(runs.iterdir())) == count
    # --force runs anyway; the overwritten bytes are kept under runs/ and named in the outcome.
    edited_bytes = d.design.read_bytes()
    code, out, _ = cli(["create", str(d.root), "--force"], runs)
    assert code == 0
    copy = out["kept"][d.rel(d.design)]
    assert (d.repo_root / copy).read_bytes() == edited_bytes and copy.endswith(
        f"{out['run_id']}/before/_workflow/design.md"
    )
    assert "Mutation 2 (content-edit)" in out["overwrote"][0]
    text = run_cli(["create", str(d.root), "--runs-dir", str(runs)])  # people see it too
    assert text.code == 0  # no edit since the forced create: nothing to refuse


def test_create_and_final_refuse_a_hand_edited_document(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    d.design.unlink()
    runs = tmp_path / "runs"
    assert cli(["create", str(d.root)], runs)[0] == 0
    d.design.write_text(d.design.read_text() + "\nA paragraph written by hand.\n")
    code, _, err = cli(["create", str(d.root)], runs)
    assert code == 2 and "_workflow/design.md was changed by hand" in err
    # A clone with no run records knows it from the review log.
    code, _, err = cli(["create", str(d.root)], tmp_path / "other-runs")
    assert code == 2 and "Mutation 1" in err
    assert cli(["create", str(d.root), "--force"], runs)[0] == 0
    assert cli(["final", str(d.root)], runs)[0] in (0, 1)
    d.final.write_text(d.final.read_text() + "\nWhat the team added by hand.\n")
    code, _, err = cli(["final", str(d.root)], runs)
    assert code == 2 and "design-final.md was changed by hand" in err
    code, out, _ = cli(["final", str(d.root), "--force"], runs)
    assert code in (0, 1) and "What the team added" in (d.repo_root / out["kept"][d.rel(d.final)]).read_text()


def test_a_stopped_run_s_draft_is_designloop_s_own_not_a_hand_edit(tmp_path: Path) -> None:
    """A run paused at the gate left its draft; create again (rather than resume) is allowed."""
    d = make_repo(tmp_path)
    runs = tmp_path / "runs"
    assert cli(["create", str(d.root)], runs)[0] == 0
    open_gate(d.root)
    assert cli(["create", str(d.root)], runs)[0] == 3  # paused, its draft on disk
    assert cli(["create", str(d.root)], runs)[0] == 3


def rows_of(out: dict[str, Any]) -> dict[str, tuple[str, str | None, int]]:
    return {
        r["directory"].rsplit("/", 1)[-1]: (r["action"], r["outcome"], r["exit_code"])
        for r in out["directories"]
    }


def batch(repo: Path, *extra: str) -> dict[str, Any]:
    done = run_cli(["batch", "create", str(repo / "docs" / "adr" / "*"), "--no-warmup", "--json", *extra])
    data: dict[str, Any] = json.loads(done.out)
    return data


def test_batch_shows_an_edited_directory_and_skips_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = batch_repo(tmp_path, ["a", "b"])
    monkeypatch.chdir(repo)
    first = batch(repo)
    assert set(rows_of(first).values()) == {("new", "PASS", 0)}
    a = repo / "docs" / "adr" / "a"
    edited = run_cli(
        [
            "edit",
            str(a),
            "--kind",
            "content-edit",
            "--old",
            "answers in under 1 ms",
            "--new",
            "answers in less than 1 ms",
        ]
    )
    assert edited.code == 0, edited.err
    second = batch(repo)
    assert rows_of(second) == {"a": ("edited", None, 0), "b": ("skipped", "PASS", 0)}
    message = next(r["message"] for r in second["directories"] if r["directory"].endswith("/a"))
    assert "Mutation 2 (content-edit)" in message and "--force" in message
    forced = batch(repo, "--force")
    assert rows_of(forced) == {"a": ("new", "PASS", 0), "b": ("new", "PASS", 0)}


@pytest.mark.parametrize(("outcome", "code"), [("SHOULD-FIX REMAINS", 0), ("BLOCKER REMAINS", 1)])
def test_a_finished_run_on_unchanged_inputs_is_skipped_whatever_its_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, outcome: str, code: int
) -> None:
    """Re-running it would pay again and append an identical review-log entry on every push."""
    from rolekit import PASS, Turn, author_writes, reviewers, role_server
    from test_checked_pass import DOC, located

    repo = batch_repo(tmp_path, ["a"])
    monkeypatch.chdir(repo)
    severity = "should-fix" if outcome == "SHOULD-FIX REMAINS" else "blocker"

    def review(turn: Turn) -> dict[str, Any]:
        return located(severity) if turn.role == "readability-auditor" else PASS

    with role_server(reviewers(author_writes(DOC), review), monkeypatch) as (server, options):
        first = batch(repo, *options)
        asked = len(server.spawns)
        second = batch(repo, *options)
        assert len(server.spawns) == asked  # not one request
        forced = batch(repo, *options, "--force")
    log = repo / "docs" / "adr" / "a" / "_workflow" / "design-mutations.md"
    assert rows_of(first)["a"] == ("new", outcome, code)
    assert rows_of(second)["a"] == ("skipped", outcome, code)
    assert second["directories"][0]["findings"] == first["directories"][0]["findings"] != []
    assert rows_of(forced)["a"] == ("new", outcome, code)
    assert [e.kind for e in parse_entries(log)] == ["phase1-creation", "phase1-creation"]


def test_discard_withdraws_a_paused_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = batch_repo(tmp_path, ["a"])
    monkeypatch.chdir(repo)
    a = repo / "docs" / "adr" / "a"
    open_gate(a)
    first = batch(repo)
    paused = first["directories"][0]["run_id"]
    assert rows_of(first)["a"] == ("new", "PAUSED", 3)
    finished = run_cli(["discard", paused])
    assert finished.code == 0, finished.err
    status = json.loads(run_cli(["status", paused, "--json"]).out)
    assert status["state"] == "discarded"
    again = batch(repo)
    assert rows_of(again)["a"] == ("new", "PAUSED", 3)  # a new run, not the withdrawn one
    assert again["directories"][0]["run_id"] != paused
    refused = run_cli(["resume", paused])
    assert refused.code == 2 and "discarded" in refused.err
    twice = run_cli(["discard", paused])
    assert twice.code == 2 and "discarded" in twice.err
    log = a / "_workflow" / "design-mutations.md"
    assert not log.exists()  # a paused run appends nothing, a discard neither


EDIT = ["--kind", "content-edit", "--old", "answers in under 1 ms", "--new", "answers in less than 1 ms"]


def _paused_create(tmp_path: Path) -> tuple[Any, Path, str, str]:
    """A create paused at an open gate, then the gate resolved; returns the run and the log."""
    d = make_repo(tmp_path)
    d.design.unlink()
    runs = tmp_path / "runs"
    log = d.research_log.read_text()
    open_gate(d.root)
    code, out, err = cli(["create", str(d.root)], runs)
    assert code == 3, err
    d.research_log.write_text(log)
    return d, runs, out["run_id"], log


def test_resume_refuses_to_overwrite_a_newer_create_and_edit(tmp_path: Path) -> None:
    d, runs, old, _ = _paused_create(tmp_path)
    code, out, err = cli(["create", str(d.root)], runs)
    assert code == 0, err
    newer = out["run_id"]
    code, out, err = cli(["edit", str(d.root), *EDIT], runs)
    assert code == 0, err
    edit_run = out["run_id"]
    before, entries = tree(d.repo_root), len(parse_entries(d.mutations))
    code, out, err = cli(["resume", old], runs)
    assert (code, out) == (2, {}), err
    assert (
        f"Mutation 1 (phase1-creation, run {newer})" in err
        and f"Mutation 2 (content-edit, run {edit_run})" in err
    )
    assert f"designloop resume {old}" in err and "--force" in err and "what to do:" in err
    assert tree(d.repo_root) == before and len(parse_entries(d.mutations)) == entries
    # --force starts the run anew over the later work (as create --force); the edited design
    # is kept under the new run's directory, byte for byte, and the old run names the new one.
    edited = d.design.read_bytes()
    code, out, err = cli(["resume", old, "--force"], runs)
    assert code in (0, 1), err
    assert out["run_id"] != old and "Mutation 2 (content-edit" in out["overwrote"][-1]
    assert (d.repo_root / out["kept"][d.rel(d.design)]).read_bytes() == edited
    assert [e.kind for e in parse_entries(d.mutations)][-1] == "phase1-creation"
    shown = run_cli(["status", old, "--runs-dir", str(runs)])
    assert out["run_id"] in shown.out + shown.err


def test_a_batch_shows_edited_instead_of_resuming_over_an_edit(tmp_path: Path) -> None:
    d, runs, old, _ = _paused_create(tmp_path)
    code, _, err = cli(["edit", str(d.root), *EDIT], runs)
    assert code == 0, err
    before = tree(d.repo_root)
    code, out, err = cli(["batch", "create", str(d.root)], runs)
    row = out["directories"][0]
    assert row["action"] == "edited" and "content-edit" in row["message"], (code, row)
    assert tree(d.repo_root) == before
    assert json.loads((runs / old / "run.json").read_text())["started_by"] == "cli"


def test_a_run_record_says_who_started_it(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    runs = tmp_path / "runs"
    _, out, _ = cli(["batch", "create", str(d.root), "--force"], runs)
    run_id = out["directories"][0]["run_id"]
    assert json.loads((runs / run_id / "run.json").read_text())["started_by"] == "batch"
