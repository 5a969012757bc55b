"""The run report: a self-contained HTML page and Markdown, from the run's records alone."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from agentkit import make_repo
from conftest import run_cli
from graphkit import PASS, TRIP, go, long_design, returns, start, writes


def test_report_shows_findings_per_round_settled_sections_costs_diff_and_entry(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    run_dir = start(d, tmp_path)
    author = writes(lambda r: long_design(TRIP if r == 1 else None))
    result = go(run_dir, {"design-author": author, "absorption-check": returns(PASS)})
    assert result.state is not None and result.state.round == 2
    done = run_cli(["report", run_dir.name, "--runs-dir", str(tmp_path / "runs")])
    assert done.code == 0, done.err
    page = (run_dir / "report.html").read_text()
    markdown = (run_dir / "report.md").read_text()
    assert page.startswith("<!doctype html>") and "<svg" in page and "http" not in page.split("<svg", 1)[0]
    assert "round 1: 1 should-fix" in page and "<title>round 1: 1 should-fix</title>" in page
    counted, entry = markdown.split("## Review-log entry", 1)
    assert "hs-sentence-length" not in counted  # the report counts findings; the review log names them
    assert "hs-sentence-length" in entry and "— fixed in round 2" in entry
    assert "| 1 | Part of the service 13 | 0 | 1 | 0 |" in markdown
    assert "- round 2: " in markdown and "Part of the service 0" in markdown.split("## Settled sections")[1]
    assert "| readability-auditor | 3 |" in markdown  # two slices in round 1, one in round 2
    assert "+++ b/docs/adr/0001/_workflow/design.md" in page
    assert "## Mutation 1" in markdown.split("## Review-log entry")[1]
    assert "**PASS**" in markdown


def test_report_of_an_unknown_run_is_bad_input(tmp_path: Path) -> None:
    result = run_cli(["report", "nope", "--runs-dir", str(tmp_path)])
    assert result.code == 2 and "designloop runs" in result.err


def test_estimate_prices_the_configured_models_and_names_unpriced_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = make_repo(tmp_path)
    import json

    monkeypatch.chdir(d.repo_root)
    offline = json.loads(run_cli(["estimate", "docs/adr/*", "--json"]).out)["estimates"]
    priced = json.loads(
        run_cli(["estimate", "docs/adr/*", "--model", "anthropic:claude-sonnet-4-5", "--json"]).out
    )["estimates"]
    local = json.loads(run_cli(["estimate", str(d.root), "--model", "openai:qwen-local", "--json"]).out)[
        "estimates"
    ]
    missing = run_cli(["estimate", "docs/nothing/*"])
    assert [e["directory"] for e in offline] == ["docs/adr/0001"]
    low, high = offline[0]["low"], offline[0]["high"]
    assert low["spawns"] == 4 and high["spawns"] == 12 and low["cost_usd"] == "0" and not high["unpriced"]
    assert 0 < float(priced[0]["low"]["cost_usd"]) < float(priced[0]["high"]["cost_usd"])
    assert priced[0]["high"]["tokens"] == high["tokens"]
    assert local[0]["high"]["unpriced"] == ["openai:qwen-local"] and local[0]["high"]["cost_usd"] == "0"
    assert missing.code == 2 and "names no design directory" in missing.err


def test_a_damaged_batch_record_is_named_and_an_older_one_reads(tmp_path: Path) -> None:
    from pipeline.errors import InputError
    from pipeline.runs.store import load_batch_file

    older = tmp_path / "older.json"
    older.write_text('{"batch_id": "b1", "directories": [{"directory": "docs/a", "cost_usd": 0.5}]}')
    record = load_batch_file(older)
    assert record.kind == "?" and record.directories[0].cost_usd == Decimal("0.5")
    assert record.directories[0].run_id is None and record.directories[0].action == "?"
    damaged = tmp_path / "damaged.json"
    damaged.write_text('{"batch_id": "b2", "directories": [{"tokens": "many"}]}')
    with pytest.raises(InputError) as caught:
        load_batch_file(damaged)
    assert "directories.0.tokens" in caught.value.message and caught.value.file == str(damaged)
