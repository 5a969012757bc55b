"""The agent commands from the command line: roles and review."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentkit import make_repo

from pipeline.errors import ExitCode
from pipeline.formats.research_log import load_research_log


def test_roles_lists_tools_log_access_and_models(cli: Any, monkeypatch: Any) -> None:
    monkeypatch.delenv("DESIGNLOOP_MODEL", raising=False)
    result = cli(["roles", "--json", "--role-model", "design-author=anthropic:claude-x"])
    assert result.code == 0
    listed = json.loads(result.out)
    assert listed["schema_version"] == 1
    rows = {r["role"]: r for r in listed["roles"]}
    assert len(rows) == 7
    assert rows["design-author"]["model"] == "anthropic:claude-x"
    assert rows["readability-auditor"] | {"definition": ""} == {
        "role": "readability-auditor",
        "tools": ["Read", "Grep"],
        "tier": "fast",
        "reads_research_log": False,
        "output": "review",
        "model": "offline",
        "definition": "",
    }
    assert cli(["roles", "--role-model", "nobody=test"]).code == ExitCode.BAD_INPUT


def test_review_runs_one_role_with_round_one_params(tmp_path: Path, cli: Any) -> None:
    d = make_repo(tmp_path)
    runs = str(tmp_path / "runs")
    keep = "--keep-params"  # the params files are removed after a review unless asked to stay
    result = cli(["review", "readability-auditor", str(d.root), "--runs-dir", runs, "--json", keep])
    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert data["role"] == "readability-auditor" and data["results"][0]["status"] == "ok"
    params = json.loads(Path(data["results"][0]["params_path"]).read_text())
    assert params["slice"] == [1, len(d.design.read_text().splitlines())] and params["round"] == 1
    sliced = json.loads(
        cli(
            [
                "review",
                "readability-auditor",
                str(d.root),
                "--slice",
                "20-40",
                "--runs-dir",
                runs,
                "--json",
                keep,
            ]
        ).out
    )
    assert json.loads(Path(sliced["results"][0]["params_path"]).read_text())["slice"] == [20, 40]
    fidelity = json.loads(
        cli(
            ["review", "fidelity-check", str(d.root), "--draft", str(d.design), "--runs-dir", runs, "--json"]
        ).out
    )
    findings = fidelity["results"][0]["output"]["findings"]
    assert {f["rule"] for f in findings} == {"fid-superseded"}  # the frozen design is not what was built
    assert cli(["review", "nobody", str(d.root), "--runs-dir", runs]).code == ExitCode.BAD_INPUT
    assert cli(["review", "readability-auditor", str(d.root), "--slice", "9-3"]).code == ExitCode.BAD_INPUT


def test_review_with_findings_exits_1_and_the_adversarial_review_writes_the_gate(
    tmp_path: Path, cli: Any
) -> None:
    d = make_repo(tmp_path)
    text = d.research_log.read_text().replace(
        "**Rationale:** Routes differ tenfold in cost.", "**Rationale:** TBD"
    )
    d.research_log.write_text(text)
    result = cli(
        ["review", "adversarial-review", str(d.root), "--runs-dir", str(tmp_path / "runs"), "--json"]
    )
    assert result.code == ExitCode.FINDINGS
    assert "NEEDS REVISION" in json.loads(result.out)["gate_entry"]
    assert load_research_log(d.research_log).gate().state == "open"
