"""Drives a rule-based role as a pydantic-ai FunctionModel, through the same tools as a model.

An engine is a function of the role's instructions, its params and an ``Observations``
handle. It asks for tool results with ``obs.call(tool, **args)``; a result it has not seen
yet stops the engine, and the driver answers the model request with that tool call. Each
model request replays the engine from the start over the tool results in the message
history, so the engine is a plain deterministic function with no state of its own. When
the engine returns, the driver answers with the output tool call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from pipeline.formats.contracts import AuthorOutput, ReviewOutput
from pipeline.formats.findings import Finding
from pipeline.formats.spawn_params import SpawnParams
from pipeline.offline.observe import UNREADABLE_RULE, EngineError, NeedMore, Observations, Unreadable
from pipeline.offline.pages import read_whole

PARAMS_RE = re.compile(r"Params file:\s*(?P<path>\S+)")


Output = ReviewOutput | AuthorOutput
Engine = Callable[[SpawnParams, Observations], Output]
"""A role's engine: its typed params (read back from the params file the spawn validated) and
what it has seen of its tools, in; the role's output contract, out."""
ORCHESTRATOR_FIELDS = frozenset({"file", "auto_applicable", "fix", "role", "unlocated"})
"""A finding's fields the orchestrator fills in: never part of a role's answer."""


def _params_path(messages: list[ModelMessage]) -> str:
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    match = PARAMS_RE.search(part.content)
                    if match:
                        return match.group("path")
    raise EngineError("the spawn prompt names no params file")


def _results(messages: list[ModelMessage]) -> dict[str, str]:
    found: dict[str, str] = {}
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, ToolReturnPart):
                    content = part.content
                    found[part.tool_call_id] = content if isinstance(content, str) else json.dumps(content)
    return found


def _unreadable(exc: Unreadable) -> ReviewOutput:
    finding = Finding(
        severity="blocker",
        rule=UNREADABLE_RULE,
        message=f"could not read {exc.path} whole ({exc.reason}); nothing in it was reviewed",
        suggested_fix="shorten the over-long line or split the file, then review again",
    )
    return ReviewOutput(verdict="NEEDS REVISION", findings=[finding])


def _params(obs: Observations, messages: list[ModelMessage]) -> SpawnParams:
    """The spawn's params, read through the Read tool as a model reads them, as their model."""
    try:
        raw = read_whole(obs, _params_path(messages))
    except Unreadable as exc:
        raise EngineError(f"cannot read the params file: {exc.reason}") from exc
    try:
        return SpawnParams.model_validate_json(raw)
    except ValidationError as exc:
        raise EngineError(f"the params file is not a valid params file: {exc}") from exc


def arguments(output: Output) -> dict[str, Any]:
    """The output tool's arguments: the role's contract, without the orchestrator's fields."""
    if isinstance(output, ReviewOutput):
        findings = [f.model_dump(mode="json", exclude=set(ORCHESTRATOR_FIELDS)) for f in output.findings]
        return {"verdict": output.verdict, "findings": findings}
    return output.model_dump(mode="json")


def drive(engine: Engine, review: bool = True) -> Callable[[list[ModelMessage], AgentInfo], ModelResponse]:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        obs = Observations(
            results=_results(messages),
            instructions=info.instructions or "",
            available=frozenset(t.name for t in info.function_tools),
        )
        try:
            output = engine(_params(obs, messages), obs)
        except NeedMore as more:
            return ModelResponse(parts=list(more.calls))
        except Unreadable as exc:
            if not review:
                raise
            output = _unreadable(exc)
        if not info.output_tools:
            raise EngineError("the agent has no output tool")
        tool = info.output_tools[0].name
        return ModelResponse(parts=[ToolCallPart(tool, arguments(output), tool_call_id="final")])

    return respond


def engine_model(role: str, engine: Engine, review: bool = True) -> FunctionModel:
    return FunctionModel(drive(engine, review), model_name=f"offline:{role}")
