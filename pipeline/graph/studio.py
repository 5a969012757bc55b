"""The graph as a LangGraph application (langgraph.json), for LangGraph Studio and deployment.

The platform supplies its own checkpointer. A run's services are built from the assistant's
configuration: ``configurable.directory`` (the design directory) and, optionally,
``configurable.model`` (a pydantic-ai model string for every role; the offline engine
otherwise). Input: ``{"run_id": "<any id>", "kind": "phase1-creation" | "phase4-creation"}``;
the first node fills in the rest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.agents.session import SessionOptions, open_session
from pipeline.formats.design_dir import open_design_dir
from pipeline.graph.build import build_graph
from pipeline.graph.state import RunDeps, build_deps

_CACHE: dict[tuple[str, str, str | None], RunDeps] = {}


def deps_from_configurable(configurable: dict[str, Any]) -> RunDeps | None:
    directory = configurable.get("directory")
    if not isinstance(directory, str):
        return None
    key = (directory, str(configurable.get("thread_id")), configurable.get("model"))
    if key not in _CACHE:
        design = open_design_dir(Path(directory))
        session = open_session(design.repo_root, SessionOptions(model=configurable.get("model")))
        run_dir = session.runs_dir / f"studio-{configurable.get('thread_id', 'run')}"
        _CACHE[key] = build_deps(session.runtime, design, session.limits, session.run, run_dir, warmup=True)
    return _CACHE[key]


graph = build_graph()
