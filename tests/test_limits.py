"""Limits a run can meet that are not the token budget: the per-spawn request limit (a setting of
its own, reported as its own stop, raised on resume), and a provider that hangs or answers in
a format that is not its own."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from agentkit import make_repo
from conftest import run_cli
from graphkit import PASS, go, returns, start

from pipeline.errors import ExitCode
from pipeline.graph.deps import RunDeps
from pipeline.graph.runner import execute
from pipeline.offline.driver import engine_model
from pipeline.offline.observe import Observations
from pipeline.runs.events import read_events
from pipeline.runs.setup import load_run

DESIGN = "# Looping design\n\n## Overview\n\nA limiter that refills tokens.\n"


def looping_author(reads: int) -> Any:
    """An author that reads a file ``reads`` times (one request each) before it writes."""

    def run(params: dict[str, Any], obs: Observations) -> dict[str, Any]:
        for offset in range(1, reads + 1):
            obs.call("read", path=params["research_log_path"], offset=offset, limit=1)
        obs.call("write", path=params["output_path"], content=DESIGN)
        return {"summary": "wrote it", "output_path": params["output_path"]}

    return run


def _models(reads: int) -> dict[str, Any]:
    return {"design-author": looping_author(reads), "comprehension-review": returns(PASS)}


def test_the_request_limit_is_its_own_stop_and_a_resume_can_raise_it(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    (d.repo_root / "designloop.toml").write_text("[run]\nspawn_requests = 20\n")
    run_dir = start(d, tmp_path)
    result = go(run_dir, _models(30))
    assert result.exit_code == ExitCode.BUDGET
    assert result.message and "request limit reached: design-author made 20 model requests" in result.message
    assert "token budget" not in result.message.split("(")[0] and "--max-requests 40" in result.message
    assert result.flag == "--max-requests"
    # status shows what the stopped run spent (the stopped spawn's own requests).
    status = run_cli(["status", run_dir.name, "--runs-dir", str(tmp_path / "runs"), "--json"])
    view = json.loads(status.out)
    assert view["state"] == "stopped" and view["tokens"] > 0 and "request limit" in view["message"]
    stopped = next(e for e in read_events(run_dir) if e["type"] == "stopped")
    assert stopped["partial"]["total_tokens"] == view["tokens"]
    # A resume with the same limit stops again; a raised one lets the run finish.
    assert go(run_dir, _models(30), resume=True).exit_code == ExitCode.BUDGET

    def configure(deps: RunDeps) -> None:
        for role, engine in _models(30).items():
            deps.runtime.model_overrides[role] = engine_model(role, engine)

    run = load_run(run_dir, max_requests=40)
    finished = asyncio.run(execute(run, resume=True, configure=configure))
    assert finished.exit_code in (ExitCode.OK, ExitCode.FINDINGS), finished.message
    assert json.loads((run_dir / "run.json").read_text())["options"]["max_requests"] == 40


def test_the_request_limit_is_a_setting_and_a_flag(tmp_path: Path) -> None:
    from pipeline.settings import default_params, run_settings

    assert run_settings(default_params(), Path("defaults.toml")).spawn_requests == 100
    assert "--max-requests" in run_cli(["create", "--help"]).out
    d = make_repo(tmp_path)
    bad = run_cli(["create", str(d.root), "--max-requests", "0", "--runs-dir", str(tmp_path / "runs")])
    assert bad.code == ExitCode.BAD_INPUT and "--max-requests 0" in bad.err and "what to do:" in bad.err
    assert not (tmp_path / "runs").exists()
