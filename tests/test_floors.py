"""pyproject's version floors are ones the code runs on: a fresh virtual environment gets every
direct dependency at the lowest release its range allows (uv's ``--resolution lowest-direct``),
and designloop starts, explains a rule, writes, checks, edits and finalises the bundled example
on it, with nothing on stderr but its own words (no traceback, no library's warning).

It installs from the package index (the floors are old releases no local cache keeps), so it
is slow; where the index cannot be reached it is skipped with that reason."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import ROOT
from ptykit import fresh_clone

pytestmark = pytest.mark.slow

FLOOR = re.compile(r"^(?P<name>[A-Za-z0-9_.-]+)(?:\[[^\]]*\])?\s*>=\s*(?P<floor>[0-9][^,;\s]*)")
EXAMPLE = "examples/docs/adr/0001-request-rate-limiter"
COMMANDS: list[tuple[list[str], int]] = [
    (["--version"], 0),
    (["rule", "dsc-reverse-ref"], 0),
    (["gate", EXAMPLE], 0),
    (["create", EXAMPLE, "-q"], 0),
    (["check", EXAMPLE, "--output-format", "text"], 0),
    (["edit", EXAMPLE, "--kind", "section-rename", "--section", "Conventions", "--to", "Naming", "-q"], 0),
    (["final", EXAMPLE, "-q"], 0),
    (["drift", EXAMPLE], 0),
    (["batch"], 2),
    (["create", "--budjet", "3", EXAMPLE], 2),
]
OWN_WORDS = re.compile(
    r"^(designloop: |warning: design\.md|  |Usage: |Options:|Commands:|$|run \d{8}-|\S+: profile (house|any) \()"
)
"""What designloop itself writes on stderr in the commands above."""


def test_every_dependency_names_a_floor() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    for spec in project["dependencies"]:
        assert FLOOR.match(spec), f"{spec}: every dependency names a floor"


def test_designloop_runs_on_every_floor(tmp_path: Path) -> None:
    clone = fresh_clone(tmp_path)
    tools, venv = tmp_path / "tools", tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(tools)], check=True, timeout=300)
    got_uv = subprocess.run(
        [str(tools / "bin" / "python"), "-m", "pip", "install", "--quiet", "uv"],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    if got_uv.returncode != 0:
        pytest.skip(f"uv cannot be installed from the package index: {got_uv.stderr.strip()[-300:]}")
    uv = str(tools / "bin" / "uv")
    subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True, timeout=300)
    installed = subprocess.run(
        [uv, "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"),
         "--resolution", "lowest-direct", str(clone)],
        capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-4000:]
    designloop = str(venv / "bin" / "designloop")
    for argv, code in COMMANDS:
        done = subprocess.run([designloop, *argv], cwd=clone, capture_output=True, text=True, timeout=900)
        assert done.returncode == code, (argv, done.stdout[-2000:], done.stderr[-2000:])
        foreign = [line for line in done.stderr.splitlines() if not OWN_WORDS.match(line)]
        assert not foreign, (argv, foreign[:10])
