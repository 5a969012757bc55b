"""Drives a rule-based role as a pydantic-ai FunctionModel, through the same tools as a model.

An engine is a function of the role's instructions, its params and an ``Observations``
handle. It asks for tool results with ``obs.call(tool, **args)``; a result it has not seen
yet stops the engine, and the driver answers the model request with that tool call. Each
model request replays the engine from the start over the tool results in the message
history, so the engine is a plain deterministic function with no state of its own. When
the engine returns, the driver answers with the output tool call.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

PARAMS_RE = re.compile(r"Params file:\s*(?P<path>\S+)")


class NeedMore(Exception):
    """The engine needs tool results it has not seen yet."""

    def __init__(self, calls: list[ToolCallPart]) -> None:
        super().__init__(f"{len(calls)} pending tool call(s)")
        self.calls = calls


class EngineError(Exception):
    """The engine cannot proceed (for example, its params file is unreadable)."""


class Unreadable(EngineError):
    """An input the role could not read whole: a review reports it as a blocker, an author fails."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


UNREADABLE_RULE = "unreadable-input"


def call_id(tool: str, args: dict[str, Any]) -> str:
    digest = hashlib.sha1(json.dumps([tool, args], sort_keys=True).encode()).hexdigest()[:16]
    return f"{tool}-{digest}"


@dataclass(slots=True)
class Observations:
    results: dict[str, str]
    instructions: str
    available: frozenset[str]
    pending: list[ToolCallPart] = field(default_factory=list)

    def has_tool(self, tool: str) -> bool:
        return tool in self.available

    def call(self, tool: str, **args: Any) -> str:
        """The result of ``tool(**args)``; stops the engine until it is available."""
        results = self.call_many([(tool, args)])
        return results[0]

    def call_many(self, calls: list[tuple[str, dict[str, Any]]]) -> list[str]:
        """Several independent calls, issued together in one response when any is missing."""
        missing: list[ToolCallPart] = []
        out: list[str] = []
        for tool, args in calls:
            if tool not in self.available:
                raise EngineError(f"the role has no {tool} tool")
            cid = call_id(tool, args)
            if cid in self.results:
                out.append(self.results[cid])
            else:
                missing.append(ToolCallPart(tool, args, tool_call_id=cid))
        if missing:
            raise NeedMore(missing)
        return out


Engine = Callable[[dict[str, Any], Observations], dict[str, Any]]


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


def _unreadable(exc: Unreadable) -> dict[str, Any]:
    return {
        "verdict": "NEEDS REVISION",
        "findings": [
            {
                "severity": "blocker",
                "rule": UNREADABLE_RULE,
                "message": f"could not read {exc.path} whole ({exc.reason}); nothing in it was reviewed",
                "suggested_fix": "shorten the over-long line or split the file, then review again",
            }
        ],
    }


def drive(engine: Engine, review: bool = True) -> Callable[[list[ModelMessage], AgentInfo], ModelResponse]:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        obs = Observations(
            results=_results(messages),
            instructions=info.instructions or "",
            available=frozenset(t.name for t in info.function_tools),
        )
        try:
            raw = obs.call("read", path=_params_path(messages))
            if raw.startswith(("refused:", "error:")):
                raise EngineError(f"cannot read the params file: {raw}")
            params = json.loads(raw)
            output = engine(params, obs)
        except NeedMore as more:
            return ModelResponse(parts=list(more.calls))
        except Unreadable as exc:
            if not review:
                raise
            output = _unreadable(exc)
        if not info.output_tools:
            raise EngineError("the agent has no output tool")
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, output, tool_call_id="final")])

    return respond


def engine_model(role: str, engine: Engine, review: bool = True) -> FunctionModel:
    return FunctionModel(drive(engine, review), model_name=f"offline:{role}")
