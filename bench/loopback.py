"""A loopback model provider for benchmarks: an OpenAI-compatible and an Anthropic-compatible
server on 127.0.0.1 that plays every role of a phase-1 creation run with a set latency.

The scripted roles act on what they read, as a model would: the author reads its params
file and the research log, and writes the design the offline author compiles from that log
(so a changed decision changes the draft); the auditors read their slice, the absorption
check reads the log and the draft, the comprehension reviewer reads the draft, and every
reviewer passes. Each request is recorded with its raw body, its arrival and answer times,
and which spawn sent it (role, round, slice; a spawn's first turn names none).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agentkit import anthropic_message, chat_completion, params_in  # tests/agentkit.py: the wire formats

from pipeline.formats.paging import parse_page
from pipeline.offline.author import compile_phase1
from pipeline.offline.observe import Observations

PASS = {"verdict": "PASS", "findings": []}


@dataclass(slots=True)
class Request:
    api: str
    body: bytes
    arrived: float
    turn: int
    """Answers already in the conversation: 0 on a spawn's first request."""
    spawn: tuple[str, int, int | None] | None = None
    """(role, round, slice start) from the params the conversation read, once it has read them."""
    answered: float = 0.0


@dataclass(slots=True)
class Conversation:
    """What the server needs of a request, whatever the wire format."""

    system: str
    results: list[str]
    turn: int


def _params(results: list[str]) -> dict[str, Any] | None:
    for text in results:
        data = params_in(text)
        if data is not None:
            return data
    return None


def _read_all(results: list[str], path: str) -> tuple[str | None, dict[str, Any]]:
    """The text read so far of ``path`` and the next Read call (paging on), or (text, {})."""
    text, offset = "", 1
    for result in results:
        page = parse_page(result, offset)
        text += page.text
        if page.next_offset is None:
            return text, {}
        offset = page.next_offset
    return None, {"path": path, "offset": offset} if offset > 1 else {"path": path}


def act(conv: Conversation) -> tuple[str, dict[str, Any]]:
    """The scripted role's next tool call: (tool name, arguments)."""
    params = _params(conv.results)
    if params is None:
        return "read", {"path": "@params"}
    role, rest = params["role"], conv.results[1:]
    if role == "design-author":
        log, more = _read_all(rest, params["research_log_path"])
        if log is None:
            return "read", more
        if len(rest) == _pages(rest):
            seen = Observations(results={}, instructions=conv.system, available=frozenset())
            return "write", {"path": params["output_path"], "content": compile_phase1(log, seen)}
        return "final_result", {"summary": "wrote the design", "output_path": params["output_path"]}
    reads = {
        "readability-auditor": [params.get("target_path")],
        "absorption-check": [params.get("research_log_path"), params.get("draft_path")],
        "comprehension-review": [params.get("design_path")],
    }.get(role, [])
    wanted = [p for p in reads if p]
    if len(rest) < len(wanted):
        return "read", {"path": wanted[len(rest)]}
    return "final_result", PASS


def _pages(results: list[str]) -> int:
    count, offset = 0, 1
    for result in results:
        count += 1
        page = parse_page(result, offset)
        if page.next_offset is None:
            return count
        offset = page.next_offset
    return count


def _openai(body: dict[str, Any]) -> Conversation:
    messages = body["messages"]
    system = "".join(str(m.get("content") or "") for m in messages if m["role"] == "system")
    results = [str(m["content"]) for m in messages if m["role"] == "tool"]
    return Conversation(system, results, sum(1 for m in messages if m["role"] == "assistant"))


def _anthropic(body: dict[str, Any]) -> Conversation:
    system = body.get("system") or ""
    system = system if isinstance(system, str) else "".join(b.get("text", "") for b in system)
    results: list[str] = []
    for message in body["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "tool_result":
                content = block.get("content")
                parts = content if isinstance(content, list) else [{"text": content or ""}]
                results.append("".join(p.get("text", "") for p in parts))
    turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
    return Conversation(system, results, turn)


def _anthropic_events(tool: str, args: dict[str, Any], call_id: str) -> bytes:
    """The same answer as a server-sent event stream (the SDK streams long-output requests)."""
    message = {**anthropic_message(tool, args, call_id), "content": [], "stop_reason": None}
    events = [
        ("message_start", {"type": "message_start", "message": message}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": call_id, "name": tool, "input": {}},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": json.dumps(args)},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 50},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


@dataclass
class Loopback:
    """The server; ``latency`` seconds pass between a request's arrival and its answer."""

    latency: float
    log: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> Loopback:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def take(self) -> list[Request]:
        """The requests since the last call."""
        with self.lock:
            out, self.log = self.log, []
        return out

    def answer(self, path: str, raw: bytes, arrived: float) -> tuple[str, bytes]:
        """(content type, body) of the answer to one request."""
        body = json.loads(raw)
        api = "anthropic" if path.endswith("/messages") else "openai"
        conv = _anthropic(body) if api == "anthropic" else _openai(body)
        params = _params(conv.results)
        spawn = None
        if params is not None:
            start = params["slice"][0] if params.get("slice") else None
            spawn = (str(params["role"]), int(params.get("round", 1)), start)
        entry = Request(api, raw, arrived, conv.turn, spawn)
        with self.lock:
            self.log.append(entry)
        tool, args = act(conv)
        call_id = f"call-{conv.turn}"
        if api == "anthropic" and body.get("stream"):
            reply = ("text/event-stream", _anthropic_events(tool, args, call_id))
        else:
            answer = anthropic_message if api == "anthropic" else chat_completion
            reply = ("application/json", json.dumps(answer(tool, args, call_id)).encode())
        time.sleep(max(0.0, self.latency - (time.monotonic() - arrived)))
        entry.answered = time.monotonic()
        return reply


def _handler(server: Loopback) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            arrived = time.monotonic()
            raw = self.rfile.read(int(self.headers["Content-Length"]))
            kind, data = server.answer(self.path, raw, arrived)
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler
