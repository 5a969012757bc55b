"""Every single-run command in a real terminal: the live view draws, the run ends with exit 0
and its outcome line, and nothing is left interrupted.

Each test here starts designloop processes on a pseudo-terminal (tests/ptykit.py), so they are
marked slow; the README's two commands run here too, as written (docs/ci.md, "The README's
commands").
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import EXAMPLE_OUTPUTS, ROOT
from ptykit import Screen, designloop_argv, fresh_clone, in_terminal

pytestmark = pytest.mark.slow

DIR = "examples/docs/adr/0001-request-rate-limiter"
OUTCOME = re.compile(r"^run (\d{8}-\d{6}-[\w-]+): (PASS|SHOULD-FIX REMAINS)\b", re.M)


def _repo(tmp_path: Path) -> Path:
    """A repository holding the example as committed (its design directory and its code)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    shutil.copytree(ROOT / "examples", repo / "examples", ignore=EXAMPLE_OUTPUTS)
    return repo


def _passed(screen: Screen, kind: str) -> str:
    """The run id of a run that drew its live view, exited 0 and said its outcome."""
    assert screen.code == 0, screen.text
    assert screen.drew_live, screen.text
    assert kind in screen.text, screen.text  # the live view's head line names the kind
    found = OUTCOME.findall(screen.text)
    assert found, screen.text
    assert "internal error" not in screen.text
    return str(found[-1][0])


def _state(repo: Path, run_id: str) -> str:
    """The run's state as ``designloop status RUN --json`` replays it from its events."""
    done = subprocess.run(
        [*designloop_argv("status", run_id, "--json")], cwd=repo, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["state"])


def test_create_edit_and_final_draw_the_live_view_and_end_with_their_outcome(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    create = in_terminal(designloop_argv("create", DIR), repo)
    first = _passed(create, "phase1-creation")
    edit = in_terminal(
        designloop_argv(
            "edit", DIR, "--kind", "section-rename", "--section", "Conventions", "--to", "Naming"
        ),
        repo,
    )
    second = _passed(edit, "section-rename")
    final = in_terminal(designloop_argv("final", DIR), repo)
    third = _passed(final, "phase4-creation")
    for run_id in (first, second, third):
        assert _state(repo, run_id) == "finished"
    assert (repo / DIR / "design-final.md").is_file()


def test_resume_after_the_gate_draws_the_live_view_and_ends_with_its_outcome(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    log = repo / DIR / "_workflow" / "research-log.md"
    resolved = log.read_text(encoding="utf-8")
    log.write_text(
        resolved.replace("### 2026-11-22 — PASS\n", "").replace("- [x] blocker:", "- [ ] blocker:"),
        encoding="utf-8",
    )
    paused = in_terminal(designloop_argv("create", DIR), repo)
    assert paused.code == 3, paused.text
    assert paused.drew_live and "paused" in paused.text
    run_id = re.findall(r"designloop resume (\S+)", paused.text)[-1]
    log.write_text(resolved, encoding="utf-8")
    resumed = in_terminal(designloop_argv("resume", run_id), repo)
    assert _passed(resumed, "phase1-creation") == run_id
    assert _state(repo, run_id) == "finished"


def readme_commands() -> list[str]:
    """The README's two "Fresh machine" commands, as the README writes them."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^Fresh machine[^\n]*\n\n```sh\n(.*?)\n```", text, re.M | re.S)
    assert len(blocks) == 2, blocks
    return [block.strip() for block in blocks]


def _fresh_shell() -> dict[str, str | None]:
    """A new shell's environment: no virtual environment active, its bin/ off the PATH."""
    import os
    import sys

    here = str(Path(sys.prefix) / "bin")
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p != here)
    return {"VIRTUAL_ENV": None, "PATH": path, "PYTHONPATH": None, "DESIGNLOOP_MODEL": None}


INNER_TESTS = "tests/test_slices.py"
"""The tests the README's second command runs here (docs/ci.md, "The README's commands"): it
runs as written, and PYTEST_ADDOPTS names one file, since the whole suite cannot run inside
one of its own tests."""


def test_the_readmes_two_commands_run_as_written_in_a_terminal_on_a_fresh_clone(tmp_path: Path) -> None:
    first, second = readme_commands()
    clone = fresh_clone(tmp_path)
    created = in_terminal(["bash", "-c", first], clone, _fresh_shell())
    _passed(created, "phase1-creation")
    assert (clone / DIR / "_workflow" / "design.md").is_file()
    assert (clone / ".venv" / "bin" / "designloop").is_file()  # the clone's own install ran it
    tested = in_terminal(
        ["bash", "-c", second],
        clone,
        _fresh_shell() | {"PYTEST_ADDOPTS": f"-p no:cacheprovider {INNER_TESTS}"},
    )
    assert tested.code == 0, tested.text
    assert re.search(r"\b\d+ passed\b", tested.text) and " failed" not in tested.text, tested.text
