"""The creation-kind graph end to end, with scripted and offline roles. No network."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from agentkit import make_repo
from graphkit import PASS, TRIP, finding, go, long_design, malformed, returns, review, start, writes
from rolekit import author_writes, reviewers, role_server

from pipeline.errors import ExitCode, WiringError
from pipeline.formats.contracts import AuthorOutput, ReviewOutput
from pipeline.formats.research_log import load_research_log
from pipeline.formats.review_log import parse_entries
from pipeline.formats.slices import partition_for
from pipeline.formats.spawn_params import SpawnParams
from pipeline.formats.stamp import has_stamp
from pipeline.offline.engines import offline_model
from pipeline.offline.observe import Observations, required
from pipeline.runs.check_events import DualCleanCheck, MechanicalCheck
from pipeline.runs.event_log import events_of, read_events
from pipeline.runs.events import RoundStarted, SliceSkipped, Spawned, Stopped, Warmed
from pipeline.runs.replay import replay


def spawns(run_dir: Path) -> list[Spawned]:
    return events_of(run_dir, Spawned)


def test_clean_in_round_one_with_the_offline_engine(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    d.design.unlink()
    run_dir = start(d, tmp_path)
    result = go(run_dir)
    assert (
        result.exit_code == ExitCode.OK and result.state.outcome.verdict == "PASS" and result.state.round == 1
    )
    assert has_stamp(d.design)
    entries = parse_entries(d.mutations)
    assert [(e.number, e.kind, e.file) for e in entries] == [(1, "phase1-creation", "design.md")]
    view = replay(run_dir.name, read_events(run_dir))
    assert view.outcome == "PASS" and view.review_log_entry == 1
    assert {s.role for s in view.spawns.values()} == {
        "design-author",
        "readability-auditor",
        "absorption-check",
        "comprehension-review",
    }
    assert "PASS" in (run_dir / "summary.md").read_text()
    data = result.to_json()
    assert {"run_id", "kind", "outcome", "rounds", "findings", "usage", "review_log_entry"} <= set(data)


def test_converges_in_round_two_and_skips_settled_slices(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    run_dir = start(d, tmp_path)
    author = writes(lambda r: long_design(TRIP if r == 1 else None))
    result = go(
        run_dir,
        {"design-author": author, "absorption-check": returns(PASS), "comprehension-review": returns(PASS)},
    )
    assert result.state.outcome.verdict == "PASS" and result.state.round == 2
    history = result.state.history
    assert [h.dual_clean for h in history] == [False, True]
    assert history[0].slices == 2 and history[1].skipped_slices == 1
    skipped = events_of(run_dir, SliceSkipped)
    assert [e.round for e in skipped] == [2] and skipped[0].slice[0] == 1
    audits = [s for s in spawns(run_dir) if s.role == "readability-auditor"]
    assert sorted((s.round, s.slice is not None and s.slice[0] == 1) for s in audits) == [
        (1, False),
        (1, True),
        (2, False),
    ]
    assert all(s.params.endswith(".json") for s in audits)


def test_never_clean_should_fix_tail_exhausts_the_budget(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    run_dir = start(d, tmp_path)
    dense = review(finding("hs-sentence-length", section="Overview"))
    result = go(run_dir, {"readability-auditor": returns(dense)})
    # The seed's "completes with a warning": exit 0 unless --fail-on should-fix.
    assert result.exit_code == ExitCode.OK and result.state.outcome.verdict == "SHOULD-FIX REMAINS"
    assert result.state.round == 3 and len(result.state.history) == 3
    log = d.mutations.read_text()
    assert "**Iterations**: 3 of 3 (SHOULD-FIX REMAINS)" in log and "debt:" in log
    assert has_stamp(d.design)


def test_persistent_blocker(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    run_dir = start(d, tmp_path)
    wiring = review(finding("abs-wiring", severity="blocker"))
    result = go(run_dir, {"absorption-check": returns(wiring)})
    assert result.state.outcome.verdict == "BLOCKER REMAINS" and result.exit_code == ExitCode.FINDINGS
    assert "(BLOCKER REMAINS)" in d.mutations.read_text()


def test_an_inconclusive_auditor_slice_prevents_dual_clean(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    run_dir = start(d, tmp_path)
    result = go(run_dir, {"readability-auditor": returns(malformed("PASS", finding("hs-hedge")))})
    assert result.state.outcome.verdict != "PASS"
    assert all(not h.dual_clean and h.inconclusive for h in result.state.history)
    assert "INCONCLUSIVE" in d.mutations.read_text()
    assert all(s.status == "inconclusive" for s in spawns(run_dir) if s.role == "readability-auditor")


def _open_gate(log: Path) -> str:
    text = log.read_text()
    opened = text + "\n### 2026-11-25 — NEEDS REVISION\n- [ ] blocker: D2 ignores Redis cluster slots.\n"
    log.write_text(opened)
    return opened


def test_gate_open_pauses_then_resumes_to_pass(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    opened = _open_gate(d.research_log)
    run_dir = start(d, tmp_path)
    result = go(run_dir)
    assert result.exit_code == ExitCode.GATE_PAUSED and result.paused is not None
    assert result.paused["gate"]["state"] == "open" and not d.mutations.exists()
    assert replay(run_dir.name, read_events(run_dir)).state == "paused"
    again = go(run_dir, resume=True)  # the log has not changed: still paused
    assert again.exit_code == ExitCode.GATE_PAUSED
    d.research_log.write_text(opened.replace("- [ ] blocker: D2", "- [x] blocker: D2"))
    done = go(run_dir, resume=True)
    assert done.exit_code == ExitCode.OK and done.state.outcome.verdict == "PASS"
    assert [e.number for e in parse_entries(d.mutations)] == [1]
    comprehension = [s for s in spawns(run_dir) if s.role == "comprehension-review"]
    assert len(comprehension) == 1  # never ran while the gate was open


def test_decision_shaped_comprehension_finding_reopens_the_gate(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    run_dir = start(d, tmp_path)
    shaped = finding(
        "cr-decision-shaped",
        quote="We decided to shard buckets by tenant hash.",
        message="a decision no record covers",
        decision_shaped=True,
        section="Overview",
    )

    def comprehension(params: SpawnParams) -> ReviewOutput:
        return review(shaped) if params.round == 1 else PASS

    result = go(run_dir, {"comprehension-review": returns(comprehension)})
    assert result.exit_code == ExitCode.GATE_PAUSED and result.state.round == 2
    log = load_research_log(d.research_log)
    surfaced = log.decisions[-1]
    status = surfaced.value("Status")
    assert status is not None and "surfaced by comprehension-review" in status
    assert log.gate().state == "open" and f"D{surfaced.number}" in log.gate().open_items[0].text
    text = d.research_log.read_text()
    d.research_log.write_text(text.replace("- [ ] should-fix: D", "- [x] should-fix: D"))
    done = go(run_dir, resume=True)
    assert done.state.outcome.verdict == "PASS" and done.state.round == 2
    assert f"surfaced: D{surfaced.number} by comprehension-review" in d.mutations.read_text()
    assert d.research_log.read_text().count("**Status:** surfaced by comprehension-review") == 1


def test_phase4_never_lets_a_cold_role_read_the_log_and_writes_no_stamp(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    run_dir = start(d, tmp_path, kind="phase4-creation")
    result = go(run_dir)
    assert result.state.outcome.verdict == "PASS", result.state.outcome
    assert not has_stamp(d.final) and d.final.read_text().startswith("# ")
    cold = [
        s
        for s in spawns(run_dir)
        if s.role in ("readability-auditor", "comprehension-review", "fidelity-check")
    ]
    assert {s.role for s in cold} == {"readability-auditor", "comprehension-review", "fidelity-check"}
    for spawn in cold:
        assert not any("research-log" in path for path in spawn.reads), spawn
        params = json.loads((d.repo_root / spawn.params).read_text())
        assert "research_log_path" not in params
    assert parse_entries(d.mutations)[-1].file == "design-final.md"
    review = result.state.comprehension.output_path
    assert review is not None and (d.repo_root / review).read_text().startswith("Verdict: PASS")


def test_the_slice_count_self_check_catches_a_wrong_fan_out(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    run_dir = start(d, tmp_path)
    author = writes(lambda r: long_design())

    def wrong(deps: Any) -> None:
        deps.partition = lambda lines, limits: partition_for(lines, limits)[:-1]

    with pytest.raises(WiringError, match="slice-count self-check"):
        go(run_dir, {"design-author": author}, tweak=wrong)
    assert events_of(run_dir, Stopped)
    assert not [s for s in spawns(run_dir) if s.role == "readability-auditor"]


def test_warm_up_waits_for_the_first_answer_and_changes_timing_not_results(tmp_path: Path) -> None:
    outcomes = []
    for warm in (True, False):
        d = make_repo(tmp_path / str(warm))
        run_dir = start(d, tmp_path / str(warm), warmup=warm)
        models = {"design-author": writes(lambda r: long_design(TRIP if r == 1 else None))}

        def caching_provider(deps: Any) -> None:
            # The offline engine keeps no prompt cache: stand in for a provider that does.
            deps.runtime.model_specs["readability-auditor"] = "anthropic:claude-haiku-4-5"
            deps.runtime.model_overrides["readability-auditor"] = offline_model(
                "readability-auditor", deps.runtime.limits
            )

        result = go(run_dir, models, tweak=caching_provider)
        audits = [s for s in spawns(run_dir) if s.role == "readability-auditor" and s.round == 1]
        outcomes.append(
            (
                result.state.outcome.verdict,
                result.state.round,
                d.design.read_text().split("\n", 1)[1],
                [s.findings for s in sorted(audits, key=lambda s: s.slice or (0, 0))],
            )
        )
        warmed = [e for e in events_of(run_dir, Warmed) if e.round == 1]
        if warm:
            # The rest of the fan-out started after the first spawn's first answer, not a fixed time.
            assert len(warmed) == 1 and len(audits) == 2
            later = next(a for a in audits if a.slice and a.slice[0] != 1)
            assert later.started >= warmed[0].time
        else:
            assert not warmed and max(a.warmup_wait or 0.0 for a in audits) == 0.0
    assert outcomes[0] == outcomes[1]


def test_a_provider_without_a_prompt_cache_fans_out_at_once(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    run_dir = start(d, tmp_path, warmup=True)  # warm-up asked for, but the offline engine caches nothing
    go(run_dir, {"design-author": writes(lambda r: long_design())})
    assert not events_of(run_dir, Warmed)
    assert all(s.warmup_wait == 0.0 for s in spawns(run_dir) if s.role == "readability-auditor")


def test_the_documented_diagram_is_drawn_from_the_graph() -> None:
    from pipeline.graph.create.build import build_graph

    doc = (Path(__file__).parent.parent / "docs" / "graph.md").read_text()
    block = doc.split("<!-- graph:start -->", 1)[1].split("<!-- graph:end -->", 1)[0]
    assert block.strip() == "```mermaid\n" + build_graph().get_graph().draw_mermaid().rstrip() + "\n```"


def test_an_author_that_writes_no_draft_is_respawned_once_then_the_run_stops(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    d.design.unlink()
    run_dir = start(d, tmp_path)
    silent = returns(lambda params: AuthorOutput(summary="done", output_path=str(params.output_path)))
    result = go(run_dir, {"design-author": silent})
    # No draft means no review happened: the run is INCONCLUSIVE, and says why.
    assert result.state.outcome.verdict == "INCONCLUSIVE" and result.state.round == 2
    assert result.exit_code == ExitCode.INCONCLUSIVE
    assert [s.round for s in spawns(run_dir) if s.role == "design-author"] == [1, 2]
    assert not [s for s in spawns(run_dir) if s.role != "design-author"]
    log = d.mutations.read_text()
    assert "the author wrote no draft after a re-spawn" in log and "(INCONCLUSIVE)" in log
    assert "**Mechanical checks** (target=design): SKIPPED" in log and not d.design.exists()


def test_a_draft_returned_inline_is_noted_and_the_file_is_used(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    run_dir = start(d, tmp_path)
    text = d.design.read_text()

    def chatty(params: SpawnParams, obs: Observations) -> AuthorOutput:
        path = required(params.output_path, "output_path")
        obs.call("write", path=path, content=text)
        return AuthorOutput(summary=text, output_path=path)

    result = go(run_dir, {"design-author": chatty})
    assert result.state.outcome.verdict == "PASS"
    assert any("contract violation" in note for note in result.state.notes)
    assert "contract violation" in d.mutations.read_text()


def test_budget_stop_and_resume_repays_nothing(
    tmp_path: Path, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A model that spends tokens (each answer of the scripted server costs 120): the offline
    # engine spends none, so no budget ever stops it.
    d = make_repo(tmp_path)
    runs = tmp_path / "runs"
    with role_server(reviewers(author_writes(long_design(sections=4) + "\n")), monkeypatch) as (_, model):
        stopped = cli(
            [
                "create",
                str(d.root),
                *model,
                "--budget",
                "1000",
                "--no-warmup",
                "--runs-dir",
                str(runs),
                "--json",
            ]
        )
        assert stopped.code == ExitCode.BUDGET, stopped.err
        data = json.loads(stopped.out)
        done = cli(["resume", data["run_id"], "--budget", "100000", "--runs-dir", str(runs), "--json"])
    data = json.loads(stopped.out)
    assert data["outcome"] == "STOPPED" and "budget" in data["message"]
    run_dir = runs / data["run_id"]
    assert data["usage"]["calls"] > 0 and data["usage"]["total_tokens"] >= 1000
    assert done.code == ExitCode.OK, done.err
    result = json.loads(done.out)
    assert result["outcome"] == "PASS" and result["review_log_entry"] == 1
    resumed = [s for s in spawns(run_dir) if s.time > max(e.time for e in events_of(run_dir, Stopped))]
    assert sum(s.cache_hits for s in resumed) > 0  # the calls paid before the stop were not paid again
    status = json.loads(cli(["status", data["run_id"], "--runs-dir", str(runs), "--json"]).out)
    assert status["outcome"] == "PASS" and status["review_log_entry"] == 1
    listing = json.loads(cli(["runs", "--runs-dir", str(runs), "--json"]).out)["runs"]
    assert [r["run_id"] for r in listing] == [data["run_id"]]


def test_bad_input_exits_2_without_a_run(tmp_path: Path, cli: Any) -> None:
    d = make_repo(tmp_path)
    d.research_log.write_text(d.research_log.read_text().replace("### D2:", "### D1:"))
    result = cli(["create", str(d.root), "--runs-dir", str(tmp_path / "runs"), "--json"])
    assert result.code == ExitCode.BAD_INPUT and "duplicate decision ID D1" in result.err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    assert cli(["final", str(tmp_path / "nowhere")]).code == ExitCode.BAD_INPUT
    assert cli(["resume", "no-such-run", "--runs-dir", str(tmp_path / "runs")]).code == ExitCode.BAD_INPUT


def test_the_live_view_follows_the_events() -> None:
    from pipeline.cli.live import LiveState

    state = LiveState("phase1-creation")
    state.apply(RoundStarted(round=2, budget=3))
    state.apply(
        Spawned(
            round=2,
            role="readability-auditor",
            slice=(1, 200),
            status="ok",
            findings=1,
            tokens=900,
            cost_usd=Decimal("0.0012"),
            cache_hits=2,
        )
    )
    state.apply(SliceSkipped(round=2, slice=(201, 400)))
    state.apply(DualCleanCheck(round=2, clean=False))
    assert state.round == 2 and state.tokens == 900 and str(state.cost) == "0.0012" and state.cached == 2
    assert state.spawns["r2 readability-auditor lines 201-400"].startswith("skipped")
    assert state.checks[0] == "r2 round 2 not clean: auditors 0 open, second check 0 open"


def test_the_live_view_shows_each_open_finding_with_its_place_and_quote() -> None:
    from rich.console import Console

    from pipeline.cli.live import LiveState
    from pipeline.formats.findings import Finding

    found = Finding(
        severity="should-fix",
        rule="hs-hedge",
        section="Flow",
        line=42,
        quote="might retry",
        message="hedge: 'might'",
        file="docs/adr/0001/_workflow/design.md",
    )
    state = LiveState("phase1-creation")
    state.apply(DualCleanCheck(round=1, clean=False, found=[found]))
    assert state.findings == [found] and "found" not in state.checks[0]
    console = Console(width=200, record=True)
    console.print(state.render())
    text = console.export_text()
    assert "docs/adr/0001/_workflow/design.md:42" in text and '"might retry"' in text


def test_a_mechanical_blocker_respawns_the_author_before_any_review(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    run_dir = start(d, tmp_path)
    clean = d.design.read_text()
    broken = clean.replace(
        "A refused request gets status 429. Its", "A refused request gets status 429 (per D6). Its"
    )
    assert broken != clean
    result = go(run_dir, {"design-author": writes(lambda r: broken if r == 1 else clean)})
    assert result.state.outcome.verdict == "PASS" and result.state.round == 2
    checks = events_of(run_dir, MechanicalCheck)
    assert [(c.round, c.blockers) for c in checks] == [(1, 1), (2, 0)]
    assert {s.round for s in spawns(run_dir) if s.role != "design-author"} == {2}  # round 1 skipped the pair
    params = json.loads(
        (
            run_dir.parent.parent
            / "repo"
            / "docs"
            / "adr"
            / "0001"
            / "_workflow"
            / "reviews"
            / run_dir.name
            / "r2-design-author.json"
        ).read_text()
    )
    assert [f["rule"] for f in params["flagged_passages"]] == ["dsc-parenthetical-aside"]


def test_the_entry_and_json_tell_every_role_per_round_and_the_fate_of_each_finding(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    run_dir = start(d, tmp_path)
    author = writes(lambda r: long_design(TRIP if r == 1 else None))
    hedge = finding("hs-hedge", severity="suggestion", section="Overview", quote="A small service")

    def absorption(params: SpawnParams) -> ReviewOutput:
        if params.round == 1:
            return review(
                finding("abs-missing-record", section="Overview", quote="# Generated design"), hedge
            )
        return review(hedge)

    result = go(
        run_dir,
        {
            "design-author": author,
            "absorption-check": returns(absorption),
            "comprehension-review": returns(PASS),
        },
    )
    assert result.state.outcome.verdict == "PASS" and result.state.round == 2
    log = d.mutations.read_text()
    rounds = log.split("**Rounds**:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert rounds[0].startswith(
        "- round 1: design-author wrote the draft; mechanical PASS; readability-auditor (2 slices) 1 should-fix"
    )
    assert rounds[0].endswith("; absorption-check 1 should-fix, 1 suggestion")
    # The absorption check's should-fix on Overview kept that section unsettled, so round 2's
    # auditors read both slices (formats.settled: settled means checked).
    assert rounds[1] == (
        "- round 2: design-author revised the draft; mechanical PASS; readability-auditor (2 slices) PASS; "
        "absorption-check 1 suggestion; comprehension-review PASS"
    )
    earlier = log.split("**Raised in earlier rounds**:\n", 1)[1].strip().splitlines()
    assert any(
        line.startswith("- round 1, readability-auditor, should-fix: hs-sentence-length")
        and line.endswith("— fixed in round 2")
        for line in earlier
    )
    assert any("abs-missing-record" in line and line.endswith("— fixed in round 2") for line in earlier)
    assert any("hs-hedge" in line and line.endswith("— raised again in round 2") for line in earlier)
    found = result.to_json()["findings"]
    by_rule = {f["rule"]: f for f in found}
    hedged = by_rule["hs-hedge"]
    assert {k: hedged[k] for k in ("severity", "role", "rounds", "status", "blocking")} == {
        "severity": "suggestion",
        "role": "absorption-check",
        "rounds": [1, 2],
        "status": "left",
        "blocking": False,
    }
    assert (
        by_rule["abs-missing-record"]["status"] == "fixed" and not by_rule["abs-missing-record"]["blocking"]
    )
    assert by_rule["hs-sentence-length"]["status"] == "fixed" and by_rule["hs-sentence-length"]["rounds"] == [
        1
    ]
    assert result.to_json()["blocking"] == 0
