"""The creation graph as a LangGraph application (langgraph.json), for LangGraph Studio and
deployment.

The platform supplies its own checkpointer and hands a run only JSON: the run's ``context``
holds ``directory`` (the design directory) and, optionally, ``model`` (a pydantic-ai model
string for every role; the offline engine otherwise). This module builds the run's services
from that context, here and nowhere else, and runs the creation graph with them as its context:
the application is one node, ``designloop``, that invokes the creation graph, which LangGraph
runs as its subgraph (its checkpoints, its pause at the S3 gate and its resume are the
platform's). Input: ``{"run_id": "<any id>", "kind": "phase1-creation" | "phase4-creation"}``;
the first node fills in the rest.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from pipeline.agents.session import SessionOptions, open_session
from pipeline.formats.design_dir import open_design_dir
from pipeline.graph.create.build import build_graph
from pipeline.graph.create.state import RunState
from pipeline.graph.deps import RunDeps, build_deps
from pipeline.graph.node import node


@dataclass(slots=True)
class StudioContext:
    """What a Studio run is given: the design directory, and a model for every role."""

    directory: str
    model: str | None = None


def studio_deps(context: StudioContext, thread_id: str) -> RunDeps:
    """The services of a Studio run: its records under the repository's runs directory."""
    design = open_design_dir(Path(context.directory))
    session = open_session(design.repo_root, SessionOptions(model=context.model))
    run_dir = session.runs_dir / f"studio-{thread_id}"
    deps = build_deps(session.runtime, design, session.limits, session.run, run_dir, warmup=True)
    deps.requested_by = "studio"  # recorded with the revisions the run leaves
    return deps


CREATION = build_graph()


async def designloop(state: RunState, runtime: Runtime[StudioContext]) -> Any:
    """The creation graph, run with the services built from the run's context (LangGraph hands
    the subgraph this node's configuration: its thread, checkpointer and resume). Building
    them reads the repository's settings and makes the run's directory: in a thread, off the
    event loop the server runs every run on."""
    info = runtime.execution_info
    deps = await asyncio.to_thread(studio_deps, runtime.context, (info.thread_id if info else None) or "run")
    return await CREATION.ainvoke(state.model_dump(mode="json"), context=deps)


def build_studio_graph(
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    graph: StateGraph[Any, Any, Any, Any] = StateGraph(RunState, context_schema=StudioContext)
    graph.add_node("designloop", node(designloop))
    graph.add_edge(START, "designloop")
    graph.add_edge("designloop", END)
    return graph.compile(checkpointer=checkpointer, name="designloop")


graph = build_studio_graph()
