"""The graph as a LangGraph application (langgraph.json), for LangGraph Studio and deployment.

The platform supplies its own checkpointer. A run's services are built from the assistant's
configuration (graph.deps.studio_deps): ``configurable.directory`` (the design directory)
and, optionally, ``configurable.model`` (a pydantic-ai model string for every role; the
offline engine otherwise). Input: ``{"run_id": "<any id>", "kind": "phase1-creation" |
"phase4-creation"}``; the first node fills in the rest.
"""

from __future__ import annotations

from pipeline.graph.build import build_graph

graph = build_graph()
