"""The lifecycle's transitions through the CLI (docs/lifecycle.md): approve and reject, every
named error (exit 6, nothing changed), the digest guard after a hand edit, supersession, two
approvals at once, and a design frozen by phase 4."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from batchkit import HeldLock
from editkit import stamped_repo
from lifecyclekit import ACTOR, dl, everything, fresh, open_gate, refused

from pipeline.formats.approvals import NAME, parse_approvals
from pipeline.formats.review_log import parse_entries


def test_approve_records_the_accepted_revision_in_the_committed_file(tmp_path: Path, actor: str) -> None:
    d, runs = fresh(tmp_path), tmp_path / "runs"
    code, run, _ = dl(["create", str(d.root)], runs)
    assert code == 0 and run["outcome"] == "PASS"
    code, out, err = dl(["approve", str(d.root)], runs)
    assert code == 0, err
    [record] = parse_approvals(d.root / NAME)
    assert (record.action, record.file, record.number) == ("accepted", "design", 1)
    assert record.sha256 == __import__("hashlib").sha256(d.design.read_bytes()).hexdigest()
    assert (record.actor, record.requested_by, record.run_id) == (actor, "cli", run["run_id"])
    assert "review log Mutation 1" in record.evidence and "(phase1-creation, PASS)" in record.evidence
    assert out["records"][0]["number"] == 1 and out["superseded"] == {}
    # Human-readable, and no review-log entry: the periodic counters never count an approval.
    shown = (d.root / NAME).read_text()
    assert "— accepted — design r1" in shown and f"- actor: {actor}" in shown
    assert [e.kind for e in parse_entries(d.mutations)] == ["phase1-creation"]
    status = dl(["status", str(d.root)], runs)[1]
    assert status["ready"] is True
    assert status["files"][0]["accepted"]["actor"] == actor
    assert status["files"][0]["current"]["state"] == "accepted"


def test_every_refusal_is_named_exits_6_and_changes_nothing(tmp_path: Path, actor: str) -> None:
    d, runs = fresh(tmp_path), tmp_path / "runs"

    def attempt(args: list[str], name: str) -> None:
        before = everything(d, runs)
        code, out, err = dl(args, runs)
        refused(code, out, err, name)
        assert everything(d, runs) == before

    attempt(["approve", str(d.root)], "no-current-revision")  # nothing written yet
    assert dl(["create", str(d.root)], runs)[0] == 0
    attempt(["approve", str(d.root), "--file", "appendix"], "malformed-transition")
    attempt(["approve", str(d.root), "--why", "looks good"], "malformed-transition")  # approve and reject
    attempt(["reject", str(d.root)], "malformed-transition")  # a rejection without its reason
    attempt(["approve", str(d.root), "--file", "final"], "no-current-revision")

    held = HeldLock(d.root)  # a run holds the directory
    try:
        attempt(["approve", str(d.root)], "active-run")
    finally:
        held.release()

    original = d.design.read_bytes()
    d.design.write_bytes(original + b"\nA line added by hand.\n")  # the digest guard
    attempt(["approve", str(d.root)], "changed-since-revision")
    d.design.write_bytes(original)

    open_gate(d)
    attempt(["approve", str(d.root)], "gate-open")
    d.research_log.write_text(
        d.research_log.read_text().replace("NEEDS REVISION\n- [ ]", "NEEDS REVISION\n- [x]")
    )

    assert dl(["approve", str(d.root)], runs)[0] == 0
    attempt(["approve", str(d.root)], "already-accepted")
    attempt(["reject", str(d.root), "--why", "no"], "not-a-candidate")  # never the accepted one


def test_a_directory_that_is_not_a_design_directory_is_bad_input(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    for command in (["approve", str(plain)], ["reject", str(plain), "--why", "x"], ["status", str(plain)]):
        code, _out, err = dl(command, tmp_path / "runs")
        assert code == 2 and "no _workflow/ directory" in err and "what to do:" in err, command
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain"]


def test_a_run_that_did_not_pass_is_not_approvable(tmp_path: Path, actor: str) -> None:
    d, runs = stamped_repo(tmp_path), tmp_path / "runs"
    args = ["--old", "never less than one.", "--new", "never less than one, as implementation-plan.md says."]
    code, run, _ = dl(["edit", str(d.root), "--kind", "content-edit", *args], runs)
    assert code == 0 and run["outcome"] == "SHOULD-FIX REMAINS"
    before = everything(d, runs)
    code, out, err = dl(["approve", str(d.root)], runs)
    refused(code, out, err, "required-fix-open")
    assert "SHOULD-FIX REMAINS" in err and "dsc-reverse-ref" in err  # the open findings, named
    assert everything(d, runs) == before


def test_a_later_acceptance_supersedes_and_a_rejection_keeps_the_accepted(tmp_path: Path, actor: str) -> None:
    d, runs = stamped_repo(tmp_path), tmp_path / "runs"
    edit = ["edit", str(d.root), "--kind", "content-edit"]
    assert dl([*edit, "--old", "never less than one", "--new", "at least one second"], runs)[0] == 0
    assert dl(["approve", str(d.root)], runs)[0] == 0
    assert dl([*edit, "--old", "at least one second", "--new", "one second or more"], runs)[0] == 0
    code, out, _ = dl(["approve", str(d.root)], runs)
    assert code == 0 and out["superseded"] == {"design": 1}
    states = {r["number"]: r["state"] for r in dl(["status", str(d.root)], runs)[1]["files"][0]["revisions"]}
    assert states == {1: "superseded", 2: "accepted"}

    assert dl([*edit, "--old", "one second or more", "--new", "a second or more"], runs)[0] == 0
    code, out, err = dl(["reject", str(d.root), "--why", "the wording was better before"], runs)
    assert code == 0, err
    status = dl(["status", str(d.root)], runs)[1]
    design = status["files"][0]
    assert {r["number"]: r["state"] for r in design["revisions"]} == {
        1: "superseded",
        2: "accepted",
        3: "rejected",
    }
    assert design["accepted"]["number"] == 2
    assert [g["gap"] for g in design["gaps"]] == ["revision-rejected"]
    assert "the wording was better before" in design["gaps"][0]["message"]
    code, out, err = dl(["approve", str(d.root)], runs)
    refused(code, out, err, "revision-rejected")
    assert [(r.action, r.number) for r in parse_approvals(d.root / NAME)] == [
        ("accepted", 1),
        ("accepted", 2),
        ("rejected", 3),
    ]


def test_two_concurrent_approvals_one_wins_the_other_is_refused_by_name(tmp_path: Path, actor: str) -> None:
    d, runs = fresh(tmp_path), tmp_path / "runs"
    assert dl(["create", str(d.root)], runs)[0] == 0
    command = [
        sys.executable,
        "-m",
        "pipeline.cli",
        "approve",
        str(d.root),
        "--runs-dir",
        str(runs),
        "--json",
    ]
    procs = [
        subprocess.Popen(command, cwd=d.repo_root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    results = [(p.wait(timeout=120), p.communicate()) for p in procs]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 6], results
    loser = next(out for code, (out, _) in results if code == 6)
    assert any(f'"name": "{n}"' in loser for n in ("active-run", "already-accepted")), loser
    assert len(parse_approvals(d.root / NAME)) == 1


def test_a_design_frozen_by_phase_4_refuses_interactive_edits_unless_unfrozen(tmp_path: Path) -> None:
    d, runs = stamped_repo(tmp_path), tmp_path / "runs"
    d.final.write_text("# Final\n")
    for kind, extra in (
        ("content-edit", ["--old", "never less than one", "--new", "at least one second"]),
        ("mechanics-edit", ["--instruction", "add a note"]),
        ("design-sync", []),
    ):
        before = everything(d, runs)
        code, out, err = dl(["edit", str(d.root), "--kind", kind, *extra], runs)
        refused(code, out, err, "design-frozen")
        assert "--unfreeze" in err and everything(d, runs) == before
    code, out, err = dl(
        [
            "edit",
            str(d.root),
            "--kind",
            "content-edit",
            "--old",
            "never less than one",
            "--new",
            "one",
            "--unfreeze",
        ],
        runs,
    )
    assert code == 0 and out["outcome"] == "PASS", err
    assert d.final.read_text() == "# Final\n"


def test_the_actor_is_git_s_user_email_else_the_os_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import getpass

    from pipeline.runs.revisions import actor as who

    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    config = tmp_path / "gitconfig"
    config.write_text(f"[user]\n\temail = {ACTOR}\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    assert who(tmp_path) == ACTOR
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-such-config"))
    assert who(tmp_path) == getpass.getuser()
