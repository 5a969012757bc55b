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
