"""The offline engine: planted-defect recall, clean documents, determinism, the author's rounds."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from agentkit import make_repo, runtime
from conftest import run_cli
from quality import build_base, evaluate, table

from pipeline.agents.review import review_once
from pipeline.agents.roles import instructions_for, load_roles
from pipeline.agents.spawn import prepare
from pipeline.checks.engine import CheckRequest, run_checks
from pipeline.formats.design_dir import DesignDir
from pipeline.formats.findings import Finding
from pipeline.formats.research_log import load_research_log
from pipeline.formats.spawn_params import SpawnParams
from pipeline.settings import Limits

CORPUS = Path(__file__).parent / "corpus"


def run(d: DesignDir, role: str, **kw: Any) -> Any:
    return asyncio.run(review_once(runtime(d), role, d, Limits(), **kw))


def findings(d: DesignDir, role: str, **kw: Any) -> list[Any]:
    result = run(d, role, **kw)
    assert all(r.status == "ok" for r in result.results), [r.error for r in result.results]
    return [f for r in result.results if r.review for f in r.review.findings]


def blocking(items: list[Any]) -> list[Any]:
    return [f for f in items if f.severity in ("blocker", "should-fix")]


def test_planted_defect_recall_and_no_false_positives() -> None:
    scores = evaluate(CORPUS)
    assert sum(s.planted for s in scores.values()) >= 40, table(scores)
    assert set(scores) == {
        "readability-auditor",
        "absorption-check",
        "fidelity-check",
        "comprehension-review",
        "adversarial-review",
    }
    for role, score in scores.items():
        assert score.recall >= 0.95, (role, score.misses)
        assert score.false_positives == 0, (role, score.noise)
        assert score.clean_runs >= 1


def test_engine_is_deterministic(tmp_path: Path) -> None:
    outputs = []
    for i in range(2):
        d = build_base("example", CORPUS, tmp_path / str(i))
        text = d.design.read_text().replace(
            "The API limits", "The API basically leverages a robust way to limit"
        )
        d.design.write_text(text)
        run(d, "design-author", draft=d.root / "draft.md")
        review = run(d, "readability-auditor")
        outputs.append(
            (
                (d.root / "draft.md").read_bytes(),
                json.dumps([r.review.model_dump() for r in review.results if r.review]),
            )
        )
    assert outputs[0] == outputs[1]
    assert b"# Per-tenant request rate limiting" in outputs[0][0]


@pytest.mark.parametrize("base", ["example", "queue", "cache"])
def test_phase1_author_output_is_clean(tmp_path: Path, base: str) -> None:
    d = build_base(base, CORPUS, tmp_path)
    d.design.unlink()
    result = run(d, "design-author")
    assert result.results[0].status == "ok"
    text = d.design.read_text()
    assert not text.startswith("<!-- workflow-sha")  # the orchestrator owns the stamp
    assert run_checks(CheckRequest(design_path=d.design)) == []
    log = load_research_log(d.research_log)
    assert text.count("**Source:** research-log D") == len(log.decisions)  # a record for every decision
    if base in ("queue", "cache"):
        assert "## Core Concepts" in text  # three glossary terms
    for role in ("readability-auditor", "absorption-check", "comprehension-review"):
        assert blocking(findings(d, role)) == [], role


def test_phase4_author_drops_what_episodes_supersede(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    assert run(d, "design-author", draft=d.final).results[0].status == "ok"
    text = d.final.read_text()
    assert "workflow-sha" not in text
    assert "### D3: Local fallback replaces plain fail-open" in text
    assert "the request is allowed and a warning names" not in text
    assert "## As built" in text
    assert blocking(findings(d, "fidelity-check")) == []
    # The frozen design, presented as final, re-asserts the superseded decision.
    shutil.copy(d.design, d.final)
    assert {f.rule for f in blocking(findings(d, "fidelity-check"))} == {"fid-superseded"}


def _author_round(
    d: DesignDir, draft: Path, flagged: list[dict[str, Any]], companion: Path | None = None
) -> Any:
    roles = load_roles(d.repo_root)
    params = SpawnParams(
        role="design-author",
        kind="phase1-creation",
        round=2,
        target="both" if companion else "design",
        design_mechanics_path=str(companion.relative_to(d.repo_root)) if companion else None,
        output_path=str(draft.relative_to(d.repo_root)),
        research_log_path=str(d.research_log.relative_to(d.repo_root)),
        flagged_passages=[Finding.model_validate(f) for f in flagged],
    )
    spawn = prepare(roles["design-author"], params, d.reviews, d.repo_root)
    rt = runtime(d)
    return asyncio.run(rt.run(spawn, rt.tool_context(spawn, d.research_log, d.code_root)))


def test_later_rounds_fix_flagged_passages(tmp_path: Path) -> None:
    d = build_base("example", CORPUS, tmp_path)
    text = d.design.read_text()
    text = text.replace("The API limits how fast", "The API basically leverages a way to limit how fast")
    text = text.replace(
        "A refused request gets status 429. Its", "A refused request gets status 429 (per D6). Its"
    )
    text = text.replace("**TL;DR:** One Lua script", "One Lua script")
    text = text.replace("**Source:** research-log D2", "**Source:** research-log D1")
    d.design.write_text(text)
    flagged: list[dict[str, Any]] = [
        {
            "severity": "should-fix",
            "rule": "hs-filler",
            "section": "Overview",
            "quote": "basically",
            "message": "m",
        },
        {
            "severity": "should-fix",
            "rule": "hs-ai-tell",
            "section": "Overview",
            "quote": "leverages",
            "message": "m",
        },
        {
            "severity": "blocker",
            "rule": "dsc-parenthetical-aside",
            "section": "Buckets per tenant and route",
            "message": "m",
        },
        {
            "severity": "blocker",
            "rule": "dsc-section-shape",
            "section": "Bucket state in Redis",
            "message": "m",
        },
        {"severity": "should-fix", "rule": "abs-missing-record", "section": "D2", "message": "m"},
        {
            "severity": "should-fix",
            "rule": "cr-tldr-mismatch",
            "section": "Buckets per tenant and route",
            "message": "m",
        },
    ]
    result = _author_round(d, d.design, flagged)
    assert result.status == "ok" and "fixed 6" in result.output.summary and "left 0" in result.output.summary
    fixed = d.design.read_text()
    assert "The API uses a way to limit how fast" in fixed and "(per D6)" not in fixed
    assert run_checks(CheckRequest(design_path=d.design)) == []
    assert blocking(findings(d, "absorption-check")) == []
    assert not [f for f in findings(d, "readability-auditor") if f.rule in ("hs-filler", "hs-ai-tell")]


def test_inline_editor_edits_through_edit_and_keeps_line_one(tmp_path: Path) -> None:
    d = build_base("example", CORPUS, tmp_path)
    stamp = "<!-- workflow-sha: " + "b" * 40 + " -->"
    d.design.write_text(
        stamp + "\n" + d.design.read_text().replace("The API limits", "The API really limits")
    )
    roles = load_roles(d.repo_root)
    params = SpawnParams(
        role="inline-editor",
        kind="content-edit",
        round=1,
        output_path=str(d.design.relative_to(d.repo_root)),
        mutation_kind="content-edit",
        flagged_passages=[
            Finding(
                severity="should-fix",
                rule="hs-filler",
                section="Overview",
                quote="really",
                message="m",
            )
        ],
    )
    spawn = prepare(roles["inline-editor"], params, d.reviews, d.repo_root)
    rt = runtime(d)
    result = asyncio.run(rt.run(spawn, rt.tool_context(spawn, d.research_log, d.code_root)))
    assert result.status == "ok"
    text = d.design.read_text()
    assert text.startswith(stamp + "\n") and "The API limits" in text


def test_whole_doc_guard_trips_only_on_a_collapsed_fan_out(tmp_path: Path) -> None:
    d = build_base("example", CORPUS, tmp_path)
    d.design.write_text(d.design.read_text() + "\n".join(f"Line {i}." for i in range(400)) + "\n")
    roles = load_roles(d.repo_root)
    rt = runtime(d)

    def audit(**extra: Any) -> Any:
        params = SpawnParams(
            role="readability-auditor",
            kind="phase1-creation",
            target="design",
            target_path=str(d.design.relative_to(d.repo_root)),
            slice=(1, 470),
            **extra,
        )
        spawn = prepare(roles["readability-auditor"], params, d.reviews, d.repo_root)
        return asyncio.run(rt.run(spawn, rt.tool_context(spawn, d.research_log))).review

    collapsed = audit(slice_count=1, total_lines=473)
    assert [f.rule for f in collapsed.findings] == ["wiring-error"] and collapsed.findings[
        0
    ].severity == "blocker"
    assert "wiring-error" not in {f.rule for f in audit().findings}  # design-sync's single pass


def test_the_whole_doc_guard_trips_over_the_configured_floor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``[partition] whole_doc_floor`` is the guard's floor, for the offline auditor and in the
    instructions a model reads: a design kept as one slice on purpose (a raised
    ``single_slice_max``) is reviewed once the floor is raised with it."""
    d = make_repo(tmp_path)
    d.design.write_text(d.design.read_text() + "\n".join(f"Line {i}." for i in range(400)) + "\n")
    total = len(d.design.read_text().split("\n")) - 1
    monkeypatch.chdir(d.repo_root)
    settings = d.repo_root / "designloop.toml"
    role = load_roles(d.repo_root)["readability-auditor"]

    def rules(toml: str) -> tuple[list[str], str]:
        settings.write_text(toml)
        done = run_cli(["review", "readability-auditor", str(d.root), "--json"])
        assert done.code in (0, 1), done.err
        findings = [f for r in json.loads(done.out)["results"] for f in r["output"]["findings"]]
        guard = next((f["message"] for f in findings if f["rule"] == "wiring-error"), "")
        return [f["rule"] for f in findings], guard

    found, guard = rules("[partition]\nsingle_slice_max = 600\n")
    assert found == ["wiring-error"] and f"slice_count 1 for a {total}-line design (floor 300)" in guard
    assert "`total_lines` is over 300, do not review" in instructions_for(role, d.repo_root)
    found, guard = rules(f"[partition]\nsingle_slice_max = 600\nwhole_doc_floor = {total}\n")
    assert "wiring-error" not in found and guard == ""
    assert f"`total_lines` is over {total}, do not review" in instructions_for(role, d.repo_root)
    found, guard = rules(f"[partition]\nsingle_slice_max = 600\nwhole_doc_floor = {total - 1}\n")
    assert found == ["wiring-error"] and f"(floor {total - 1})" in guard


def test_auditor_reads_only_its_slice_and_the_anchors(tmp_path: Path) -> None:
    d = build_base("example", CORPUS, tmp_path)
    filler = "\n".join(f"Plain line number {i} about buckets." for i in range(300))
    text = d.design.read_text().replace(
        "## Decision Records", f"## Appendix\n\n**TL;DR:** Notes.\n\n{filler}\n\n## Decision Records"
    )
    # Three AI-tell words in one short section: the section's habit, reported by its slice.
    text = text.replace("The limiter protects fairness", "The robust limiter protects fairness")
    text = text.replace("When the store raises a connection", "Moreover, when the store raises a connection")
    text = text.replace("a warning names the", "a warning meticulously names the")
    d.design.write_text(text)
    audit = run(d, "readability-auditor")
    assert len(audit.results) == 2 and audit.prefix_share > 0.95
    first, second = ([f.rule for f in r.review.findings] for r in audit.results)
    assert "hs-ai-tell" in first and "hs-ai-tell" not in second
    second_params = json.loads(audit.results[1].params_path.read_text())
    assert second_params["slice"][0] > 50 and second_params["slice_count"] == 2


def test_adversarial_review_appends_a_dated_gate_entry(tmp_path: Path) -> None:
    d = build_base("queue", CORPUS, tmp_path)
    text = d.research_log.read_text().replace("**Rationale:** It is the plain word.", "**Rationale:** TBD")
    d.research_log.write_text(text)
    result = run(d, "adversarial-review")
    assert result.gate_entry is not None and "NEEDS REVISION" in result.gate_entry
    gate = load_research_log(d.research_log).gate()
    assert gate.state == "open" and "D4" in gate.open_items[0].text
    d.research_log.write_text(text.replace("**Rationale:** TBD", "**Rationale:** It is the plain word."))
    run(d, "adversarial-review")
    assert load_research_log(d.research_log).gate().state == "resolved"


def test_later_rounds_fix_each_finding_in_its_own_file(tmp_path: Path) -> None:
    """A finding names its file and line: one in the companion is fixed there, one in
    design.md at its line, and neither edit lands in the other file."""
    d = build_base("example", CORPUS, tmp_path)
    text = d.design.read_text().replace(
        "A refused request gets status 429. Its", "A refused request gets status 429 (per D6). Its"
    )
    d.design.write_text(text)
    companion = d.design.with_name("design-mechanics.md")
    mech = ["# Mechanics", "", "## Buckets per tenant and route", "", "The script runs once (see D2).", ""]
    companion.write_text("\n".join(mech))

    def rel(p: Path) -> str:
        return str(p.relative_to(d.repo_root))

    line = text.split("\n").index(next(x for x in text.split("\n") if "(per D6)" in x)) + 1
    flagged: list[dict[str, Any]] = [
        {
            "severity": "blocker",
            "rule": "dsc-parenthetical-aside",
            "file": rel(companion),
            "line": 5,
            "quote": "The script runs once (see D2).",
            "message": "m",
        },
        {
            "severity": "blocker",
            "rule": "dsc-parenthetical-aside",
            "file": rel(d.design),
            "line": line,
            "quote": "(per D6)",
            "message": "m",
        },
    ]
    result = _author_round(d, d.design, flagged, companion)
    assert result.status == "ok" and "fixed 2" in result.output.summary, result.output.summary
    assert "(per D6)" not in d.design.read_text()
    assert companion.read_text().split("\n")[4] == "The script runs once."
    assert run_checks(CheckRequest(design_path=d.design)) == []


def test_the_author_defines_an_acronym_at_its_first_use_and_never_codes_a_name() -> None:
    """An acronym defined only after its first use is defined where it first appears, with the
    later definition's long form; a name in capitals that is defined nowhere is left as it is
    (never wrapped in code, never split at its dots)."""
    from pipeline.offline import fixer

    instructions = (Path(__file__).parent.parent / "prompts" / "house-style.md").read_text()
    text = (
        "# T\n\n## Overview\n\nGOV.UK moves its RDS databases and MAX_RETRY stays.\n\n"
        "## Databases\n\n**TL;DR:** Databases move.\n\n"
        "AWS Relational Database Service (RDS) takes over backups for the databases.\n"
    )
    finding = Finding(severity="should-fix", rule="cr-term-order", line=5, quote="RDS", message="m")
    fixed, count, left = fixer.apply(text, [finding], instructions)
    assert (count, left) == (1, 0)
    assert "GOV.UK moves its Relational Database Service (RDS) databases and MAX_RETRY stays." in fixed
    assert "`" not in fixed
    never = finding.model_copy(update={"quote": "GOV"})  # nothing spells it out: left for judgement
    assert fixer.apply(text, [never], instructions)[1:] == (0, 1)


def test_the_author_seeds_class_design_and_workflow_from_what_psi_finds(tmp_path: Path) -> None:
    """The example's D4 names `Clock`: PSI finds its definition and its uses, and the author
    writes them as the seed's Class Design and Workflow sections."""
    d = build_base("example", CORPUS, tmp_path)
    d.design.unlink()
    assert run(d, "design-author").results[0].status == "ok"
    text = d.design.read_text()
    assert "## Class Design" in text and "## Workflow" in text
    assert "- `Clock` is defined at `code/ratelimit/clock.py:9`, declared as `class Clock(Protocol)`" in text
    workflow = text.split("## Workflow", 1)[1].split("\n## ", 1)[0]
    assert "The code uses `Clock` at " in workflow and "`code/ratelimit/middleware.py:" in workflow
    assert run_checks(CheckRequest(design_path=d.design)) == []
    for role in ("readability-auditor", "absorption-check", "comprehension-review"):
        assert blocking(findings(d, role)) == [], role


def test_a_reviewer_finding_that_restates_a_mechanical_one_is_reported_once() -> None:
    from pipeline.formats.findings import Finding, merge

    mechanical = Finding(
        rule="dsc-section-shape",
        severity="blocker",
        file="d.md",
        line=1,
        message="design.md has no '## Overview' section",
    )
    review = Finding(
        rule="cr-no-overview", severity="should-fix", file="d.md", line=2, quote="# T", message="m"
    )
    other = Finding(
        rule="cr-tldr-mismatch", severity="should-fix", file="d.md", line=9, section="S", message="m"
    )
    assert merge([mechanical, review, other]) == [mechanical, other]
    assert merge([review, other]) == [review, other]  # without the mechanical finding it stands


def test_each_thread_stems_with_its_own_stemmer() -> None:
    """Offline spawns run in threads (a batch runs several at once); a Snowball stemmer keeps
    the word it works on in the instance, so one shared across threads mangles words."""
    import threading

    from pipeline.offline import text

    seen: dict[str, tuple[object, str]] = {}  # the stemmers kept alive: ids are never reused

    def work(name: str) -> None:
        seen[name] = (text.stemmer(), text.stemmer().stemWord("allowing"))

    threads = [threading.Thread(target=work, args=(n,)) for n in ("one", "two")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen["one"][0] is not seen["two"][0] and text.stemmer() not in (seen["one"][0], seen["two"][0])
    assert seen["one"][1] == seen["two"][1] == "allow" == text.stem("allowing")
