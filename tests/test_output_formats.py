"""One --output-format on check, drift, ready and batch, one emitter registry behind it: the
same finding reads the same in every format, with paths relative to the repository."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

from conftest import EXAMPLE_OUTPUTS, ROOT, run_cli

DIR = "examples/docs/adr/0001-request-rate-limiter"


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    shutil.copytree(ROOT / "examples", repo / "examples", ignore=EXAMPLE_OUTPUTS)
    return repo


def test_drift_ready_and_batch_speak_every_format(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    assert run_cli(["create", DIR, "-q"], cwd=repo).code == 0
    # ready: a candidate nobody accepted is a gap
    github = run_cli(["ready", DIR, "--output-format", "github"], cwd=repo)
    assert github.code == 1
    assert f"::error file={DIR}/_workflow/design.md,title=designloop-not-accepted (blocker)::" in github.out
    junit = ET.fromstring(run_cli(["ready", DIR, "--output-format", "junit"], cwd=repo).out)
    assert junit.find("testsuite") is not None and int(junit.find("testsuite").get("failures") or 0) >= 1  # type: ignore[union-attr]
    data = json.loads(run_cli(["ready", DIR, "--json"], cwd=repo).out)
    assert next(iter(data)) == "schema_version" and data["ready"] is False and data["findings"]
    # drift: a class the design names was renamed in the code
    clock = repo / "examples" / "ratelimit" / "ratelimit" / "clock.py"
    assert "class Clock(Protocol):" in clock.read_text()
    clock.write_text(clock.read_text().replace("class Clock(Protocol):", "class TimeSource(Protocol):"))
    text = run_cli(["drift", DIR, "--output-format", "text"], cwd=repo)
    assert text.code == 1
    assert text.out.startswith(f"{DIR}/_workflow/design.md:") and "drift-renamed [should-fix]" in text.out
    rd = json.loads(run_cli(["drift", DIR, "--output-format", "rdjson"], cwd=repo).out)
    assert "drift-renamed" in {d["code"]["value"] for d in rd["diagnostics"]}
    out = repo / "drift.sarif"
    assert run_cli(["drift", DIR, "--output-format", "sarif", "--output-file", str(out)], cwd=repo).out == ""
    assert "drift-renamed" in {r["ruleId"] for r in json.loads(out.read_text())["runs"][0]["results"]}
    # batch: the batch's record as JSON, its findings in any other format
    batch = run_cli(["batch", "create", DIR, "--output-format", "json", "--force"], cwd=repo)
    record = json.loads(batch.out)
    assert next(iter(record)) == "schema_version" and record["directories"][0]["outcome"] == "PASS"
    bad = run_cli(["batch", "create", DIR, "--output-format", "yml"], cwd=repo)
    assert bad.code == 2 and "did you mean --output-format yaml" not in bad.err and "what to do:" in bad.err
