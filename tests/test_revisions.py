"""Revision identity (docs/lifecycle.md): every run that writes a document records a revision
(number, SHA-256 of the exact bytes, run, kind, outcome, who asked and who that was, when); the
review-log entry names it; the run store keeps its bytes for ``show``; runs and the report show
it with its state; records written before revisions existed stay readable."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import run_cli
from editkit import entry_text, stamped_repo
from lifecyclekit import ACTOR, dl, fresh, text

from pipeline.errors import InputError
from pipeline.formats.review_log import parse_entries
from pipeline.formats.revisions import Revision
from pipeline.runs.revisions import SqliteRevisions


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_create_records_a_revision_the_review_log_names_and_the_store_keeps(
    tmp_path: Path, actor: str
) -> None:
    d, runs = fresh(tmp_path), tmp_path / "runs"
    code, out, _ = dl(["create", str(d.root)], runs)
    assert code == 0
    first = d.design.read_bytes()
    [stored] = SqliteRevisions(runs).revisions("docs/adr/0001")
    assert (stored.file, stored.number, stored.sha256) == ("design", 1, sha(first))
    assert (stored.run_id, stored.kind, stored.outcome) == (out["run_id"], "phase1-creation", "PASS")
    assert (stored.requested_by, stored.actor) == ("cli", ACTOR) and stored.time.endswith("Z")
    assert stored.family("docs/adr/0001") == "docs/adr/0001:design"
    assert set(stored.inputs) == {"research-log", "plan", "settings", "code"} and stored.workflow
    assert SqliteRevisions(runs).content("docs/adr/0001", "design", 1) == first
    [entry] = parse_entries(d.mutations)
    assert [(r.file, r.number, r.sha256, r.run_id) for r in entry.revisions] == [
        ("design", 1, sha(first), out["run_id"])
    ]
    assert f"**Revision**: design.md r1 (sha256 {sha(first)[:12]}…)" in entry_text(d, 1)

    code, _again, _ = dl(["create", str(d.root), "--force"], runs)
    assert code == 0
    assert [r.number for r in SqliteRevisions(runs).revisions("docs/adr/0001")] == [1, 2]
    d.design.write_text("moved on\n")
    for which, expected in (("1", first), ("2", SqliteRevisions(runs).content("docs/adr/0001", "design", 2))):
        shown = run_cli(["show", str(d.root), "--revision", which, "--runs-dir", str(runs)])
        assert shown.code == 0 and shown.out.encode() == expected
    missing = run_cli(["show", str(d.root), "--revision", "7", "--runs-dir", str(runs)])
    assert missing.code == 2 and "no revision 7 of design.md" in missing.err
    bad = run_cli(["show", str(d.root), "--file", "appendix", "--runs-dir", str(runs)])
    assert bad.code == 2 and "--file 'appendix'" in bad.err


def test_an_edit_records_a_revision_only_of_what_it_changed(tmp_path: Path) -> None:
    d, runs = stamped_repo(tmp_path), tmp_path / "runs"
    code, _out, _ = dl(
        [
            "edit",
            str(d.root),
            "--kind",
            "content-edit",
            "--old",
            "never less than one",
            "--new",
            "at least one",
        ],
        runs,
    )
    assert code == 0
    assert [(r.file, r.number, r.kind) for r in SqliteRevisions(runs).revisions("docs/adr/0001")] == [
        ("design", 1, "content-edit")
    ]
    nothing = dl(
        [
            "edit",
            str(d.root),
            "--kind",
            "content-edit",
            "--section",
            "Overview",
            "--instruction",
            "make it nicer",
        ],
        runs,
    )
    assert nothing[1]["outcome"] == "BLOCKER REMAINS"  # changed nothing: no revision
    assert len(SqliteRevisions(runs).revisions("docs/adr/0001")) == 1
    assert not parse_entries(d.mutations)[-1].revisions


def test_runs_and_the_report_show_the_revision_and_its_state(tmp_path: Path, actor: str) -> None:
    d, runs = fresh(tmp_path), tmp_path / "runs"
    code, out, _ = dl(["create", str(d.root)], runs)
    assert code == 0
    listed = run_cli(["runs", "--runs-dir", str(runs), "--json"])
    [row] = json.loads(listed.out)["runs"]
    assert row["revisions"] == [
        {
            "file": "design",
            "name": "design.md",
            "number": 1,
            "sha256": sha(d.design.read_bytes()),
            "state": "candidate",
        }
    ]
    assert dl(["approve", str(d.root)], runs)[0] == 0
    [row] = json.loads(run_cli(["runs", "--runs-dir", str(runs), "--json"]).out)["runs"]
    assert row["revisions"][0]["state"] == "accepted"
    report = run_cli(["report", out["run_id"], "--runs-dir", str(runs)])
    assert report.code == 0
    md = (runs / out["run_id"] / "report.md").read_text()
    assert "## Revision" in md and "design.md r1" in md and ": accepted" in md
    assert "design.md r1" in (runs / out["run_id"] / "report.html").read_text()


def test_records_without_revisions_stay_readable(tmp_path: Path) -> None:
    """A review log and run records written before revisions existed: status, runs and report
    read them; the documents are named as having no revision."""
    d, runs = fresh(tmp_path), tmp_path / "runs"
    code, out, _ = dl(["create", str(d.root)], runs)
    assert code == 0
    # Take the new fields away: the markers and lines of the entry, the event, the store.
    log = d.mutations.read_text()
    d.mutations.write_text(
        "".join(
            line
            for line in log.splitlines(keepends=True)
            if "designloop-revision" not in line and not line.startswith("**Revision**")
        )
    )
    events = runs / out["run_id"] / "events.jsonl"
    events.write_text(
        "".join(x for x in events.read_text().splitlines(keepends=True) if '"revision"' not in x)
    )
    (runs / "revisions.sqlite").unlink()
    status = dl(["status", str(d.root)], runs)[1]
    assert [g["gap"] for g in status["files"][0]["gaps"]] == ["no-revision"]
    [row] = json.loads(run_cli(["runs", "--runs-dir", str(runs), "--json"]).out)["runs"]
    assert row["outcome"] == "PASS" and row["revisions"] == []
    assert run_cli(["report", out["run_id"], "--runs-dir", str(runs)]).code == 0
    assert "(none recorded)" in (runs / out["run_id"] / "report.md").read_text()
    code, approve, _err = dl(["approve", str(d.root)], runs)
    assert code == 6 and approve["error"]["name"] == "no-current-revision"
    # The next run records revision 1 of a document that had none.
    assert dl(["create", str(d.root), "--force"], runs)[0] == 0
    assert [r.number for r in SqliteRevisions(runs).revisions("docs/adr/0001")] == [1]


def test_a_damaged_revision_store_is_named_before_anything_is_written(tmp_path: Path) -> None:
    d, runs = fresh(tmp_path), tmp_path / "runs"
    runs.mkdir()
    (runs / "revisions.sqlite").write_bytes(b"not a database at all" * 10)
    code, _out, err = dl(["create", str(d.root)], runs)
    assert code == 2 and "revision store is damaged" in err and "what to do:" in err
    assert not d.design.exists() and not d.mutations.exists()


def test_numbers_rise_above_what_the_review_log_knows_and_a_run_records_once(tmp_path: Path) -> None:
    store = SqliteRevisions(tmp_path)
    base = Revision(
        file="design", number=0, sha256="a" * 64, run_id="r1", kind="phase1-creation", outcome="PASS"
    )
    first = store.add("docs/adr/x", base, b"one", floor=4)  # the review log names r1..r4 already
    assert first.number == 5
    assert store.add("docs/adr/x", base, b"one", floor=9).number == 5  # the same run: the same revision
    second = store.add("docs/adr/x", replace(base, run_id="r2", sha256="b" * 64), b"two", floor=0)
    assert second.number == 6 and store.content("docs/adr/x", "design", 6) == b"two"
    assert [r.number for r in store.revisions("docs/adr/x")] == [5, 6] and store.revisions("other") == []


@pytest.mark.parametrize(
    "line",
    ["<!-- designloop-revision: appendix r=1 sha256=x -->", "<!-- designloop-revision: design r=one -->"],
)
def test_a_damaged_revision_marker_is_named_with_its_line(tmp_path: Path, line: str) -> None:
    d, runs = fresh(tmp_path), tmp_path / "runs"
    assert dl(["create", str(d.root)], runs)[0] == 0
    log = d.mutations.read_text().splitlines()
    at = next(i for i, x in enumerate(log) if x.startswith("<!-- designloop-revision"))
    log[at] = line
    d.mutations.write_text("\n".join(log) + "\n")
    code, _, err = text(["status", str(d.root)], runs)
    assert code == 2 and f"design-mutations.md:{at + 1}: malformed revision marker" in err


def test_a_revision_s_declined_parts_ride_on_its_marker_and_survive_the_merge() -> None:
    """The store keeps no declined count; the review log's marker does, and the directory's
    history (the store's revisions first) takes it from there."""
    from pipeline.formats.revisions import merge, parse_marker

    rev = Revision("design", 2, "a" * 64, "run-1", "content-edit", "PASS", declined=2)
    assert rev.marker().endswith(" declined=2 -->")
    logged = parse_marker(rev.marker(), "run-1", "content-edit", entry=3)
    assert logged.declined == 2 and logged.outcome_words() == "PASS, 2 parts of the instruction declined"
    stored = replace(rev, declined=0)
    assert "declined" not in stored.marker() and stored.outcome_words() == "PASS"
    [merged] = merge([stored], [logged])
    assert (merged.declined, merged.entry) == (2, 3)
    with pytest.raises(InputError, match=r"declined='x' is not a number"):
        parse_marker(rev.marker().replace("declined=2", "declined=x"), "run-1", "content-edit")
