"""Claims in the loop: every run that writes a design file writes its ledger; the claim check
runs with the mechanical checks (phase 1 and 4) and its findings go to the author; with a
model, the fidelity check is handed the claims and the spans they rest on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentkit import make_repo
from batchkit import open_gate
from conftest import run_cli
from graphkit import PASS, go, returns, start, writes

from pipeline.errors import ExitCode
from pipeline.formats.contracts import AuthorOutput
from pipeline.formats.spawn_params import SpawnParams
from pipeline.graph.state import Outcome
from pipeline.grounding.drift import Drift
from pipeline.grounding.ledger import ledger_path, load_ledger
from pipeline.offline.observe import Observations, required
from pipeline.runs.check_events import MechanicalCheck
from pipeline.runs.event_log import events_of
from pipeline.runs.events import ClaimsLedgered, Spawned

DRAFT = """# Rate limiting

## Overview

A token bucket per tenant limits requests. `TokenBucket.take` refills before it takes.
`TokenBucket.tkae` is a name the code does not have.

## Buckets

**TL;DR:** One bucket per tenant and route.

`MemoryStore` keeps every bucket in one dictionary.
"""


def spawns(run_dir: Path, role: str) -> list[Spawned]:
    return [e for e in events_of(run_dir, Spawned) if e.role == role]


def outcome_of(result: Any) -> tuple[Outcome, int]:
    assert result.state is not None and result.state.outcome is not None
    return result.state.outcome, result.state.round


def test_a_run_writes_the_ledger_of_what_it_wrote(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    runs = ["--runs-dir", str(tmp_path / "runs")]
    assert run_cli(["create", str(d.root), *runs, "--json"]).code == 0
    ledger = load_ledger(ledger_path(d.design))
    assert ledger.design == "design.md" and ledger.claims
    assert run_cli(["final", str(d.root), *runs, "--json"]).code == 0
    final = load_ledger(ledger_path(d.final))
    assert final.design == "design-final.md"
    assert {e.file for e in final.claims} <= {
        p.relative_to(d.repo_root).as_posix() for p in d.code_root.rglob("*")
    }
    # the ledgers hold what the code is now: drift finds every claim current
    drift = Drift(d.repo_root)
    for document in (d.design, d.final):
        states = drift.check(document, load_ledger(ledger_path(document)))
        assert states and all(s.status == "current" for s in states)


def test_the_claim_check_runs_with_the_mechanical_checks_and_reaches_the_author(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    fixed = DRAFT.replace("`TokenBucket.tkae` is a name the code does not have.\n", "")
    run_dir = start(d, tmp_path)
    models = {
        "design-author": writes(lambda r: DRAFT if r == 1 else fixed),
        "absorption-check": returns(PASS),
    }
    result = go(run_dir, models)
    checks = events_of(run_dir, MechanicalCheck)
    first = [f for f in checks[0].found if f.rule.startswith("clm-")]
    assert [(f.rule, f.line, f.quote, f.role) for f in first] == [
        ("clm-unresolved", 7, "TokenBucket.tkae", "mechanical")  # line 1 is the stamp
    ]
    second = [s for s in spawns(run_dir, "design-author") if s.round == 2]
    flagged = json.loads((d.repo_root / second[0].params).read_text())["flagged_passages"]
    assert [f["rule"] for f in flagged] == ["clm-unresolved"]
    outcome, rounds = outcome_of(result)
    assert outcome.verdict == "PASS" and rounds == 2
    assert not [f for f in checks[-1].found if f.rule.startswith("clm-")]


def test_an_unresolved_name_that_stays_is_left_as_should_fix(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    run_dir = start(d, tmp_path, kind="phase4-creation")
    result = go(run_dir, {"design-author": writes(lambda r: DRAFT), "fidelity-check": returns(PASS)})
    outcome, _ = outcome_of(result)
    assert outcome.verdict == "SHOULD-FIX REMAINS"
    left = [(f.rule, f.line, f.file) for f in outcome.remaining]
    assert ("clm-unresolved", 6, "docs/adr/0001/design-final.md") in left
    assert "clm-unresolved" in d.mutations.read_text()
    # the finish wrote the ledger of what the run wrote, and said so once, before the outcome
    [ledgered] = events_of(run_dir, ClaimsLedgered)
    written = load_ledger(ledger_path(d.final))
    assert ledgered.files == {"docs/adr/0001/design-final.md": len(written.claims)} and written.claims


def _fidelity_params(d: Any, run_dir: Path) -> dict[str, Any]:
    [spawn] = [s for s in spawns(run_dir, "fidelity-check") if s.round == 1]
    data: dict[str, Any] = json.loads((d.repo_root / spawn.params).read_text())
    return data


def test_with_a_model_the_fidelity_check_gets_each_claim_and_its_span(tmp_path: Path) -> None:
    from pipeline.offline.engines import offline_model

    d = make_repo(tmp_path)
    run_dir = start(d, tmp_path, kind="phase4-creation")

    def model(deps: Any) -> None:  # a configured model, answered here by the offline engine
        deps.runtime.model_specs["fidelity-check"] = "openai:gpt-4.1-mini"
        deps.runtime.model_overrides["fidelity-check"] = offline_model("fidelity-check", deps.runtime.limits)

    go(run_dir, {"design-author": writes(lambda r: DRAFT)}, tweak=model)
    claims = _fidelity_params(d, run_dir)["claims"]
    take = next(c for c in claims if c["mention"] == "TokenBucket.take")
    assert take["line"] == 5
    assert take["quote"] == "`TokenBucket.take` refills before it takes."
    assert take["file"] == "code/ratelimit/bucket.py" and 1 <= take["first"] <= take["last"]
    assert set(take) == {"line", "quote", "mention", "symbol", "file", "first", "last"}


def test_the_offline_fidelity_check_gets_no_claims(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    run_dir = start(d, tmp_path, kind="phase4-creation")
    go(run_dir, {"design-author": writes(lambda r: DRAFT)})
    assert "claims" not in _fidelity_params(d, run_dir)


def test_an_edit_writes_the_ledger_afresh(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    runs = ["--runs-dir", str(tmp_path / "runs")]
    assert run_cli(["create", str(d.root), *runs]).code == 0
    before = load_ledger(ledger_path(d.design))
    assert "RedisStore" not in {e.mention for e in before.claims}
    result = run_cli(
        [
            "edit",
            str(d.root),
            "--kind",
            "content-edit",
            "--section",
            "Overview",
            "--old",
            "The public API has no per-tenant limit.",
            "--new",
            "The public API has no per-tenant limit; `RedisStore` will hold the buckets.",
            *runs,
        ]
    )
    assert result.code in (0, 1), result.err
    after = load_ledger(ledger_path(d.design))
    store = next(e for e in after.claims if e.mention == "RedisStore")
    assert store.file == "code/ratelimit/store.py" and store.kind == "symbol"


def test_a_run_paused_at_the_gate_leaves_the_ledger_of_its_draft(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    open_gate(d.root)
    run_dir = start(d, tmp_path)
    clean = DRAFT.replace("`TokenBucket.tkae` is a name the code does not have.\n", "")
    models = {"design-author": writes(lambda r: clean), "absorption-check": returns(PASS)}
    assert go(run_dir, models).exit_code == ExitCode.GATE_PAUSED
    ledger = load_ledger(ledger_path(d.design))  # the draft on disk, paused at the gate
    assert "TokenBucket.take" in {e.mention for e in ledger.claims}
    assert [e.files for e in events_of(run_dir, ClaimsLedgered)] == [{"docs/adr/0001/_workflow/design.md": 2}]
    states = Drift(d.repo_root).check(d.design, ledger)
    assert states and all(s.status == "current" for s in states)


def test_a_run_stopped_by_its_request_limit_leaves_the_ledger_of_its_draft(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    (d.repo_root / "designloop.toml").write_text("[run]\nspawn_requests = 5\n")
    run_dir = start(d, tmp_path)
    assert go(run_dir, {"design-author": writes_then_reads}).exit_code == ExitCode.BUDGET
    assert "TokenBucket.take" in {e.mention for e in load_ledger(ledger_path(d.design)).claims}
    assert len(events_of(run_dir, ClaimsLedgered)) == 1


def writes_then_reads(params: SpawnParams, obs: Observations) -> AuthorOutput:
    """An author that writes the draft, then reads on past its request limit."""
    output = required(params.output_path, "output_path")
    obs.call("write", path=output, content=DRAFT)
    for offset in range(1, 30):
        obs.call("read", path=output, offset=offset, limit=1)
    return AuthorOutput(summary="wrote it", output_path=output)
