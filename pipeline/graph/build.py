"""The creation-kind graph (phase1-creation, phase4-creation) as a LangGraph StateGraph.

step1_author -> step3_mechanical_checks -> (blocker or no draft: respawn_author, a round)
  -> step4_plan_fanout -> [step4_audit_slice x n, step4_second_check] -> step6_evaluate
  -> dual-clean: s3_gate (phase 1) -> step4_comprehension_gate
     not clean, budget left: next_round -> step1_author
     decision-shaped: surface_decision -> next_round
  -> finish -> step7_review_log -> stamp -> step9_present
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from pipeline.graph import loop as loop_nodes
from pipeline.graph import wrapup as gate_nodes
from pipeline.graph.state import PHASE1, RunState, blocking

AUTHOR_RETRIES = 1  # an author that wrote no draft is re-spawned once


def _budget_left(state: RunState) -> bool:
    return state["round"] < state["budget"]


def after_mechanical(state: RunState) -> str:
    if not state["author"]["draft_ok"]:
        if state.get("author_failures", 0) <= AUTHOR_RETRIES and _budget_left(state):
            return "respawn_author"
        return "finish"
    if any(f["severity"] == "blocker" for f in state.get("mechanical", [])):
        return "respawn_author" if _budget_left(state) else "finish"
    return "step4_plan_fanout"


def after_evaluate(state: RunState) -> str:
    ev = state["evaluation"]
    if ev["surface"]:
        return "surface_decision"
    if ev["dual_clean"]:
        return "s3_gate" if state["kind"] == PHASE1 else "step4_comprehension_gate"
    return "next_round" if _budget_left(state) else "finish"


def after_comprehension(state: RunState) -> str:
    comprehension = state["comprehension"]
    if any(f.get("decision_shaped") for f in comprehension["findings"]):
        return "surface_decision"
    if comprehension["status"] == "ok" and not blocking(comprehension["findings"]):
        return "finish"
    if comprehension["status"] == "ok" and _budget_left(state):
        return "next_round"
    return "finish"


def after_surface(state: RunState) -> str:
    return "next_round" if _budget_left(state) else "finish"


def build_graph(
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    graph: StateGraph[Any, Any, Any, Any] = StateGraph(RunState)
    graph.add_node("step1_seed_scope", loop_nodes.step1_seed_scope)
    graph.add_node("step1_author", loop_nodes.step1_author)
    graph.add_node("step3_mechanical_checks", loop_nodes.step3_mechanical_checks)
    graph.add_node("respawn_author", loop_nodes.respawn_author)
    graph.add_node("step4_plan_fanout", loop_nodes.step4_plan_fanout)
    # The fan-out targets take a Send payload, not the run state.
    graph.add_node("step4_audit_slice", _send_target(loop_nodes.step4_audit_slice))
    graph.add_node("step4_second_check", _send_target(loop_nodes.step4_second_check))
    graph.add_node("step6_evaluate", loop_nodes.step6_evaluate)
    graph.add_node("next_round", loop_nodes.next_round)
    graph.add_node("s3_gate", gate_nodes.s3_gate)
    graph.add_node("step4_comprehension_gate", gate_nodes.step4_comprehension_gate)
    graph.add_node("surface_decision", gate_nodes.surface_decision)
    graph.add_node("finish", gate_nodes.finish)
    graph.add_node("step7_review_log", gate_nodes.step7_review_log)
    graph.add_node("stamp", gate_nodes.stamp)
    graph.add_node("step9_present", gate_nodes.step9_present)

    graph.add_edge(START, "step1_seed_scope")
    graph.add_edge("step1_seed_scope", "step1_author")
    graph.add_edge("step1_author", "step3_mechanical_checks")
    graph.add_conditional_edges(
        "step3_mechanical_checks", after_mechanical, ["respawn_author", "finish", "step4_plan_fanout"]
    )
    graph.add_edge("respawn_author", "step1_author")
    graph.add_conditional_edges(
        "step4_plan_fanout", _route_fanout, ["step4_audit_slice", "step4_second_check"]
    )
    graph.add_edge("step4_audit_slice", "step6_evaluate")
    graph.add_edge("step4_second_check", "step6_evaluate")
    graph.add_conditional_edges(
        "step6_evaluate",
        after_evaluate,
        ["surface_decision", "s3_gate", "step4_comprehension_gate", "next_round", "finish"],
    )
    graph.add_edge("next_round", "step1_author")
    graph.add_edge("s3_gate", "step4_comprehension_gate")
    graph.add_conditional_edges(
        "step4_comprehension_gate", after_comprehension, ["surface_decision", "finish", "next_round"]
    )
    graph.add_conditional_edges("surface_decision", after_surface, ["next_round", "finish"])
    graph.add_edge("finish", "step7_review_log")
    graph.add_edge("step7_review_log", "stamp")
    graph.add_edge("stamp", "step9_present")
    graph.add_edge("step9_present", END)
    return graph.compile(checkpointer=checkpointer, name="designloop")


def _route_fanout(state: RunState, config: RunnableConfig) -> Any:
    return loop_nodes.route_fanout(state, config)


def _send_target(fn: Any) -> Any:
    return fn
