"""Revisions and approval on the PostgreSQL store, against a real server: the revision's bytes
live in the store's ``revisions`` table, so another checkout (with no runs/ at all) shows them;
an edit's revision (edits run on the local store) is found beside them; approvals hold the
store's advisory lock, so two at once leave exactly one record."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
from conftest import run_cli
from lifecyclekit import ACTOR, fresh

from pipeline.formats.approvals import NAME, parse_approvals
from pipeline.formats.design_dir import open_design_dir


def pg(args: list[str], runs: Path, url: str) -> tuple[int, dict[str, Any], str]:
    done = run_cli([*args, "--runs-dir", str(runs), "--store", url, "--json"])
    return done.code, json.loads(done.out) if done.out.strip() else {}, done.err


def stored(url: str) -> list[tuple[str, str, int, str, bytes]]:
    with psycopg.connect(url, options="-c search_path=designloop") as conn:
        rows = conn.execute(
            "SELECT directory, file, number, requested_by, content FROM revisions ORDER BY number"
        ).fetchall()
    return [(a, b, c, d, bytes(e)) for a, b, c, d, e in rows]


def test_revisions_on_the_store_are_shown_approved_and_seen_from_another_checkout(
    pg_url: str, tmp_path: Path, actor: str
) -> None:
    d, runs = fresh(tmp_path / "one"), tmp_path / "one" / "runs"
    code, run, err = pg(["create", str(d.root)], runs, pg_url)
    assert code == 0, err
    first = d.design.read_bytes()
    assert stored(pg_url) == [("docs/adr/0001", "design", 1, "cli", first)]
    assert not (runs / "revisions.sqlite").exists()  # the store keeps them, not runs/

    code, status, _ = pg(["status", str(d.root)], runs, pg_url)
    assert code == 0 and status["files"][0]["current"]["run_id"] == run["run_id"]
    code, done, err = pg(["approve", str(d.root)], runs, pg_url)
    assert code == 0, err
    [record] = parse_approvals(d.root / NAME)
    assert (record.number, record.actor) == (1, ACTOR) and done["records"][0]["number"] == 1

    # r2: the file moves on (the same bytes again would be r1, never a new candidate)
    log = d.workflow / "research-log.md"
    log.write_text(log.read_text().replace("needs two numbers of state", "keeps two numbers of state"))
    assert pg(["create", str(d.root), "--force"], runs, pg_url)[0] == 0
    d.design.write_text("moved on by hand\n")

    # Another checkout, no runs/ of its own: the store has the bytes of r1 and r2.
    other = tmp_path / "two" / "repo"
    shutil.copytree(d.repo_root, other)
    c = open_design_dir(other / "docs" / "adr" / "0001")
    other_runs = tmp_path / "two" / "runs"
    shown = run_cli(
        ["show", str(c.root), "--revision", "1", "--store", pg_url, "--runs-dir", str(other_runs)]
    )
    assert shown.code == 0 and shown.out.encode() == first
    accepted = run_cli(["show", str(c.root), "--store", pg_url, "--runs-dir", str(other_runs)])
    assert accepted.out.encode() == first  # the accepted revision by default
    status = pg(["status", str(c.root)], other_runs, pg_url)[1]
    design = status["files"][0]
    assert [r["number"] for r in design["revisions"]] == [1, 2] and design["accepted"]["number"] == 1
    assert [g["gap"] for g in design["gaps"]][:2] == ["changed-since-revision", "not-accepted"]


def test_an_edit_s_revision_in_the_local_store_is_found_beside_the_shared_one(
    pg_url: str, tmp_path: Path
) -> None:
    d, runs = fresh(tmp_path), tmp_path / "runs"
    assert pg(["create", str(d.root)], runs, pg_url)[0] == 0
    done = run_cli(
        [
            "edit",
            str(d.root),
            "--kind",
            "content-edit",
            "--old",
            "answers in under 1 ms",
            "--new",
            "answers in less than 1 ms",
            "--runs-dir",
            str(runs),
            "--json",
        ]
    )
    assert done.code == 0 and json.loads(done.out)["outcome"] == "PASS", done.err
    edited = d.design.read_bytes()
    assert (runs / "revisions.sqlite").exists() and [n for _, _, n, _, _ in stored(pg_url)] == [1]
    d.design.write_text("moved on by hand\n")
    shown = run_cli(["show", str(d.root), "--revision", "2", "--store", pg_url, "--runs-dir", str(runs)])
    assert shown.code == 0 and shown.out.encode() == edited  # from the local store, beside the shared one
    status = pg(["status", str(d.root)], runs, pg_url)[1]
    assert [(r["number"], r["outcome"]) for r in status["files"][0]["revisions"]] == [
        (1, "PASS"),
        (2, "PASS"),
    ]


def test_two_approvals_at_once_on_the_store_leave_exactly_one_record(pg_url: str, tmp_path: Path) -> None:
    d, runs = fresh(tmp_path), tmp_path / "runs"
    assert pg(["create", str(d.root)], runs, pg_url)[0] == 0
    command = [sys.executable, "-m", "pipeline.cli", "approve", str(d.root), "--runs-dir", str(runs)]
    command += ["--store", pg_url, "--json"]
    procs = [
        subprocess.Popen(
            command,
            cwd=d.repo_root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ),
        )
        for _ in range(2)
    ]
    results = [(p.wait(timeout=120), p.communicate()) for p in procs]
    assert sorted(code for code, _ in results) == [0, 6], results
    loser = next(out for code, (out, _) in results if code == 6)
    assert json.loads(loser)["error"]["name"] in ("active-run", "already-accepted")
    assert len(parse_approvals(d.root / NAME)) == 1
