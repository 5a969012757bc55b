"""The prompts match the protocol: every role is told its output tool and that tool's
arguments, names only tools it has, and shares one definition where two roles must agree."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from agentkit import make_repo, runtime

from pipeline.agents.roles import instructions_for, load_prompt, load_roles
from pipeline.agents.tools import TOOL_FUNCTIONS
from pipeline.formats.contracts import OUTPUT_TYPES
from pipeline.formats.findings import Finding
from pipeline.formats.research_log import parse_research_log
from pipeline.formats.textio import decode

ROLES = load_roles()
WIRE = {key: name for key, (_, name) in TOOL_FUNCTIONS.items()}
"""Allow-list name -> the tool's name on the wire (what a model calls)."""
OUTPUT_TOOL = "final_result"


def _said(role: str) -> str:
    return instructions_for(ROLES[role]) + load_prompt("spawn.md")


def _named_tools(text: str) -> set[str]:
    """The tools a text names: in backticks by their wire names, or as "the X tool"."""
    wire = set(WIRE.values()) | {OUTPUT_TOOL}
    named = {m for m in re.findall(r"`([a-z_]+)`", text) if m in wire}
    named |= {m.lower() for m in re.findall(r"\bthe (Read|Grep|Glob|Write|Edit|Bash|PSI) tool\b", text)}
    return named


@pytest.mark.parametrize("role", sorted(ROLES))
def test_each_role_is_told_to_finish_with_its_output_tool_and_its_arguments(role: str) -> None:
    text = _said(role)
    assert f"`{OUTPUT_TOOL}`" in text
    schema = OUTPUT_TYPES[ROLES[role].output].model_json_schema()
    for argument in schema["properties"]:
        assert f"`{argument}`" in text, f"{role}'s prompt never names final_result's argument {argument}"
    if ROLES[role].output == "review":
        for field in Finding.model_json_schema()["properties"]:
            assert f"`{field}`" in text, f"{role}'s prompt never names a finding's {field}"
    assert "return `{" not in text.lower(), "a prompt that asks for JSON as text, not the tool"


@pytest.mark.parametrize("role", sorted(ROLES))
def test_each_tool_a_prompt_names_is_on_the_roles_allow_list(role: str) -> None:
    allowed = {WIRE[t] for t in ROLES[role].tools} | {OUTPUT_TOOL}
    named = _named_tools(_said(role))
    assert named <= allowed, f"{role}'s prompt names {sorted(named - allowed)}, which it does not have"
    assert "read" in named


def test_the_tools_a_model_is_given_are_the_allow_list_and_the_output_tool(tmp_path: Path) -> None:
    from pydantic_ai.messages import ModelResponse, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from pipeline.agents.inputs import round1_spawns
    from pipeline.settings import Limits

    d = make_repo(tmp_path)
    seen: dict[str, list[str]] = {}

    def answer_for(role: str) -> FunctionModel:
        def respond(messages: object, info: AgentInfo) -> ModelResponse:
            seen[role] = [t.name for t in info.function_tools] + [t.name for t in info.output_tools]
            args = (
                {"summary": "x", "output_path": "x"}
                if ROLES[role].output == "author"
                else {"verdict": "PASS", "findings": []}
            )
            return ModelResponse(parts=[ToolCallPart(OUTPUT_TOOL, args)])

        return FunctionModel(respond)

    for role in ("design-author", "fidelity-check", "readability-auditor", "comprehension-review"):
        rt = runtime(d, model_overrides={role: answer_for(role)})
        params = round1_spawns(role, d, Limits(), draft=d.design)[0]
        asyncio.run(rt.spawn(params, d))
        assert seen[role] == [WIRE[t] for t in ROLES[role].tools] + [OUTPUT_TOOL]


def test_the_author_and_the_absorption_check_share_one_load_bearing_definition() -> None:
    for role in ("design-author", "absorption-check"):
        assert "load-bearing.md" in ROLES[role].prompts
        assert "Load-bearing decisions" in instructions_for(ROLES[role])
    shared = load_prompt("load-bearing.md")
    # The definition the parser applies (docs/formats.md §3) is the one the prompt states.
    for value, bearing in (
        ("none", False),
        ("N/A", False),
        ("-", False),
        ("", False),
        ("a ring buffer", True),
    ):
        log = f"# L\n\n## Decision Log\n\n### D1: Pick\n**Decision:** x\n**Alternatives rejected:** {value}\n"
        parsed = parse_research_log(decode(log.encode(), Path("research-log.md")))
        assert bool(parsed.load_bearing()) is bearing
    for token in (
        "`none`",
        "`n/a`",
        "`-`",
        "empty",
        "**Alternatives rejected:**",
        "**Source:** research-log D<k>",
    ):
        assert token in shared
    assert (
        "absorption" not in ROLES["design-author"].body.lower()
    )  # the author is told the rule, not the reviewer


def test_the_author_is_told_the_whole_job() -> None:
    text = _said("design-author")
    for part in (
        "## Overview",
        "## Core Concepts",
        "## Class Design",
        "## Workflow",
        "# Part N:",
        "**TL;DR:**",
    ):
        assert part in text
    for part in (
        "design_mechanics_path",
        "**Mechanics:** design-mechanics.md §",
        "byte for byte",
        "design-mechanics-final.md",
    ):
        assert part in text
    assert "Decision Log" in text and "do not become Decision Records" in text  # phase 4's tracks
    assert "When PSI finds no definition" in text


def test_every_prompt_that_relies_on_psi_says_what_to_do_when_it_finds_nothing() -> None:
    for role, definition in ROLES.items():
        if "PSI" in definition.tools:
            text = _said(role)
            assert re.search(r"PSI\s+(still\s+)?finds\s+no(thing|\s+definition|\s+such\s+name)", text), role


def test_the_comprehension_reviewer_has_a_rule_for_ambiguity_and_room_for_others() -> None:
    text = _said("comprehension-review")
    assert "`cr-ambiguous`" in text
    assert "rule ID of your own" in text and "`suggestion` severity only" in text


def test_the_fidelity_check_knows_the_code_wins_and_names_its_unchecked_rule() -> None:
    text = _said("fidelity-check")
    assert "the code wins" in text and "`fid-stale-episode`" in text and "`fid-code-unchecked`" in text
    stale = next(item for item in text.split("\n   - ") if "`fid-stale-episode`" in item)
    assert "`suggestion`" in stale and "nothing to fix" in stale  # reported to the user, not the author


def test_the_inline_editor_reads_the_code_and_writes_only_the_design() -> None:
    editor = ROLES["inline-editor"]
    assert set(editor.tools) == {"Read", "Grep", "Edit", "PSI"} and editor.cold
    assert "Code facts in an instruction" in _said("inline-editor")


def test_the_instruction_reaches_the_editor_as_a_request_not_a_blocker(tmp_path: Path) -> None:
    from conftest import run_cli

    d = make_repo(tmp_path)
    result = run_cli(
        [
            "edit",
            str(d.root),
            "--kind",
            "content-edit",
            "--section",
            "Overview",
            "--instruction",
            "Say that buckets refill lazily.",
            "--runs-dir",
            str(tmp_path / "runs"),
        ]
    )
    assert result.code in (0, 1), result.err
    [written] = d.reviews.glob("*/r1-inline-editor.json")  # the run's own params folder
    params = json.loads(written.read_text())
    assert params["instruction"] == "Say that buckets refill lazily."
    assert params["changed_section"] == "Overview"
    assert all(p["rule"] != "edit-instruction" for p in params["flagged_passages"])
