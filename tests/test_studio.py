"""LangGraph Studio's application: the run's services are built from the run's JSON context by
the Studio module itself, and reach the creation graph as its context (no global cache)."""

from __future__ import annotations

import asyncio
from typing import Any

from agentkit import make_repo
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from pipeline.formats.review_log import parse_entries
from pipeline.graph.studio import StudioContext, build_studio_graph, graph
from pipeline.runs.event_log import events_of
from pipeline.runs.events import Finished


def test_the_application_takes_its_directory_and_model_as_context() -> None:
    assert graph.context_schema is StudioContext
    schema = graph.get_context_jsonschema()
    assert schema is not None
    assert set(schema["properties"]) == {"directory", "model"}


def test_a_studio_run_pauses_at_the_gate_and_resumes_to_pass(tmp_path: Any) -> None:
    d = make_repo(tmp_path)
    d.design.unlink()
    text = d.research_log.read_text()
    opened = text + "\n### 2026-11-25 — NEEDS REVISION\n- [ ] blocker: D2 ignores Redis cluster slots.\n"
    d.research_log.write_text(opened)
    app = build_studio_graph(InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t1"}}
    context = {"directory": str(d.root)}

    async def go(value: Any) -> dict[str, Any]:
        return dict(await app.ainvoke(value, config, context=context))

    paused = asyncio.run(go({"run_id": "studio-1", "kind": "phase1-creation"}))
    assert paused["__interrupt__"][0].value["gate"]["state"] == "open" and not d.mutations.exists()
    d.research_log.write_text(opened.replace("- [ ] blocker: D2", "- [x] blocker: D2"))
    done = asyncio.run(go(Command(resume={"resumed_at": "now"})))
    assert done["outcome"]["verdict"] == "PASS" and done["draft"].endswith("_workflow/design.md")
    [entry] = parse_entries(d.mutations)
    assert entry.run_id == "studio-1"
    # The finish recorded the revision as Studio's (docs/lifecycle.md).
    assert [(r.file, r.number, r.requested_by) for r in entry.revisions] == [("design", 1, "studio")]
    run_dir = d.repo_root / "runs" / "studio-t1"
    assert [e.outcome for e in events_of(run_dir, Finished)] == ["PASS"]
