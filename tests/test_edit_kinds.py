"""Each interactive kind on the example, through the CLI: what it changes, what it reads, what it logs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import STAMP, run_cli
from editkit import edit, entry_text, kinds_logged, stamped_repo

from pipeline.formats.design_dir import DesignDir
from pipeline.formats.design_doc import load_design
from pipeline.formats.stamp import has_stamp
from pipeline.formats.sync_delta import baseline_path


def names(path: Path) -> list[str]:
    return [s.name for s in load_design(path).level2()]


def test_content_edit_reads_the_bounded_scope_and_keeps_line_1(tmp_path: Path) -> None:
    d = stamped_repo(tmp_path)
    code, out, _ = edit(
        d, tmp_path, "content-edit", "--old", "never less than one", "--new", "at least one second"
    )
    assert code == 0 and out["outcome"] == "PASS"
    assert out["scope"]["cold_read"] == "bounded" and out["scope"]["target"] == "design"
    assert out["scope"]["sections"] == [
        "Buckets per tenant and route",
        "Core Concepts",
        "Bucket state in Redis",
        "Overview",
    ]
    text = d.design.read_text()
    assert (
        text.startswith(STAMP + "\n") and "at least one second" in text and "never less than one" not in text
    )
    entry = entry_text(d, out["review_log_entry"])
    assert "**Mechanical checks** (target=design): PASS" in entry
    assert "**Cold-read** (scope: bounded): PASS (comprehension-review, readability-auditor)" in entry
    assert '§"Buckets per tenant and route"' in entry and "Working-mode counter" not in entry


def test_section_add_reads_the_new_section_overview_and_core_concepts(tmp_path: Path) -> None:
    d = stamped_repo(tmp_path)
    body = tmp_path / "section.md"
    body.write_text(
        "**TL;DR:** Limits come from the service settings.\n\nEach route sets a capacity and a rate.\n"
    )
    code, out, _ = edit(
        d,
        tmp_path,
        "section-add",
        "--section",
        "Configuration",
        "--content",
        str(body),
        "--after",
        "Bucket state in Redis",
    )
    assert code == 0 and out["outcome"] == "PASS"
    assert out["scope"]["sections"] == ["Configuration", "Overview", "Core Concepts"]
    order = names(d.design)
    assert order.index("Configuration") == order.index("Bucket state in Redis") + 1
    assert d.design.read_text().startswith(STAMP + "\n")


def test_section_remove_drops_its_full_design_references(tmp_path: Path) -> None:
    d = stamped_repo(tmp_path)
    code, out, _ = edit(d, tmp_path, "section-remove", "--section", "When Redis is unreachable")
    assert code == 0 and out["outcome"] == "PASS" and out["scope"]["cold_read"] == "whole-doc"
    assert "When Redis is unreachable" not in names(d.design)
    plan = d.plan.read_text()
    assert (
        '**Full design:** design.md §"Buckets per tenant and route"\n' in plan
        and '§"When Redis is unreachable"' not in plan
    )
    track2 = (d.plan_dir / "track-2.md").read_text()
    assert (
        '§"When Redis is unreachable"' not in track2
        and '**Full design:** design.md §"Buckets per tenant and route"' in track2
    )
    assert "Removed 2 **Full design** reference(s)" in entry_text(d, out["review_log_entry"])


def test_section_remove_can_repoint_references(tmp_path: Path) -> None:
    d = stamped_repo(tmp_path)
    code, out, _ = edit(
        d,
        tmp_path,
        "section-remove",
        "--section",
        "When Redis is unreachable",
        "--to",
        "Buckets per tenant and route",
    )
    assert code == 0, out
    plan = d.plan.read_text()
    assert (
        '**Full design:** design.md §"Buckets per tenant and route", design.md §"Buckets per tenant and route"'
        in plan
    )


def test_section_rename_propagates_to_the_plan_and_every_track(tmp_path: Path) -> None:
    d = stamped_repo(tmp_path)
    track1 = (d.plan_dir / "track-1.md").read_bytes()
    code, out, _ = edit(
        d,
        tmp_path,
        "section-rename",
        "--section",
        "Buckets per tenant and route",
        "--to",
        "How a request is limited",
    )
    assert code == 0 and out["outcome"] == "PASS" and out["scope"]["cold_read"] == "whole-doc"
    assert "How a request is limited" in names(d.design) and "Buckets per tenant and route" not in names(
        d.design
    )
    plan = d.plan.read_text()
    assert 'design.md §"How a request is limited", design.md §"When Redis is unreachable"' in plan
    assert '**Full design:** design.md §"How a request is limited"' in (d.plan_dir / "track-2.md").read_text()
    assert (d.plan_dir / "track-1.md").read_bytes() == track1
    assert run_cli(["check", str(d.root)]).code == 0


def test_section_move_changes_the_order_only(tmp_path: Path) -> None:
    d = stamped_repo(tmp_path)
    before = d.design.read_text()
    code, out, _ = edit(
        d,
        tmp_path,
        "section-move",
        "--section",
        "Buckets per tenant and route",
        "--after",
        "When Redis is unreachable",
    )
    assert code == 0 and out["outcome"] == "PASS" and out["scope"]["cold_read"] == "whole-doc"
    assert names(d.design)[2:5] == [
        "Bucket state in Redis",
        "When Redis is unreachable",
        "Buckets per tenant and route",
    ]
    assert sorted(d.design.read_text().splitlines()) == sorted(before.splitlines())


def test_structural_rewrite_that_drops_a_referenced_section_ends_blocker_remains(tmp_path: Path) -> None:
    d = stamped_repo(tmp_path)
    text = d.design.read_text().split("\n", 1)[1]
    cut = text.index("## When Redis is unreachable")
    rewritten = tmp_path / "rewrite.md"
    rewritten.write_text(text[:cut] + text[text.index("## Decision Records") :])
    code, out, _ = edit(d, tmp_path, "structural-rewrite", "--content", str(rewritten))
    assert code == 1 and out["outcome"] == "BLOCKER REMAINS"
    assert {f["rule"] for f in out["findings"]} == {"dsc-full-design-link"}
    assert d.design.read_text().startswith(STAMP + "\n")
    entry = entry_text(d, out["review_log_entry"])
    assert "SKIPPED — mechanical blockers remained" in entry and "not the editor's to fix" in entry
    assert out["rounds"] == 3
    assert "- warning: the budget is spent (3 of 3 rounds) with blockers remaining; the partial edit" in entry


def test_length_trigger_crossing_creates_and_stamps_the_companion(tmp_path: Path) -> None:
    d = stamped_repo(tmp_path)
    code, out, _ = edit(d, tmp_path, "length-trigger-crossing")
    assert code == 0 and out["outcome"] == "PASS" and out["scope"]["target"] == "both"
    assert d.design.read_text().startswith(STAMP + "\n")
    assert has_stamp(d.mechanics) and d.mechanics.read_text().split("\n", 1)[0] != STAMP
    body = [s.name for s in load_design(d.design).body_sections()]
    assert names(d.mechanics) == body
    design, mechanics = d.design.read_text(), d.mechanics.read_text()
    for name in body:
        assert f'**Mechanics:** design-mechanics.md §"{name}"' in design
    moved = "A refused request gets status 429. Its"
    assert moved in mechanics and moved not in design
    assert "**TL;DR:**" not in mechanics and design.count("**TL;DR:**") == len(body)
    assert baseline_path(d.workflow).read_bytes() == d.mechanics.read_bytes()


def test_mechanics_edit_runs_no_review_and_logs_the_counter(tmp_path: Path) -> None:
    d = stamped_repo(tmp_path)
    edit(d, tmp_path, "length-trigger-crossing")
    design = d.design.read_bytes()
    code, out, _ = edit(
        d,
        tmp_path,
        "mechanics-edit",
        "--old",
        "so idle tenants cost no memory",
        "--new",
        "so an idle tenant costs no memory",
    )
    assert code == 0 and out["outcome"] == "PASS" and out["scope"]["cold_read"] == "skipped"
    assert d.design.read_bytes() == design and "an idle tenant costs" in d.mechanics.read_text()
    entry = entry_text(d, out["review_log_entry"])
    assert "mechanics-edit (design-mechanics.md)" in entry
    assert "**Mechanical checks** (target=mechanics): PASS" in entry
    assert (
        "**Cold-read** (scope: skipped): SKIPPED — mechanics-edit defers cold-read to next design-sync"
        in entry
    )
    assert "**Working-mode counter**: 1 mechanics-edits since last sync" in entry
    spawns = [
        json.loads(line)
        for line in (tmp_path / "runs" / out["run_id"] / "events.jsonl").read_text().splitlines()
    ]
    assert not [e for e in spawns if e["type"] == "spawn"]


def test_design_sync_redistills_and_runs_both_cold_reads(tmp_path: Path) -> None:
    d = stamped_repo(tmp_path)
    edit(d, tmp_path, "length-trigger-crossing")
    edit(
        d,
        tmp_path,
        "mechanics-edit",
        "--old",
        "so idle tenants cost no memory",
        "--new",
        "so an idle tenant costs no memory",
    )
    code, out, _ = edit(d, tmp_path, "design-sync")
    assert code == 0 and out["outcome"] == "PASS", out
    assert "so an idle tenant costs no memory" in d.design.read_text() and d.design.read_text().startswith(
        STAMP
    )
    assert out["sync"]["changes"] == ['changed §"Bucket state in Redis"'] and not out["sync"]["zero"]
    entry = entry_text(d, out["review_log_entry"])
    assert "**Working-mode counter**: 0 mechanics-edits since last sync" in entry
    assert "(comprehension-review, readability-auditor)" in entry and "(target=both)" in entry
    folder = d.reviews / out["run_id"]  # the run's own params files
    params = json.loads(next(folder.glob("r1-readability-auditor*.json")).read_text())
    assert "slice_count" not in params and "total_lines" not in params and params["slice"][0] == 1
    comprehension = json.loads((folder / "r1-comprehension-review.json").read_text())
    assert "re-distills design.md" in comprehension["note"] and comprehension["scope"] == "whole-doc"
    summary = (tmp_path / "runs" / out["run_id"] / "summary.md").read_text()
    assert "## What changed in mechanics since the last sync" in summary


def test_a_zero_delta_sync_logs_one_line_and_reviews_nothing(tmp_path: Path) -> None:
    d = stamped_repo(tmp_path)
    edit(d, tmp_path, "length-trigger-crossing")
    design = d.design.read_bytes()
    code, out, _ = edit(d, tmp_path, "design-sync")
    assert (
        code == 0
        and out["outcome"] == "PASS"
        and out["sync"]["zero"]
        and out["scope"]["cold_read"] == "skipped"
    )
    assert d.design.read_bytes() == design
    body = [line for line in entry_text(d, out["review_log_entry"]).splitlines()[1:] if line.strip()]
    assert body[0].startswith("<!-- designloop-run:") and body[1].startswith("<!-- designloop-wrote:")
    assert body[2].startswith("**Zero-delta sync**:") and "SKIPPED" in body[2]
    assert body[3] == "**Working-mode counter**: 0 mechanics-edits since last sync"
    assert len(body) == 5 and body[4].startswith("<!-- designloop-chain:")  # its tamper evidence
    events = (tmp_path / "runs" / out["run_id"] / "events.jsonl").read_text()
    assert '"type": "spawn"' not in events


SECTION = "Buckets per tenant and route"


def instruct(d: DesignDir, tmp_path: Path, instruction: str) -> tuple[int, dict[str, Any], str]:
    """A content-edit of ``SECTION`` by ``instruction`` (the offline inline editor), with --json."""
    return edit(d, tmp_path, "content-edit", "--section", SECTION, "--instruction", instruction)


def test_an_instruction_goes_to_the_inline_editor(tmp_path: Path) -> None:
    d = stamped_repo(tmp_path)
    code, out, _ = instruct(d, tmp_path, 'replace "never less than one" with "at least one second"')
    assert code == 0 and out["outcome"] == "PASS"
    assert "at least one second" in d.design.read_text() and d.design.read_text().startswith(STAMP)
    assert "Carried out" in entry_text(d, out["review_log_entry"])


def test_a_partly_declined_instruction_never_ends_a_plain_pass(tmp_path: Path) -> None:
    d = stamped_repo(tmp_path)
    code, out, _ = instruct(
        d, tmp_path, 'replace "never less than one" with "at least one second"; make it friendlier'
    )
    assert code == 0 and out["outcome"] == "PASS"
    assert out["declined"] and out["declined"][0].startswith("make it friendlier")
    assert "at least one second" in d.design.read_text()
    entry = entry_text(d, out["review_log_entry"])
    assert "- declined: make it friendlier" in entry
    assert "(PASS, 1 part of the instruction declined)" in entry
    summary = (tmp_path / "runs" / out["run_id"] / "summary.md").read_text()
    assert "\n## Outcome\n\nPASS — declined: make it friendlier" in summary
    events = (tmp_path / "runs" / out["run_id"] / "events.jsonl").read_text()
    assert '"line": "PASS — declined: make it friendlier' in events
    # The line a person reads at the end of the run says so too.
    again = 'replace "at least one second" with "one second or more"; make it shorter'
    args = ["edit", str(d.root), "--kind", "content-edit", "--section", SECTION, "--instruction", again]
    result = run_cli([*args, "--runs-dir", str(tmp_path / "runs")])
    lines = result.out.strip().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("run ") and ": PASS" in line)
    assert result.code == 0 and ": PASS, 1 part of the instruction declined" in lines[at], lines
    assert lines[at + 1].startswith("declined: make it shorter"), lines


def test_an_instruction_no_rule_can_carry_out_changes_nothing_and_says_so(tmp_path: Path) -> None:
    d = stamped_repo(tmp_path)
    before = d.design.read_bytes()
    code, out, _ = instruct(d, tmp_path, "make it friendlier")
    assert code == 1 and out["outcome"] == "BLOCKER REMAINS"
    assert [f["rule"] for f in out["findings"]] == ["edit-not-applied"]
    assert out["declined"] == ["make it friendlier (needs judgement: not a request a rule can carry out)"]
    assert d.design.read_bytes() == before
    entry = entry_text(d, out["review_log_entry"])
    assert "SKIPPED — the edit was not applied" in entry
    # The known issue: the entry said the budget was spent and a partial edit stayed on disk.
    assert "- warning: the edit was not applied, and no file was changed" in entry
    assert "budget" not in entry and "partial edit" not in entry


def test_the_fix_loop_applies_an_auto_applicable_blocker_exactly(tmp_path: Path) -> None:
    d = stamped_repo(tmp_path)
    code, out, _ = edit(
        d, tmp_path, "content-edit", "--old", "never less than one.", "--new", "never less than one (per D6)."
    )
    assert code == 0 and out["outcome"] == "PASS" and out["rounds"] == 2
    assert "(per D6)" not in d.design.read_text() and "never less than one." in d.design.read_text()
    assert "**Iterations**: 2 of 3 (PASS)" in entry_text(d, out["review_log_entry"])


def test_should_fix_remains_exits_0_with_a_warning_or_1_when_asked(tmp_path: Path) -> None:
    d = stamped_repo(tmp_path)
    args = ["--old", "never less than one.", "--new", "never less than one, as implementation-plan.md says."]
    code, out, _ = edit(d, tmp_path, "content-edit", *args)
    assert code == 0 and out["outcome"] == "SHOULD-FIX REMAINS" and out["rounds"] == 3
    assert "dsc-reverse-ref" in {f["rule"] for f in out["findings"]}
    assert "debt:" in entry_text(d, out["review_log_entry"])
    d2 = stamped_repo(tmp_path / "second")
    code, out, _ = edit(d2, tmp_path / "second", "content-edit", *args, "--fail-on", "should-fix")
    assert code == 1 and out["outcome"] == "SHOULD-FIX REMAINS"


def test_status_runs_and_resume_work_on_an_edit(tmp_path: Path) -> None:
    d = stamped_repo(tmp_path)
    _, out, _ = edit(
        d, tmp_path, "content-edit", "--old", "never less than one", "--new", "at least one second"
    )
    runs = ["--runs-dir", str(tmp_path / "runs"), "--json"]
    status = json.loads(run_cli(["status", out["run_id"], *runs]).out)
    assert status["kind"] == "content-edit" and status["outcome"] == "PASS" and status["state"] == "finished"
    listed = json.loads(run_cli(["runs", *runs]).out)["runs"]
    assert [r["run_id"] for r in listed] == [out["run_id"]]
    again = run_cli(["resume", out["run_id"], *runs])
    assert again.code == 0 and json.loads(again.out)["review_log_entry"] == out["review_log_entry"]
    assert kinds_logged(d) == ["content-edit"]


def test_an_edit_whose_cold_read_never_answers_ends_inconclusive(tmp_path: Path) -> None:
    import asyncio

    from graphkit import finding, malformed, returns

    from pipeline.agents.session import SessionOptions
    from pipeline.errors import ExitCode
    from pipeline.formats.edit_request import EditRequest
    from pipeline.graph.runner import execute
    from pipeline.offline.driver import engine_model
    from pipeline.runs.setup import plan_edit, start_run

    d = stamped_repo(tmp_path)
    request = EditRequest(
        kind="content-edit",
        section="Bucket state in Redis",
        old="idle tenants",
        new="idle tenants and routes",
    )
    run = start_run(plan_edit(request, d.root, SessionOptions(runs_dir=tmp_path / "runs")))
    broken = returns(malformed("PASS", finding("cr-term-order", section="Overview")))

    def configure(deps: Any) -> None:
        deps.runtime.model_overrides["comprehension-review"] = engine_model("comprehension-review", broken)

    result = asyncio.run(execute(run, resume=False, configure=configure))
    assert result.state is not None and result.state.outcome is not None
    assert result.state.outcome.verdict == "INCONCLUSIVE" and result.exit_code == ExitCode.INCONCLUSIVE
    assert "INCONCLUSIVE" in entry_text(d, 1)


def test_an_edits_json_carries_its_suggestions_and_the_entry_names_every_role(tmp_path: Path) -> None:
    d = stamped_repo(tmp_path)
    code, out, err = edit(
        d,
        tmp_path,
        "content-edit",
        "--section",
        "Overview",
        "--old",
        "and told when to retry.",
        "--new",
        # The document now spells out one acronym (WBT), so the one it leaves undefined is listed.
        "and told when to retry through the QZX channel of the Wide Bridge Table (WBT).",
    )
    assert code == 0, err
    suggestion = [f for f in out["findings"] if f["severity"] == "suggestion"]
    assert suggestion and suggestion[0]["rule"] == "cr-term-order" and "QZX" in suggestion[0]["message"]
    assert suggestion[0] | {"message": ""} == suggestion[0] | {
        "message": "",
        "role": "comprehension-review",
        "rounds": [1],
        "status": "left",
        "blocking": False,
    }
    assert out["blocking"] == 0
    entry = entry_text(d, 1)
    assert (
        "**Rounds**:\n- round 1: mechanical PASS; readability-auditor PASS; comprehension-review 1 suggestion"
        in entry
    )
