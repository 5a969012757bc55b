from __future__ import annotations

import io
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

try:  # no test may reach a model provider
    import pydantic_ai.models

    pydantic_ai.models.ALLOW_MODEL_REQUESTS = False
except ImportError:  # the agents extra is not installed
    pass

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "docs" / "adr" / "0001-request-rate-limiter"
STAMP = "<!-- workflow-sha: " + "a" * 40 + " -->"
EXAMPLE_OUTPUTS = shutil.ignore_patterns(
    "reviews", "sync", "design.md", "design-mechanics.md", "design-mutations.md", "design-final.md",
    "design-mechanics-final.md", "*.claims.json",
)  # fmt: skip
"""What runs of the example write (ignored by git): left out of a copy, so that a test starts
from the example as committed even after the README's first command ran in the checkout."""


@dataclass
class CliResult:
    code: int
    out: str
    err: str


def run_cli(
    args: list[str], cwd: Path | None = None, env: Mapping[str, str | None] | None = None
) -> CliResult:
    """``designloop ARGS`` in this process (no interpreter start, no imports again), in ``cwd``
    when given, with ``env`` set over the environment for the call (None unsets a variable).
    A test that needs a real process (a kill, a second lock holder, a pipe) starts one."""
    from pipeline.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = sys.argv
    sys.argv = ["designloop", *args]
    code = 0
    try:
        with pytest.MonkeyPatch.context() as patch, redirect_stdout(out), redirect_stderr(err):
            # The click tree is built from the typer app alone (no setting, directory or flag
            # goes into it), once per designloop process; here once per test process too.
            import pipeline.cli.app

            patch.setattr(pipeline.cli.app, "command_tree", _built_once(pipeline.cli.app.command_tree))
            if cwd is not None:
                patch.chdir(cwd)
            for name, value in (env or {}).items():
                if value is None:
                    patch.delenv(name, raising=False)
                else:
                    patch.setenv(name, value)
            main()
    except SystemExit as exc:
        code = int(exc.code or 0)
    finally:
        sys.argv = old
    return CliResult(code, out.getvalue(), err.getvalue())


_TREE: list[Any] = []


def _built_once(build: Callable[[], Any]) -> Callable[[], Any]:
    """``build`` (the CLI's command_tree), called the first time only."""

    def tree() -> Any:
        if not _TREE:
            _TREE.append(build())
        return _TREE[0]

    return tree


def cli_done(
    args: list[str], cwd: Path, env: Mapping[str, str | None] | None = None
) -> subprocess.CompletedProcess[str]:
    """``run_cli`` with its result shaped as a finished ``designloop ARGS`` process's."""
    done = run_cli(args, cwd, env)
    return subprocess.CompletedProcess(["designloop", *args], done.code, done.out, done.err)


@pytest.fixture
def cli() -> Callable[[list[str]], CliResult]:
    return run_cli


@pytest.fixture
def example(tmp_path: Path) -> Path:
    target = tmp_path / "0001-request-rate-limiter"
    shutil.copytree(EXAMPLE, target, ignore=EXAMPLE_OUTPUTS)
    return target


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", newline="")
    return path


def design(*sections: str, title: str = "# Title", stamp: bool = True, overview: bool = True) -> str:
    parts = [STAMP] if stamp else []
    parts.append(title)
    parts.append("")
    if overview:
        parts += ["## Overview", "", "What this is.", ""]
    parts += list(sections)
    return "\n".join(parts) + "\n"


def body(name: str, text: str = "Prose.", footer: str | None = None) -> str:
    out = f"## {name}\n\n**TL;DR:** Short.\n\n{text}\n"
    if footer is not None:
        out += f"\n{footer}\n"
    return out


from lifecyclekit import actor  # noqa: E402,F401  (a fixture: who the actor is)
from pgkit import pg_server, pg_url  # noqa: E402,F401  (fixtures: a real PostgreSQL server)

SLOW_FIXTURES = frozenset({"pg_server", "pg_url"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that starts a PostgreSQL server is slow, whether or not it says so: ``pytest -m
    "not slow"`` (the inner loop) leaves it, and every test that starts designloop processes
    (marked ``slow`` where it is written), to the full run."""
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    # The slow tests first (a stable sort: each file's order is kept within each part): under
    # pytest-xdist the long ones start early, and the short ones fill in around them at the end
    # instead of one worker running a long test alone while the others wait.
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
