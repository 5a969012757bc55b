"""The creation kinds, finished and honest: each deviation the seed reading found, as a test."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from agentkit import make_repo
from conftest import run_cli
from graphkit import PASS, finding, go, long_design, malformed, returns, review, start, writes

from pipeline.errors import ExitCode
from pipeline.formats.contracts import ReviewOutput
from pipeline.formats.review_log import parse_entries
from pipeline.formats.spawn_params import SpawnParams
from pipeline.formats.stamp import has_stamp
from pipeline.runs.event_log import events_of
from pipeline.runs.events import Spawned


def spawns(run_dir: Path, role: str) -> list[Spawned]:
    return [e for e in events_of(run_dir, Spawned) if e.role == role]


def params_of(d: Any, spawn: Spawned) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((d.repo_root / spawn.params).read_text())
    return data


def entry_text(d: Any) -> str:
    return str(d.mutations.read_text())


def test_phase4_never_writes_the_research_log_and_names_the_decision_needed(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    log_before = d.research_log.read_bytes()
    shaped = finding(
        "cr-decision-shaped",
        quote="We decided to shard buckets by tenant hash.",
        message="a decision no record covers",
        decision_shaped=True,
        section="Overview",
    )
    run_dir = start(d, tmp_path, kind="phase4-creation")
    result = go(run_dir, {"comprehension-review": returns(review(shaped))})
    assert d.research_log.read_bytes() == log_before  # no surfaced decision, no gate entry
    assert result.state.outcome.verdict == "DECISION NEEDED" and result.exit_code == ExitCode.FINDINGS
    assert result.state.round == 1 and len(spawns(run_dir, "design-author")) == 1  # it did not loop
    data = result.to_json()
    assert data["outcome"] == "DECISION NEEDED"
    assert any("needs a phase-0 decision" in f["message"] for f in data["findings"])
    assert "needs a phase-0 decision" in entry_text(d) and "(DECISION NEEDED)" in entry_text(d)


def test_mechanical_should_fix_findings_reach_the_author(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    d.design.unlink()
    clean = long_design(sections=4)
    linked = clean.replace(
        "Step 3 of component 1 stores one value", "Step 3 of component 1 (see plan/track-1.md)"
    )
    run_dir = start(d, tmp_path)
    models = {
        "design-author": writes(lambda r: linked if r == 1 else clean),
        "absorption-check": returns(PASS),
    }
    result = go(run_dir, models)
    assert result.state.outcome.verdict == "PASS" and result.state.round == 2
    second = [s for s in spawns(run_dir, "design-author") if s.round == 2]
    flagged = params_of(d, second[0])["flagged_passages"]
    assert [f["rule"] for f in flagged] == ["dsc-reverse-ref"] and flagged[0]["severity"] == "should-fix"
    assert flagged[0]["line"] and "plan/track-1.md" in flagged[0]["quote"]


def test_should_fix_remains_exits_0_with_a_warning_or_1_under_fail_on(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    run_dir = start(d, tmp_path)
    dense = review(finding("hs-sentence-length", section="Overview"))
    result = go(run_dir, {"readability-auditor": returns(dense)})
    assert result.state.outcome.verdict == "SHOULD-FIX REMAINS" and result.exit_code == ExitCode.OK
    runs = ["--runs-dir", str(tmp_path / "runs")]
    plain = run_cli(["resume", run_dir.name, *runs])
    assert plain.code == ExitCode.OK and "warning:" in plain.out and "SHOULD-FIX REMAINS" in plain.out
    strict = run_cli(["resume", run_dir.name, *runs, "--fail-on", "should-fix", "--json"])
    assert strict.code == ExitCode.FINDINGS and json.loads(strict.out)["outcome"] == "SHOULD-FIX REMAINS"
    bad = run_cli(["resume", run_dir.name, *runs, "--fail-on", "warning"])
    assert bad.code == ExitCode.BAD_INPUT and "--fail-on" in bad.err


def test_the_review_log_says_what_ran(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    run_dir = start(d, tmp_path)
    before_names = ["Buckets per tenant and route", "Bucket state in Redis", "When Redis is unreachable"]
    base = d.design.read_text()
    changed = base.replace("## When Redis is unreachable", "## Store outages").replace(
        "`RedisStore` keeps each bucket", "`RedisStore` keeps every bucket"
    )
    changed += "\n## Limits per route\n\n**TL;DR:** Each route has its own capacity.\n\nRoutes differ.\n"

    def auditor(params: SpawnParams) -> ReviewOutput:
        if params.round == 1 and params.slice is not None and params.slice[0] == 1:
            # PASS with a should-fix is malformed output: re-run once, then INCONCLUSIVE.
            return malformed("PASS", finding("hs-hedge", section="Overview"))
        return PASS

    result = go(
        run_dir, {"design-author": writes(lambda r: changed), "readability-auditor": returns(auditor)}
    )
    assert result.state.outcome.verdict == "PASS" and result.state.round == 2
    text = entry_text(d)
    assert "**Mechanical checks** (target=design): PASS" in text
    assert "**Cold-read** (scope: whole-doc): PASS" in text
    # Round 1's INCONCLUSIVE slice is recorded although the final round was clean: as history
    # (a note), never as an open should-fix in a PASS entry.
    assert "note: earlier round: inconclusive: readability-auditor slice 1-" in text and "in round 1" in text
    assert "- should-fix" not in text
    assert 'added §"Store outages", §"Limits per route"' in text
    assert 'removed §"When Redis is unreachable"' in text and 'changed §"Bucket state in Redis"' in text
    assert not any(
        f'§"{name}"' in text.split("**Diff summary**")[1].split("\n")[0] for name in before_names[:1]
    )


def test_a_cold_read_that_never_happened_is_not_called_pass(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    run_dir = start(d, tmp_path)
    broken = d.design.read_text().replace("A refused request gets status 429.", "A refused request (per D6).")
    result = go(run_dir, {"design-author": writes(lambda r: broken)})
    assert result.state.outcome.verdict == "BLOCKER REMAINS"
    text = entry_text(d)
    assert "**Mechanical checks** (target=design): 1 findings" in text
    assert (
        "**Cold-read** (scope: whole-doc): SKIPPED — the final draft did not pass the mechanical checks"
        in text
    )
    assert "Cold-read** (scope: whole-doc): PASS" not in text


def test_an_inconclusive_comprehension_gate_ends_inconclusive(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    run_dir = start(d, tmp_path)
    result = go(
        run_dir,
        {"comprehension-review": returns(malformed("PASS", finding("cr-term-order", section="Overview")))},
    )
    assert result.state.outcome.verdict == "INCONCLUSIVE" and result.exit_code == ExitCode.INCONCLUSIVE
    text = entry_text(d)
    assert "comprehension INCONCLUSIVE" in text and "(INCONCLUSIVE)" in text
    assert "inconclusive: comprehension-review returned no valid output twice in round 1" in text


def test_the_stamp_lands_with_the_seed_and_survives_a_pause(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    d.design.unlink()
    d.research_log.write_text(
        d.research_log.read_text() + "\n### 2026-11-25 — NEEDS REVISION\n- [ ] blocker: D2 ignores slots.\n"
    )
    result = run_cli(["create", str(d.root), "--runs-dir", str(tmp_path / "runs"), "--json"])
    assert result.code == ExitCode.GATE_PAUSED
    assert has_stamp(d.design) and not d.mutations.exists()  # stamped before the review finished


def test_the_workflow_sha_ignores_unrelated_commits(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    d.design.unlink()
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }

    def git(*args: str) -> None:
        import os

        subprocess.run(
            ["git", *args], cwd=d.repo_root, env={**os.environ, **env}, check=True, capture_output=True
        )

    (d.repo_root / ".git").rmdir()
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "one")
    runs = ["--runs-dir", str(tmp_path / "runs")]
    assert run_cli(["create", str(d.root), *runs]).code == ExitCode.OK
    first = d.design.read_text().splitlines()[0]
    (d.repo_root / "unrelated.txt").write_text("x")
    git("add", "unrelated.txt")
    git("commit", "-qm", "two")
    d.design.unlink()
    assert run_cli(["create", str(d.root), *runs]).code == ExitCode.OK
    assert d.design.read_text().splitlines()[0] == first


def test_phase1_checks_the_plan_references_and_hands_the_plan_to_the_comprehension_gate(
    tmp_path: Path,
) -> None:
    d = make_repo(tmp_path)
    d.plan.write_text(d.plan.read_text() + '\n**Full design:** design.md §"A section nobody wrote"\n')
    run_dir = start(d, tmp_path)
    result = go(run_dir)
    assert result.state.outcome.verdict == "BLOCKER REMAINS"
    remaining = [f for f in result.state.outcome.remaining if f.rule == "dsc-full-design-link"]
    assert remaining and remaining[0].file and remaining[0].file.endswith("implementation-plan.md")
    assert remaining[0].quote == '**Full design:** design.md §"A section nobody wrote"'
    d2 = make_repo(tmp_path / "two")
    run2 = start(d2, tmp_path / "two")
    go(run2)
    gate = spawns(run2, "comprehension-review")[0]
    params = params_of(d2, gate)
    assert params["plan_path"].endswith("implementation-plan.md") and params["plan_dir"].endswith("plan")
    assert params["design_mechanics_path"] == "(none)"


def test_final_without_readable_code_says_what_it_could_not_check(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    empty = d.repo_root / "nocode"
    empty.mkdir()
    (empty / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")  # no text to read
    runs = ["--runs-dir", str(tmp_path / "runs")]
    result = run_cli(["final", str(d.root), "--code-root", str(empty), *runs, "--json"])
    assert result.code == ExitCode.OK, result.err
    assert json.loads(result.out)["outcome"] == "PASS"
    text = entry_text(d)
    assert "fid-missing-symbol" not in text
    assert "suggestion: fid-code-unchecked" in text and "no source file PSI can read" in text
    assert "the code under nocode (no source file PSI can read" in text
    assert "4 episode(s) in 2 track file(s)" in text


def test_final_without_track_episodes_does_not_claim_them(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    for track in d.plan_dir.glob("track-*.md"):
        track.unlink()
    result = run_cli(["final", str(d.root), "--runs-dir", str(tmp_path / "runs"), "--json"])
    assert result.code == ExitCode.OK, result.err
    assert "from the frozen design, no track episodes and the code under code (python 5 files)" in entry_text(
        d
    )


def test_review_leaves_the_design_directory_untouched_unless_asked(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    before = {p: p.read_bytes() for p in d.root.rglob("*") if p.is_file()}
    runs = ["--runs-dir", str(tmp_path / "runs")]
    for role in ("readability-auditor", "comprehension-review", "absorption-check"):
        assert run_cli(["review", role, str(d.root), *runs, "--json"]).code in (0, 1)
    assert {p: p.read_bytes() for p in d.root.rglob("*") if p.is_file()} == before
    assert not d.reviews.exists()
    kept = run_cli(["review", "absorption-check", str(d.root), *runs, "--keep-params"])
    assert kept.code in (0, 1) and list(d.reviews.rglob("*absorption-check.json"))


def test_a_kept_phase4_review_never_overwrites_a_run_s_review_file(tmp_path: Path) -> None:
    """A one-off review keeps its params and the review file written on the comprehension
    reviewer's behalf in its own scratch directory, beside a final run's, never over it."""
    d = make_repo(tmp_path)
    shutil.copy(d.design, d.final)
    d.reviews.mkdir(parents=True, exist_ok=True)
    runs_file = d.reviews / "r1-comprehension-review.md"
    runs_file.write_text("Verdict: PASS\n\nthe final run's review\n")
    args = ["review", "comprehension-review", str(d.root), "--draft", str(d.final), "--keep-params"]
    assert run_cli([*args, "--runs-dir", str(tmp_path / "runs")]).code in (0, 1)
    assert runs_file.read_text() == "Verdict: PASS\n\nthe final run's review\n"
    assert (d.reviews / "review" / "r1-comprehension-review.md").read_text().startswith("Verdict:")


def test_every_hint_and_doc_points_at_the_formats_page_in_the_repository() -> None:
    root = Path(__file__).resolve().parent.parent
    assert (root / "docs" / "formats.md").is_file()
    sources = [*root.glob("pipeline/**/*.py"), *root.glob("docs/*.md"), root / "README.md"]
    sources += [*root.glob("prompts/*.md"), *root.glob("agents/*.md"), *root.glob("params/*.toml")]
    stray = []
    for path in sources:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for at in [i for i in range(len(line)) if line.startswith("formats.md", i)]:
                if not line[:at].endswith(("docs/", "(")) and path.name != "formats.md":
                    stray.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    assert stray == []


def test_the_review_log_entries_parse_back(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    run_dir = start(d, tmp_path)
    go(run_dir)
    assert [e.kind for e in parse_entries(d.mutations)] == ["phase1-creation"]


def test_every_run_keeps_its_own_params_files(tmp_path: Path) -> None:
    """Phase 4 (and a second phase-1 run) never overwrites the record of what an earlier run's
    spawns were given: each run's params files live in its own folder under _workflow/reviews/."""
    d = make_repo(tmp_path)
    d.design.unlink()
    runs = ["--runs-dir", str(tmp_path / "runs"), "--json"]
    first = json.loads(run_cli(["create", str(d.root), *runs]).out)["run_id"]
    final = json.loads(run_cli(["final", str(d.root), *runs]).out)["run_id"]
    second = json.loads(run_cli(["create", str(d.root), *runs]).out)["run_id"]
    kinds = {
        run: json.loads((d.reviews / run / "r1-design-author.json").read_text())["kind"]
        for run in (first, final, second)
    }
    assert kinds == {first: "phase1-creation", final: "phase4-creation", second: "phase1-creation"}
    assert not list(d.reviews.glob("*.json"))  # nothing addressed by round and role alone


def test_phase4_reads_bulleted_episodes_and_refuses_a_section_it_cannot_read(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    track = d.plan_dir / "track-1.md"
    text = track.read_text()
    head, _ = text.split("## Episodes", 1)
    bullets = (
        "## Episodes\n\n"
        "- TokenBucket and MemoryStore landed: `TokenBucket.take` returns a decision and the new state.\n"
        "- RedisStore runs the Lua script: `RedisStore` registers `TAKE_SCRIPT` once.\n"
    )
    track.write_text(head + bullets)
    runs = ["--runs-dir", str(tmp_path / "runs"), "--json"]
    done = run_cli(["final", str(d.root), *runs])
    assert done.code in (0, 1), done.err
    entry = entry_text(d)
    assert "4 episode(s) in 2 track file(s)" in entry
    assert "RedisStore runs the Lua script" in d.final.read_text()
    # Text under ## Episodes that holds no episode is bad input, not "no track episodes".
    track.write_text(head + "## Episodes\n\n```\nsee the wiki\n```\n")
    before = {p: p.read_bytes() for p in d.root.rglob("*") if p.is_file()}
    refused = run_cli(["final", str(d.root), *runs])
    assert refused.code == 2 and "track-1.md" in refused.err and "what to do:" in refused.err
    assert {p: p.read_bytes() for p in d.root.rglob("*") if p.is_file()} == before
