"""Readiness through the CLI (docs/lifecycle.md): ``status DIR`` names the accepted revision, the
current one and every gap; ``ready GLOB`` is the CI gate; a fresh clone without runs/ sees the
same from the committed review log and approvals file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from batchkit import HeldLock
from conftest import run_cli
from lifecyclekit import ACTOR, dl, fresh, open_gate, text

from pipeline.formats.design_dir import open_design_dir


def gaps(status: dict[str, Any], file: str = "design") -> list[str]:
    doc = next(f for f in status["files"] if f["file"] == file)
    return [g["gap"] for g in doc["gaps"]]


def test_status_names_each_gap_of_a_directory(tmp_path: Path, actor: str) -> None:
    d, runs = fresh(tmp_path), tmp_path / "runs"
    status = dl(["status", str(d.root)], runs)[1]
    assert (status["ready"], gaps(status)) == (False, ["missing"])
    assert dl(["create", str(d.root)], runs)[0] == 0
    assert gaps(dl(["status", str(d.root)], runs)[1]) == ["not-accepted"]
    assert dl(["approve", str(d.root)], runs)[0] == 0
    assert dl(["status", str(d.root)], runs)[1]["ready"] is True

    d.design.write_text(d.design.read_text() + "\nBy hand.\n")  # a hand edit
    assert gaps(dl(["status", str(d.root)], runs)[1]) == ["changed-since-revision"]
    d.design.write_text(d.design.read_text().removesuffix("\nBy hand.\n"))

    log = d.research_log.read_text()
    open_gate(d)  # the gate, and the research log the accepted revision read, both changed
    status = dl(["status", str(d.root)], runs)[1]
    assert [g["gap"] for g in status["gaps"]] == ["gate-open"]
    assert "the refill rate per route is not decided" in status["gaps"][0]["details"][0]
    assert gaps(status) == ["inputs-changed"] and "research log" in status["files"][0]["gaps"][0]["message"]
    d.research_log.write_text(log)

    (d.code_root / "limiter.py").write_text("# a new module\n")
    status = dl(["status", str(d.root)], runs)[1]
    assert gaps(status) == ["inputs-changed"] and status["files"][0]["gaps"][0]["details"] == ["code"]
    (d.code_root / "limiter.py").unlink()

    overrides = d.repo_root / ".designloop" / "prompts"
    overrides.mkdir(parents=True)
    (overrides / "house-style.md").write_text("Write short sentences.\n")
    assert gaps(dl(["status", str(d.root)], runs)[1]) == ["workflow-changed"]
    shutil.rmtree(d.repo_root / ".designloop")

    held = HeldLock(d.root)
    try:
        status = dl(["status", str(d.root)], runs)[1]
        assert [g["gap"] for g in status["gaps"]] == ["run-active"] and status["active_run"]
    finally:
        held.release()
    assert dl(["status", str(d.root)], runs)[1]["ready"] is True


def test_an_outcome_that_is_not_pass_lists_its_open_findings(tmp_path: Path) -> None:
    from editkit import stamped_repo

    d, runs = stamped_repo(tmp_path), tmp_path / "runs"
    args = ["--old", "never less than one.", "--new", "never less than one, as implementation-plan.md says."]
    assert (
        dl(["edit", str(d.root), "--kind", "content-edit", *args], runs)[1]["outcome"] == "SHOULD-FIX REMAINS"
    )
    status = dl(["status", str(d.root)], runs)[1]
    doc = status["files"][0]
    gap = next(g for g in doc["gaps"] if g["gap"] == "outcome-not-pass")
    assert "SHOULD-FIX REMAINS" in gap["message"] and any("dsc-reverse-ref" in x for x in gap["details"])
    code, out, _ = text(["status", str(d.root)], runs)
    assert code == 0 and "outcome-not-pass" in out and "dsc-reverse-ref" in out


def test_ready_is_the_ci_gate_with_gaps_per_directory_and_sarif(tmp_path: Path, actor: str) -> None:
    d, runs = fresh(tmp_path), tmp_path / "runs"
    other = d.root.parent / "0002"
    shutil.copytree(d.root, other)
    for directory in (d.root, other):
        assert dl(["create", str(directory)], runs)[0] == 0
    assert dl(["approve", str(d.root)], runs)[0] == 0
    pattern = str(d.root.parent / "*")
    sarif = tmp_path / "ready.sarif"
    code, out, _ = dl(["ready", pattern, "--sarif", str(sarif)], runs)
    assert code == 1 and out["ready"] is False
    by_dir = {Path(s["directory"]).name: s for s in out["directories"]}
    assert by_dir["0001"]["ready"] is True and gaps(by_dir["0002"]) == ["not-accepted"]
    results = json.loads(sarif.read_text())["runs"][0]["results"]
    assert [
        (r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]) for r in results
    ] == [("designloop-not-accepted", "docs/adr/0002/_workflow/design.md")]
    code, shown, _ = text(["ready", pattern], runs)
    assert code == 1 and "0001: ready" in shown and ACTOR in shown and "not-accepted" in shown
    assert dl(["approve", str(other)], runs)[0] == 0
    assert dl(["ready", pattern], runs)[0] == 0
    assert dl(["ready", str(tmp_path / "nothing-*")], runs)[0] == 2  # names no design directory


def test_a_fresh_clone_without_runs_knows_which_design_is_accepted_by_whom_and_why_not_ready(
    tmp_path: Path, actor: str
) -> None:
    d, runs = fresh(tmp_path / "one"), tmp_path / "one" / "runs"
    code, run, _ = dl(["create", str(d.root), "--approve-if-ready"], runs)
    assert code == 0 and run["approval"]["approved"]
    code, final, _ = dl(["final", str(d.root)], runs)
    assert code == 0 and final["outcome"] == "PASS"
    entry = d.mutations.read_text().split("## Mutation 2", 1)[1]
    assert "**Finalised**: design.md r1 (sha256" in entry and "**Revision**: design-final.md r1" in entry

    clone = tmp_path / "two" / "repo"
    shutil.copytree(d.repo_root, clone)  # runs/ lives outside the repository: the clone has none
    c = open_design_dir(clone / "docs" / "adr" / "0001")
    fresh_runs = tmp_path / "two" / "runs"
    status = dl(["status", str(c.root)], fresh_runs)[1]
    assert status["stage"] == "final" and status["ready"] is False
    final_doc = next(f for f in status["files"] if f["file"] == "final")
    assert gaps(status, "final") == ["not-accepted"]
    assert final_doc["current"]["run_id"] == final["run_id"] and final_doc["current"]["actor"] == ACTOR
    assert final_doc["current"]["finalised"] == {"number": 1, "sha256": run_sha(c)}
    design_doc = next(f for f in status["files"] if f["file"] == "design")
    assert design_doc["in_stage"] is False and design_doc["accepted"]["actor"] == ACTOR
    assert design_doc["accepted"]["run_id"] == run["run_id"]
    code, shown, _ = text(["status", str(c.root)], fresh_runs)
    assert f"by {ACTOR}" in shown and "evidence: run " + run["run_id"] in shown
    assert dl(["ready", str(c.root)], fresh_runs)[0] == 1
    assert not fresh_runs.exists()  # status and ready read; they write nothing, not even runs/

    assert dl(["approve", str(c.root)], fresh_runs)[0] == 0  # from the review log alone
    assert dl(["ready", str(c.root)], fresh_runs)[0] == 0
    shown_final = run_cli(["show", str(c.root), "--runs-dir", str(fresh_runs)])
    assert shown_final.code == 0 and shown_final.out == c.final.read_text()


def run_sha(d: Any) -> str:
    import hashlib

    return hashlib.sha256(d.design.read_bytes()).hexdigest()


CLOCK_NOW = "class Clock(Protocol):\n    def now(self) -> float:"


def test_stale_claims_are_a_gap_and_ready_shows_the_drift_at_the_design_lines(
    tmp_path: Path, actor: str
) -> None:
    d, runs = fresh(tmp_path), tmp_path / "runs"
    assert dl(["create", str(d.root)], runs)[0] == 0
    assert dl(["approve", str(d.root)], runs)[0] == 0
    code, out, _ = dl(["ready", str(d.root)], runs)
    claims = out["directories"][0]["files"][0]["claims"]
    assert code == 0 and claims["ledger"] == "docs/adr/0001/_workflow/design.claims.json"
    assert claims["claims"] == claims["current"] > 0 and claims["stale"] == []

    clock = d.code_root / "ratelimit" / "clock.py"
    before = clock.read_text()
    assert CLOCK_NOW in before  # the design's sentences about `Clock` rest on its declaration
    clock.write_text(before.replace(CLOCK_NOW, "class Clock(Protocol, Sized):\n    def now(self) -> float:"))
    sarif = tmp_path / "ready.sarif"
    code, out, _ = dl(["ready", str(d.root), "--sarif", str(sarif)], runs)
    doc = out["directories"][0]["files"][0]
    assert code == 1 and [g["gap"] for g in doc["gaps"]] == ["inputs-changed", "stale-claims"]
    stale = doc["claims"]["stale"]
    lines = d.design.read_text().splitlines()
    assert (
        stale
        and {s["mention"] for s in stale} <= {"Clock", "code/ratelimit/clock.py:9"}
        and all(s["status"] == "changed" for s in stale)
    )
    assert all(s["quote"] in lines[s["line"] - 1] for s in stale)  # each at the line that makes it
    gap = doc["gaps"][1]
    assert f"{len(stale)} of {doc['claims']['claims']} claims" in gap["message"]
    assert [x.split(":")[0] for x in gap["details"]] == [f"line {s['line']}" for s in stale]
    results = json.loads(sarif.read_text())["runs"][0]["results"]
    at = [
        (r["ruleId"], r["locations"][0]["physicalLocation"]["region"].get("startLine"))
        for r in results
        if r["ruleId"] == "designloop-stale-claims"
    ]
    assert at == [("designloop-stale-claims", s["line"]) for s in stale]
    code, shown, _ = text(["status", str(d.root)], runs)
    clock_claim = next(s for s in stale if s["mention"] == "Clock")
    assert code == 0 and "stale-claims" in shown and f"line {clock_claim['line']}: Clock:" in shown

    clock.write_text(before)  # the code as the design says it: ready again
    assert dl(["ready", str(d.root)], runs)[0] == 0


def test_a_design_without_a_ledger_is_not_ready_and_a_damaged_one_is_bad_input(
    tmp_path: Path, actor: str
) -> None:
    d, runs = fresh(tmp_path), tmp_path / "runs"
    assert dl(["create", str(d.root), "--approve-if-ready"], runs)[0] == 0
    ledger = d.workflow / "design.claims.json"
    kept = ledger.read_text()
    ledger.unlink()
    code, out, _ = dl(["ready", str(d.root)], runs)
    doc = out["directories"][0]["files"][0]
    assert code == 1 and [g["gap"] for g in doc["gaps"]] == ["no-claims-ledger"] and doc["claims"] is None
    assert "designloop claims" in doc["gaps"][0]["details"][0]
    ledger.write_text("{not json")
    code, _, err = dl(["ready", str(d.root)], runs)
    assert code == 2 and "design.claims.json" in err and "the claims ledger is damaged" in err
    ledger.write_text(kept)
    assert dl(["ready", str(d.root)], runs)[0] == 0
