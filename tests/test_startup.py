"""The read-only commands start at prompt speed: each one, run as a whole process, imports
neither LangGraph nor any model SDK nor anything else only a run of the roles needs (the agent
runtime, its request cache and retries, the checkpointers, the graph). The commands that run
roles import them when they run (bench/startup.py measures the time)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from agentkit import make_repo
from conftest import run_cli

from pipeline.formats.design_dir import DesignDir

PROBE = """\
import json, sys
out, sys.argv = sys.argv[1], ["designloop", *sys.argv[2:]]
from pipeline.cli import main
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code
with open(out, "w") as handle:
    json.dump({"code": code, "modules": sorted(sys.modules)}, handle)
"""
AGENT_TIME = (
    # LangGraph and its checkpointers
    "langgraph",
    "langchain_core",
    "aiosqlite",
    # the model layer and every provider SDK
    "pydantic_ai",
    "pydantic_graph",
    "openai",
    "anthropic",
    "google",
    "groq",
    "mistralai",
    "cohere",
    "httpx",
    "httpx2",
    # the event loop the runs go on, the request cache, its retries, the PostgreSQL store and queue
    "asyncio",
    "diskcache",
    "tenacity",
    "psycopg",
    "pgqueuer",
)
"""Top-level packages only a run of the roles (or --store postgresql://) needs."""
RUN_TIME = (
    "pipeline.graph",
    "pipeline.fleet",
    "pipeline.offline",
    "pipeline.agents.runtime",
    "pipeline.agents.session",
    "pipeline.agents.cache",
    "pipeline.agents.spawn",
    "pipeline.agents.tools",
    "pipeline.runs.checkpoints",
)
"""designloop's own modules that only a run of the roles needs."""


def imported(argv: list[str], cwd: Path) -> tuple[int, list[str]]:
    """``designloop ARGV`` as a process of its own: its exit code, and every module it imported."""
    out = cwd.parent / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(out), *argv], cwd=cwd, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    return int(data["code"] or 0), list(data["modules"])


def agent_time(modules: list[str]) -> list[str]:
    return [m for m in modules if m.split(".")[0] in AGENT_TIME or m.startswith(RUN_TIME)]


@pytest.fixture(scope="module")
def design(tmp_path_factory: pytest.TempPathFactory) -> DesignDir:
    """The example after one offline `create`: a run on record, a revision, a claims ledger."""
    d = make_repo(tmp_path_factory.mktemp("startup"))
    d.design.unlink()
    done = run_cli(["create", str(d.root), "-q"], cwd=d.repo_root)
    assert done.code == 0, done.err
    assert (d.root / "_workflow" / "design.claims.json").is_file()
    return d


READ_ONLY = [
    # (the command line, with DIR for the design directory; the exit code its work ends with)
    (["--version"], 0),
    (["--help"], 0),
    (["status"], 0),
    (["status", "DIR"], 0),
    (["runs"], 0),
    (["ready", "DIR"], 1),  # a candidate, not yet accepted
    (["show", "DIR", "--revision", "current"], 0),
    (["gate", "DIR"], 0),
    (["slices", "DIR"], 0),
    (["check", "DIR"], 0),
    (["drift", "DIR"], 0),
]


@pytest.mark.slow
@pytest.mark.parametrize(("argv", "code"), READ_ONLY, ids=[" ".join(a) for a, _ in READ_ONLY])
def test_a_read_only_command_imports_nothing_a_run_needs(
    design: DesignDir, argv: list[str], code: int
) -> None:
    args = [str(design.root) if a == "DIR" else a for a in argv]
    exit_code, modules = imported(args, design.repo_root)
    assert exit_code == code  # the command did its work, not stop at a usage error
    assert agent_time(modules) == []
    assert "pipeline" in {m.split(".")[0] for m in modules}


@pytest.mark.slow
def test_the_probe_sees_what_a_command_imports_when_it_runs(design: DesignDir) -> None:
    """The same probe on `graph` (it builds the creation graph): LangGraph is imported then."""
    exit_code, modules = imported(["graph"], design.repo_root)
    assert exit_code == 0
    assert {"langgraph", "pipeline.graph.runner"} <= set(modules)


@pytest.mark.slow
def test_the_runs_are_listed_from_the_views_they_kept_not_from_their_events(design: DesignDir) -> None:
    for argv in (["runs"], ["status"]):
        code, modules = imported(argv, design.repo_root)
        assert code == 0 and not {"pipeline.runs.events", "pipeline.runs.replay"} & set(modules)
