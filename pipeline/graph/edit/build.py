"""The interactive kinds' graph: the single-agent loop as a LangGraph StateGraph.

step1_apply (design-sync: step1_5_distill)
  -> nothing applied, or a zero-delta sync: step6_outcome
  -> step2_scope -> step3_mechanical_checks
       -> a blocker, or mechanics-edit (no cold read): step5_merge
       -> step4_comprehension_gate + step4_readability_auditor (what the edit wrote) -> step5_merge
  -> step5_merge: clean -> step6_outcome; open with budget left -> step6_fix -> step3_mechanical_checks
  -> step6_outcome -> step7_review_log -> step8_sync_suggestion -> step9_present
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from pipeline.formats.kinds import DESIGN_SYNC
from pipeline.graph.deps import RunDeps
from pipeline.graph.edit import apply, finish, review
from pipeline.graph.edit.state import EditState
from pipeline.graph.node import node

AfterApply = Literal["step1_5_distill", "step2_scope", "step6_outcome"]
AfterDistill = Literal["step2_scope", "step6_outcome"]
ColdReads = Literal["step4_comprehension_gate", "step4_readability_auditor", "step5_merge"]
AfterMerge = Literal["step6_fix", "step6_outcome"]

NODES: dict[str, Callable[..., Any] | Callable[..., Awaitable[Any]]] = {
    "step1_apply": apply.step1_apply,
    "step1_5_distill": apply.step1_5_distill,
    "step2_scope": review.step2_scope,
    "step3_mechanical_checks": review.step3_mechanical_checks,
    "step4_comprehension_gate": review.step4_comprehension_gate,
    "step4_readability_auditor": review.step4_readability_auditor,
    "step5_merge": review.step5_merge,
    "step6_fix": review.step6_fix,
    "step6_outcome": finish.step6_outcome,
    "step7_review_log": finish.step7_review_log,
    "step8_sync_suggestion": finish.step8_sync_suggestion,
    "step9_present": finish.step9_present,
}


def after_apply(state: EditState) -> AfterApply:
    if state.kind == DESIGN_SYNC:
        return "step1_5_distill"
    applied = state.applied
    return "step2_scope" if applied is not None and applied.applied else "step6_outcome"


def after_distill(state: EditState) -> AfterDistill:
    sync, applied = state.sync, state.applied
    if sync is None or sync.zero or applied is None or not applied.applied:
        return "step6_outcome"
    return "step2_scope"


def cold_reads(state: EditState) -> list[ColdReads]:
    """Step 4 runs only on a structurally sound document, and never for mechanics-edit: the
    comprehension gate, and the readability auditor on what the edit wrote (design-sync: on the
    whole re-distilled design)."""
    scope = state.scope
    assert scope is not None
    if scope.cold_read == "skipped" or review.blockers(state.mechanical):
        return ["step5_merge"]
    return ["step4_comprehension_gate", "step4_readability_auditor"]


def after_merge(state: EditState) -> AfterMerge:
    if state.open_findings() and state.budget_left():
        return "step6_fix"
    return "step6_outcome"


def build_edit_graph(
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    graph: StateGraph[Any, Any, Any, Any] = StateGraph(EditState, context_schema=RunDeps)
    for name, fn in NODES.items():
        graph.add_node(name, node(fn))
    graph.add_edge(START, "step1_apply")
    graph.add_conditional_edges(
        "step1_apply", after_apply, ["step1_5_distill", "step2_scope", "step6_outcome"]
    )
    graph.add_conditional_edges("step1_5_distill", after_distill, ["step2_scope", "step6_outcome"])
    graph.add_edge("step2_scope", "step3_mechanical_checks")
    graph.add_conditional_edges(
        "step3_mechanical_checks",
        cold_reads,
        ["step4_comprehension_gate", "step4_readability_auditor", "step5_merge"],
    )
    # The two cold reads run in one superstep; the merge runs once after it.
    graph.add_edge("step4_comprehension_gate", "step5_merge")
    graph.add_edge("step4_readability_auditor", "step5_merge")
    graph.add_conditional_edges("step5_merge", after_merge, ["step6_fix", "step6_outcome"])
    graph.add_edge("step6_fix", "step3_mechanical_checks")
    graph.add_edge("step6_outcome", "step7_review_log")
    graph.add_edge("step7_review_log", "step8_sync_suggestion")
    graph.add_edge("step8_sync_suggestion", "step9_present")
    graph.add_edge("step9_present", END)
    return graph.compile(checkpointer=checkpointer, name="designloop-edit")
