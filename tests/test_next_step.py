"""Every run ends with what to do next, in one line: a candidate is said to be one and where it
goes (approve, then final); final on a design nobody approved says so; a paused run says how it
goes on."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import EXAMPLE_OUTPUTS, ROOT, run_cli

DIR = "examples/docs/adr/0001-request-rate-limiter"


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    shutil.copytree(ROOT / "examples", repo / "examples", ignore=EXAMPLE_OUTPUTS)
    return repo


def test_a_run_ends_with_the_next_step_from_candidate_to_approval_to_final(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    created = run_cli(["create", DIR, "-q"], cwd=repo)
    assert created.code == 0, created.err
    last = created.out.strip().splitlines()[-1]
    assert last == (
        f"next: designloop approve {DIR} accepts design.md r1 "
        "(a candidate: the revision this run left, not yet accepted)"
    )
    approved = run_cli(["approve", DIR], cwd=repo)
    assert approved.code == 0, approved.err
    assert approved.out.strip().splitlines()[-1] == (
        f"next: commit design-approvals.md; build what the design describes, then designloop final {DIR}"
    )
    final = run_cli(["final", DIR, "-q"], cwd=repo)
    assert final.code == 0 and "warning" not in final.err  # the design it finalises was approved
    assert (
        final.out.strip()
        .splitlines()[-1]
        .startswith(f"next: designloop approve {DIR} accepts design-final.md r1")
    )


def test_final_on_a_design_nobody_approved_says_so(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    assert run_cli(["create", DIR, "-q"], cwd=repo).code == 0
    final = run_cli(["final", DIR, "-q"], cwd=repo)
    assert final.code == 0
    assert "warning: design.md was never approved; final runs on it as it is" in final.err


def test_a_paused_run_says_how_it_goes_on_with_the_flags_it_was_given(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    log = repo / DIR / "_workflow" / "research-log.md"
    text = log.read_text(encoding="utf-8")
    log.write_text(text.replace("### 2026-11-22 — PASS\n", "").replace("- [x] blocker:", "- [ ] blocker:"))
    runs = tmp_path / "elsewhere"
    paused = run_cli(["create", DIR, "-q", "--runs-dir", str(runs)], cwd=repo)
    assert paused.code == 3
    last = paused.out.strip().splitlines()[-1]
    assert last.startswith("next: resolve the research log's adversarial gate, then designloop resume ")
    assert last.endswith(f"--runs-dir {runs}")
