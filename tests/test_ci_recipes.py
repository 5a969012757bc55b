"""The CI recipes in the docs are the tested ones: each workflow lives in examples/ci/ and the
docs include it verbatim (docs/include.py), every action is pinned to a full commit SHA, every
YAML block in the docs parses, actionlint finds nothing where it is installed, and the steps a
pull request runs work as written."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT


def _include_module() -> Any:
    """docs/include.py, the tool that copies each included file into the docs."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("include", ROOT / "docs" / "include.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


includes = _include_module().includes

PAGES = sorted([*(ROOT / "docs").glob("*.md"), ROOT / "README.md"])
WORKFLOWS = sorted((ROOT / "examples" / "ci").glob("*.yml"))
YAML_BLOCK = re.compile(r"^```ya?ml\n(.*?)^```$", re.M | re.S)
PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+(\.\d+)*$")


def _blocks() -> list[tuple[str, str]]:
    return [
        (page.name, block) for page in PAGES for block in YAML_BLOCK.findall(page.read_text(encoding="utf-8"))
    ]


def test_every_yaml_block_in_the_docs_parses() -> None:
    blocks = _blocks()
    assert len(blocks) >= 4
    for name, block in blocks:
        assert yaml.safe_load(block) is not None, name


def test_the_docs_show_each_workflow_exactly_as_its_file_holds_it() -> None:
    shown = {path: body for page in PAGES for path, body in includes(page.read_text(encoding="utf-8"))}
    assert {ROOT / p for p in shown} >= set(WORKFLOWS)  # every workflow is shown
    for path, body in shown.items():
        assert body == (ROOT / path).read_text(encoding="utf-8"), f"{path}: run python docs/include.py"


def _uses(flow: dict[Any, Any]) -> list[str]:
    return [step["uses"] for job in flow["jobs"].values() for step in job["steps"] if "uses" in step]


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_every_action_is_pinned_to_a_commit_and_designloop_comes_from_its_source(workflow: Path) -> None:
    text = workflow.read_text(encoding="utf-8")
    lines = [
        line.strip().removeprefix("- ").removeprefix("uses: ")
        for line in text.splitlines()
        if "uses:" in line
    ]
    assert lines and all(PINNED.match(line) for line in lines), lines
    assert len(_uses(yaml.safe_load(text))) == len(lines)
    assert not re.search(r"pip install ['\"]?designloop(\[[^]]*\])?['\"]?\s*$", text, re.M)
    assert "@ ${DESIGNLOOP_SOURCE}" in text


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_actionlint_finds_nothing_in_each_workflow(workflow: Path) -> None:
    actionlint = shutil.which(
        "actionlint", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    )
    if actionlint is None:
        pytest.skip("actionlint is not installed (pip install -e '.[lint]')")
    checked = subprocess.run(
        [actionlint, "-no-color", str(workflow)], capture_output=True, text=True, timeout=120
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.slow
def test_the_pull_request_steps_run_as_written(tmp_path: Path) -> None:
    from batchkit import batch_repo

    repo = batch_repo(tmp_path, ["a", "b"])
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "NO_COLOR", "FORCE_COLOR")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    made = subprocess.run(
        ["designloop", "batch", "create", "docs/adr/*"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert made.returncode == 0, made.stderr
    flow = yaml.safe_load((ROOT / "examples" / "ci" / "designloop-drift.yml").read_text(encoding="utf-8"))
    steps = [
        s for s in flow["jobs"]["pull-request"]["steps"] if "run" in s and "designloop" in s.get("name", "")
    ]
    assert [s["name"] for s in steps][-2:] == [
        "designloop check (annotations on the pull request)",
        "designloop drift",
    ]
    outputs = tmp_path / "github-output"
    for step in steps[-2:]:
        done = subprocess.run(
            ["bash", "-e", "-c", step["run"]], cwd=repo, env=env | {"GITHUB_OUTPUT": str(outputs)},
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert "::error" not in done.stdout
    assert outputs.read_text() == "exit=0\n"
    assert json.loads((repo / "drift.sarif").read_text())["version"] == "2.1.0"
