"""Test helpers for the agent runtime: scripted models, a prepared design directory, a bridge."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import httpx2
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from pipeline.agents.roles import load_roles
from pipeline.agents.runtime import Runtime
from pipeline.formats.design_dir import DesignDir, open_design_dir
from pipeline.formats.paging import parse_page

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "docs" / "adr" / "0001-request-rate-limiter"
CODE = ROOT / "examples" / "ratelimit"


def make_repo(tmp_path: Path, plan_refs: bool = False) -> DesignDir:
    """A throwaway repository holding the example design directory and its code.

    The plan's **Full design** references stay only with ``plan_refs``: most tests' scripted
    drafts name their own sections, which the references would not resolve to."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    shutil.copytree(CODE, repo / "code")
    target = repo / "docs" / "adr" / "0001"
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns("reviews", "design*.md"))
    shutil.copy(ROOT / "tests" / "corpus" / "base" / "design.md", target / "_workflow" / "design.md")
    (target / "designloop.toml").write_text('code_root = "../../../code"\n')
    plans = [target / "_workflow" / "implementation-plan.md", *(target / "_workflow" / "plan").glob("*.md")]
    for plan in plans if not plan_refs else []:
        lines = plan.read_text().splitlines(keepends=True)
        plan.write_text("".join(line for line in lines if "**Full design:**" not in line))
    return open_design_dir(target)


def runtime(d: DesignDir, **kw: Any) -> Runtime:
    kw.setdefault("model_specs", {})
    return Runtime(repo_root=d.repo_root, roles=load_roles(d.repo_root), **kw)


def tool_returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [
        p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)
    ]


def scripted(
    output: dict[str, Any] | Callable[[list[ToolReturnPart]], dict[str, Any]],
    reads: list[str] | None = None,
    calls: list[int] | None = None,
) -> FunctionModel:
    """A model that reads its params file, then the given paths, then returns ``output``."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if calls is not None:
            calls.append(1)
        returns = tool_returns(messages)
        first = next(
            p
            for m in messages
            if isinstance(m, ModelRequest)
            for p in m.parts
            if getattr(p, "part_kind", "") == "user-prompt"
        )
        params_path = str(first.content).rsplit("Params file:", 1)[1].strip()
        plan = [params_path, *(reads or [])]
        if len(returns) < len(plan):
            path = plan[len(returns)]
            return ModelResponse(
                parts=[ToolCallPart("read", {"path": path}, tool_call_id=f"r{len(returns)}")]
            )
        value = output(returns) if callable(output) else output
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, value, tool_call_id="out")])

    return FunctionModel(respond, model_name="scripted")


def send_json(handler: Any, status: int, payload: Any) -> None:
    """Answer an http.server request with a JSON body."""
    data = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def chat_completion(tool: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-test",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": tool, "arguments": json.dumps(args)},
                        }
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }


def completion(calls: list[tuple[str, dict[str, Any]]], turn: int) -> dict[str, Any]:
    """A chat completion carrying ``calls`` as tool calls of one assistant message."""
    return {
        "id": f"chatcmpl-{turn}",
        "object": "chat.completion",
        "created": 1,
        "model": "scripted",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"call-{turn}-{i}",
                            "type": "function",
                            "function": {"name": name, "arguments": json.dumps(args)},
                        }
                        for i, (name, args) in enumerate(calls)
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }


def anthropic_message(tool: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "tool_use", "id": call_id, "name": tool, "input": args}],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 20},
    }


class LegacyBridge(httpx2.AsyncBaseTransport):
    """An httpx2 transport that sends through a legacy httpx.AsyncClient, where respx can see it."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = await request.aread()
        legacy = httpx.Request(
            request.method, str(request.url), headers=list(request.headers.multi_items()), content=body
        )
        response = await self.client.send(legacy)
        return httpx2.Response(
            response.status_code,
            headers=list(response.headers.multi_items()),
            content=response.content,
            request=request,
        )


def params_in(content: object) -> dict[str, Any] | None:
    """The params a tool result holds: a Read of a params file, read through its line numbers
    as a model reads them; None for any other result."""
    if not isinstance(content, str):
        return None
    try:
        data = json.loads(parse_page(content).text)
    except (ValueError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) and "role" in data else None


def spawn_of(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The params the spawn read (the first tool result that is a params file), or None on a
    spawn's first turn: that request names no spawn, and every spawn of a role sends the same."""
    for m in messages:
        if m["role"] == "tool":
            data = params_in(m["content"])
            if data is not None:
                return data
    return None


def events_so_far(runs: Path, run_id: str | None = None) -> list[dict[str, Any]]:
    """The events of a run (of every run, by default) under ``runs`` so far, for tests that wait
    on evidence while the run goes on: a line still being written is not evidence yet."""
    out = []
    for path in runs.glob(f"{run_id or '*'}/events.jsonl"):
        for line in path.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return out
