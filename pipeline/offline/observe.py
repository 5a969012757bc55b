"""What a rule-based role sees of its tools: the results it has asked for so far.

An engine asks for a tool result with ``Observations.call``; a result it has not seen yet
stops it with :class:`NeedMore`, which the driver (offline.driver) answers as tool calls.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic_ai.messages import ToolCallPart


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
T = TypeVar("T")


def required(value: T | None, name: str) -> T:
    """A params value the role's schema requires (params/spawn.toml): the spawn checked it is
    there, so its absence here is an engine error, never a guess."""
    if value is None:
        raise EngineError(f"the params file has no {name}")
    return value


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
