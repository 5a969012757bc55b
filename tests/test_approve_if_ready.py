"""--approve-if-ready: the run's revision is accepted in the same invocation only when every
condition holds, checked in order and stopping at the first that fails; a refused approval
leaves the run's outcome as it was (docs/lifecycle.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from batchkit import batch_repo, run_batch
from batchkit import open_gate as open_batch_gate
from conftest import run_cli
from editkit import stamped_repo
from lifecyclekit import dl, fresh, open_gate

from pipeline.errors import TransitionRefused
from pipeline.formats.approvals import NAME, parse_approvals
from pipeline.formats.design_dir import open_design_dir
from pipeline.runs.lifecycle import approve_run
from pipeline.runs.lock import LockLost
from pipeline.runs.revisions import SqliteRevisions

SHOULD_FIX = [
    "--old",
    "never less than one.",
    "--new",
    "never less than one, as implementation-plan.md says.",
]
EDIT = ["--old", "never less than one", "--new", "at least one second"]


def test_create_approve_if_ready_accepts_a_pass_in_the_same_invocation(tmp_path: Path, actor: str) -> None:
    d, runs = fresh(tmp_path), tmp_path / "runs"
    code, out, err = dl(["create", str(d.root), "--approve-if-ready"], runs)
    assert code == 0 and out["outcome"] == "PASS", err
    assert out["approval"]["approved"] is True
    [record] = parse_approvals(d.root / NAME)
    assert (record.number, record.run_id, record.requested_by, record.actor) == (
        1,
        out["run_id"],
        "cli",
        actor,
    )
    # A run that leaves the accepted bytes records no new candidate: nothing more to approve.
    shown = run_cli(["create", str(d.root), "--runs-dir", str(runs), "--approve-if-ready", "--force"])
    assert shown.code == 0 and "approved already: nothing to record" in shown.out  # people see it too
    assert len(parse_approvals(d.root / NAME)) == 1


def test_a_paused_run_leaves_no_revision_so_the_approval_stops_first(tmp_path: Path) -> None:
    d, runs = fresh(tmp_path), tmp_path / "runs"
    open_gate(d)
    code, out, _ = dl(["create", str(d.root), "--approve-if-ready"], runs)
    assert code == 3 and out["outcome"] == "PAUSED"  # the run's own exit and outcome stand
    assert out["approval"]["error"]["name"] == "no-current-revision"
    assert not (d.root / NAME).exists()


def test_a_paused_run_resumed_with_approve_if_ready_is_accepted_once_it_passes(
    tmp_path: Path, actor: str
) -> None:
    d, runs = fresh(tmp_path), tmp_path / "runs"
    open_gate(d)
    code, paused, _ = dl(["create", str(d.root)], runs)
    assert code == 3 and paused["outcome"] == "PAUSED"
    d.research_log.write_text(d.research_log.read_text().replace("- [ ] blocker:", "- [x] blocker:"))
    code, out, err = dl(["resume", paused["run_id"], "--approve-if-ready"], runs)
    assert code == 0 and out["outcome"] == "PASS" and out["approval"]["approved"] is True, err
    [record] = parse_approvals(d.root / NAME)
    assert (record.file, record.number, record.run_id) == ("design", 1, paused["run_id"])


def test_final_approve_if_ready_accepts_design_final_md(tmp_path: Path, actor: str) -> None:
    d, runs = fresh(tmp_path), tmp_path / "runs"
    assert dl(["create", str(d.root), "--approve-if-ready"], runs)[0] == 0
    code, out, err = dl(["final", str(d.root), "--approve-if-ready"], runs)
    assert code == 0 and out["outcome"] == "PASS" and out["approval"]["approved"] is True, err
    records = parse_approvals(d.root / NAME)
    assert [(r.file, r.number, r.run_id) for r in records] == [
        ("design", 1, records[0].run_id),
        ("final", 1, out["run_id"]),
    ]
    assert dl(["ready", str(d.root)], runs)[0] == 0


def test_an_edit_that_passes_with_the_gate_open_is_refused_gate_open(tmp_path: Path) -> None:
    d, runs = stamped_repo(tmp_path), tmp_path / "runs"
    open_gate(d)
    code, out, _ = dl(["edit", str(d.root), "--kind", "content-edit", *EDIT, "--approve-if-ready"], runs)
    assert out["outcome"] == "PASS" and out["approval"]["error"]["name"] == "gate-open"
    assert code == 6  # the run exited 0; the exit says the approval was refused
    assert not (d.root / NAME).exists()
    status = dl(["status", str(d.root)], runs)[1]
    assert status["files"][0]["current"]["state"] == "candidate"  # the revision is recorded all the same


def test_should_fix_remains_is_not_approvable(tmp_path: Path) -> None:
    d, runs = stamped_repo(tmp_path), tmp_path / "runs"
    code, out, _ = dl(
        ["edit", str(d.root), "--kind", "content-edit", *SHOULD_FIX, "--approve-if-ready"], runs
    )
    assert out["outcome"] == "SHOULD-FIX REMAINS" and out["approval"]["error"]["name"] == "required-fix-open"
    assert code == 6 and not (d.root / NAME).exists()


def test_the_first_failing_condition_is_the_one_named(tmp_path: Path) -> None:
    """A blocker left and the gate open: the outcome comes before the gate."""
    d, runs = stamped_repo(tmp_path), tmp_path / "runs"
    open_gate(d)
    text = d.design.read_text().split("\n", 1)[1]
    cut = text.index("## When Redis is unreachable")
    rewritten = tmp_path / "rewrite.md"
    rewritten.write_text(text[:cut] + text[text.index("## Decision Records") :])
    args = [
        "edit",
        str(d.root),
        "--kind",
        "structural-rewrite",
        "--content",
        str(rewritten),
        "--approve-if-ready",
    ]
    code, out, _ = dl(args, runs)
    assert out["outcome"] == "BLOCKER REMAINS" and code == 1  # the run's own exit: 1
    assert out["approval"]["error"]["name"] == "required-fix-open"
    assert "BLOCKER REMAINS" in out["approval"]["error"]["message"]


class Lost:
    """A lock the run no longer holds."""

    def check(self) -> None:
        raise LockLost("run x lost its lock on this design directory (test)")


@pytest.mark.parametrize(
    ("spoil", "name"),
    [
        ("hand-edit", "changed-since-revision"),
        ("hand-edit+gate", "changed-since-revision"),
        ("gate", "gate-open"),
        ("lock", "active-run"),
    ],
)
def test_approve_run_stops_at_each_failing_condition_in_order(tmp_path: Path, spoil: str, name: str) -> None:
    d, runs = stamped_repo(tmp_path), tmp_path / "runs"
    code, out, _ = dl(["edit", str(d.root), "--kind", "content-edit", *EDIT], runs)
    assert code == 0 and out["outcome"] == "PASS"
    if "hand-edit" in spoil:
        d.design.write_text(d.design.read_text() + "\nBy hand.\n")
    if "gate" in spoil:
        open_gate(d)
    lock = Lost() if spoil == "lock" else None
    with pytest.raises(TransitionRefused) as caught:
        approve_run(open_design_dir(d.root), [SqliteRevisions(runs)], out["run_id"], lock, "cli")  # type: ignore[arg-type]
    assert caught.value.name == name
    assert not (d.root / NAME).exists()


def test_batch_approve_if_ready_approves_each_pass_and_names_each_refusal(tmp_path: Path, actor: str) -> None:
    repo = batch_repo(tmp_path, ["a", "b"])
    open_batch_gate(repo / "docs" / "adr" / "b")
    batch = run_batch(repo, ["a", "b"], approve_if_ready=True)
    rows = {Path(r.directory).name: r for r in batch.rows}
    a, b = rows["a"].approval, rows["b"].approval
    assert a is not None and b is not None
    assert (rows["a"].outcome, rows["a"].exit_code, a["approved"]) == ("PASS", 0, True)
    assert rows["b"].outcome == "PAUSED" and b["error"]["name"] == "no-current-revision"
    assert rows["b"].exit_code == 3
    [record] = parse_approvals(repo / "docs" / "adr" / "a" / NAME)
    assert (record.requested_by, record.actor) == ("batch", actor)
    [revision] = SqliteRevisions(repo / "runs").revisions("docs/adr/a")
    assert revision.requested_by == "batch" and revision.number == record.number == 1
    assert not (repo / "docs" / "adr" / "b" / NAME).exists()
    assert batch.to_json()["directories"][0]["approval"]["approved"] is True


def test_an_approvals_file_that_cannot_take_the_approval_stops_the_run_before_it_starts(
    tmp_path: Path,
) -> None:
    d, runs = fresh(tmp_path), tmp_path / "runs"
    (d.root / NAME).symlink_to(d.research_log)
    code, out, err = dl(["create", str(d.root), "--approve-if-ready"], runs)
    assert code == 2 and "design-approvals.md" in err and "symbolic link" in err and out == {}
    assert not d.design.exists() and not d.mutations.exists() and not runs.exists()
    (d.root / NAME).unlink()
    (d.root / NAME).write_text("# Approvals\n\n## yesterday — accepted — design r1\n")
    code, _, err = dl(
        ["edit", str(d.root), "--kind", "content-edit", "--old", "a", "--new", "b", "--approve-if-ready"],
        runs,
    )
    assert code == 2 and f"{NAME}:3: malformed approvals file" in err


DECLINES = 'replace "owns a token bucket" with "has a token bucket"; make it friendlier'


def test_a_partly_declined_edit_is_not_approved_if_ready_and_every_record_names_the_declined_part(
    tmp_path: Path, actor: str
) -> None:
    """A PASS with part of the instruction declined is the user's to accept: --approve-if-ready
    refuses it by name (exit 6), the outcome stands, and status and the approvals record say
    what it was, never a plain PASS."""
    d, runs = fresh(tmp_path), tmp_path / "runs"
    assert dl(["create", str(d.root), "--approve-if-ready"], runs)[0] == 0
    section = ["--kind", "content-edit", "--section", "Limit with a token bucket per tenant and route"]
    args = ["edit", str(d.root), *section, "--instruction", DECLINES, "--approve-if-ready"]
    code, out, err = dl(args, runs)
    assert code == 6 and out["outcome"] == "PASS" and out["declined"], err
    error = out["approval"]["error"]
    assert error["name"] == "instruction-declined" and error["exit_code"] == 6
    assert "ended PASS, 1 part of the instruction declined: make it friendlier (needs" in error["message"]
    assert "designloop approve " in error["hint"] and "Mutation 2" in error["hint"]
    assert len(parse_approvals(d.root / NAME)) == 1, "only the create's approval"
    status = run_cli(["status", str(d.root), "--runs-dir", str(runs)]).out
    current = next(line for line in status.splitlines() if line.strip().startswith("current:"))
    assert f"run {out['run_id']} (content-edit, PASS, 1 part of the instruction declined)" in current
    # Accepted by a person who read it: the record says what was accepted.
    code, _, err = dl(["approve", str(d.root)], runs)
    assert code == 0, err
    record = parse_approvals(d.root / NAME)[-1]
    assert record.evidence.startswith(
        f"run {out['run_id']} (content-edit, PASS, 1 part of the instruction declined), review log Mutation"
    )
    # People see the refusal, and the next step names the declined part.
    args = ["edit", str(d.root), *section, "--approve-if-ready", "--instruction"]
    again = 'replace "has a token bucket" with "holds a token bucket"; make it shorter'
    shown = run_cli([*args, again, "--runs-dir", str(runs)])
    assert shown.code == 6
    assert "not approved: " in shown.out and ": instruction-declined: " in shown.out
    nxt = next(line for line in shown.out.splitlines() if line.startswith("next:"))
    assert nxt.startswith(
        "next: read the part of the instruction the run declined (above); designloop approve"
    )
    assert "accepts design.md r3 as it is, or designloop edit " in nxt, nxt
