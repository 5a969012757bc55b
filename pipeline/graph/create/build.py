"""The creation-kind graph (phase1-creation, phase4-creation) as a LangGraph StateGraph whose
context schema is the run's dependencies (graph.deps.RunDeps).

Node names are the seed's steps:

step1_seed_scope -> step1_author -> step1_stamp -> step3_mechanical_checks
  -> blocker or no draft: step6_mechanical_first (a round) -> step1_author
  -> step4_plan_fanout -> [step4_audit_slice x n, step4_second_check] -> step5_merge -> step6_evaluate
  -> dual-clean: step4_s3_gate (phase 1) -> step4_comprehension_gate
     not clean, budget left: step6_next_round -> step1_author
     decision-shaped: phase 1 step4_surface_decision -> step6_next_round; phase 4 step6_outcome
  -> step6_outcome -> step7_review_log -> step9_present
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from pipeline.formats.kinds import PHASE1
from pipeline.graph.create import author, finish, gate, review
from pipeline.graph.create.state import RunState
from pipeline.graph.deps import RunDeps
from pipeline.graph.node import node

AUTHOR_RETRIES = 1  # an author that wrote no draft is re-spawned once
AfterMechanical = Literal["step6_mechanical_first", "step6_outcome", "step4_plan_fanout"]
AfterEvaluate = Literal[
    "step4_surface_decision", "step4_s3_gate", "step4_comprehension_gate", "step6_next_round", "step6_outcome"
]
AfterComprehension = Literal["step4_surface_decision", "step6_outcome", "step6_next_round"]
AfterSurface = Literal["step6_next_round", "step6_outcome"]


def after_mechanical(state: RunState) -> AfterMechanical:
    if state.author is None or not state.author.draft_ok:
        if state.author_failures <= AUTHOR_RETRIES and state.budget_left():
            return "step6_mechanical_first"
        return "step6_outcome"
    if any(f.severity == "blocker" for f in state.mechanical):
        return "step6_mechanical_first" if state.budget_left() else "step6_outcome"
    return "step4_plan_fanout"


def after_evaluate(state: RunState) -> AfterEvaluate:
    ev = state.evaluation
    assert ev is not None
    if ev.surface:
        # Phase 4 never writes the frozen research log: the gap needs a phase-0 decision.
        return "step4_surface_decision" if state.kind == PHASE1 else "step6_outcome"
    if ev.dual_clean:
        return "step4_s3_gate" if state.kind == PHASE1 else "step4_comprehension_gate"
    return "step6_next_round" if state.budget_left() else "step6_outcome"


def after_comprehension(state: RunState) -> AfterComprehension:
    comprehension = state.comprehension
    assert comprehension is not None
    if any(f.decision_shaped for f in comprehension.findings):
        return "step4_surface_decision" if state.kind == PHASE1 else "step6_outcome"
    if comprehension.status == "ok" and not any(f.blocking for f in comprehension.findings):
        # Mechanical should-fix findings still go to the author while the budget lasts, and an
        # author that never confirmed its draft is asked again.
        pending = any(f.blocking for f in state.mechanical) or unconfirmed(state)
        return "step6_next_round" if pending and state.budget_left() else "step6_outcome"
    if comprehension.status == "ok" and state.budget_left():
        return "step6_next_round"
    return "step6_outcome"


def unconfirmed(state: RunState) -> bool:
    """This round's author returned no valid output twice, though a draft is on disk."""
    author = state.author
    return author is not None and author.round == state.round and author.status != "ok"


def after_surface(state: RunState) -> AfterSurface:
    return "step6_next_round" if state.budget_left() else "step6_outcome"


NODES: dict[str, Callable[..., Any] | Callable[..., Awaitable[Any]]] = {
    "step1_seed_scope": author.step1_seed_scope,
    "step1_author": author.step1_author,
    "step1_stamp": author.step1_stamp,
    "step3_mechanical_checks": review.step3_mechanical_checks,
    "step6_mechanical_first": author.step6_mechanical_first,
    "step4_plan_fanout": review.step4_plan_fanout,
    "step4_audit_slice": review.step4_audit_slice,
    "step4_second_check": review.step4_second_check,
    "step5_merge": review.step5_merge,
    "step6_evaluate": review.step6_evaluate,
    "step6_next_round": author.step6_next_round,
    "step4_s3_gate": gate.step4_s3_gate,
    "step4_comprehension_gate": gate.step4_comprehension_gate,
    "step4_surface_decision": gate.step4_surface_decision,
    "step6_outcome": finish.step6_outcome,
    "step7_review_log": finish.step7_review_log,
    "step9_present": finish.step9_present,
}


def build_graph(
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    graph: StateGraph[Any, Any, Any, Any] = StateGraph(RunState, context_schema=RunDeps)
    for name, fn in NODES.items():
        graph.add_node(name, node(fn))
    graph.add_edge(START, "step1_seed_scope")
    graph.add_edge("step1_seed_scope", "step1_author")
    graph.add_edge("step1_author", "step1_stamp")
    graph.add_edge("step1_stamp", "step3_mechanical_checks")
    graph.add_conditional_edges(
        "step3_mechanical_checks",
        after_mechanical,
        ["step6_mechanical_first", "step6_outcome", "step4_plan_fanout"],
    )
    graph.add_edge("step6_mechanical_first", "step1_author")
    graph.add_conditional_edges(
        "step4_plan_fanout", review.route_fanout, ["step4_audit_slice", "step4_second_check"]
    )
    # The fan-out's spawns all run in one superstep; the merge runs once after it.
    graph.add_edge("step4_audit_slice", "step5_merge")
    graph.add_edge("step4_second_check", "step5_merge")
    graph.add_edge("step5_merge", "step6_evaluate")
    graph.add_conditional_edges(
        "step6_evaluate",
        after_evaluate,
        [
            "step4_surface_decision",
            "step4_s3_gate",
            "step4_comprehension_gate",
            "step6_next_round",
            "step6_outcome",
        ],
    )
    graph.add_edge("step6_next_round", "step1_author")
    graph.add_edge("step4_s3_gate", "step4_comprehension_gate")
    graph.add_conditional_edges(
        "step4_comprehension_gate",
        after_comprehension,
        ["step4_surface_decision", "step6_outcome", "step6_next_round"],
    )
    graph.add_conditional_edges(
        "step4_surface_decision", after_surface, ["step6_next_round", "step6_outcome"]
    )
    graph.add_edge("step6_outcome", "step7_review_log")
    graph.add_edge("step7_review_log", "step9_present")
    graph.add_edge("step9_present", END)
    return graph.compile(checkpointer=checkpointer, name="designloop")
