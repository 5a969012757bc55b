"""A scripted model for CLI tests: an OpenAI-compatible server on 127.0.0.1 whose answers a
test writes per role, as a careful (or a careless) model would give them.

Every spawn first reads its params file (the server answers a spawn's first turn with that
call); after that, ``script(turn)`` answers with one or more tool calls in one assistant
message, as models do. ``Turn`` tells the script what the spawn read and what its tools said.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from agentkit import completion, send_json, spawn_of

Call = tuple[str, dict[str, Any]]
PASS: dict[str, Any] = {"verdict": "PASS", "findings": []}


@dataclass(slots=True)
class Turn:
    """One request of a spawn, after it has read its params file."""

    params: dict[str, Any]
    results: list[str]
    """Every tool result of the conversation so far, the params file first."""

    @property
    def role(self) -> str:
        return str(self.params["role"])

    @property
    def round(self) -> int:
        return int(self.params.get("round", 1))

    def wrote(self) -> bool:
        """Whether a write or an edit of this spawn already went through."""
        return any(r.startswith(("wrote ", "edited ")) for r in self.results)


Script = Callable[[Turn], list[Call]]


@dataclass
class RoleServer:
    script: Script
    spawns: list[tuple[str, int, int | None]] = field(default_factory=list)
    """(role, round, slice start) of every request after the params were read."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        turn = sum(1 for m in messages if m["role"] == "assistant")
        params = spawn_of(messages)
        if params is None:
            prompt = next(m["content"] for m in messages if m["role"] == "user")
            token = prompt.rsplit("Params file:", 1)[1].strip()
            return completion([("read", {"path": token})], turn)
        results = [str(m["content"]) for m in messages if m["role"] == "tool"]
        with self.lock:
            start = params["slice"][0] if params.get("slice") else None
            self.spawns.append((str(params["role"]), int(params.get("round", 1)), start))
        return completion(self.script(Turn(params, results)), turn)

    def requests_of(self, role: str, round_: int | None = None) -> int:
        return sum(1 for r, n, _ in self.spawns if r == role and (round_ is None or n == round_))


def author_writes(document: str | Callable[[Turn], str]) -> Callable[[Turn], list[Call]]:
    """A design author that writes ``document`` in round 1 (later rounds: only when the text
    it would write differs), then returns its summary."""

    def act(turn: Turn) -> list[Call]:
        if turn.wrote() or (turn.round > 1 and not callable(document)):
            return [
                ("final_result", {"summary": "wrote the design", "output_path": turn.params["output_path"]})
            ]
        text = document(turn) if callable(document) else document
        return [("write", {"path": turn.params["output_path"], "content": text})]

    return act


def reviewers(
    author: Callable[[Turn], list[Call]], review: Callable[[Turn], dict[str, Any]] | None = None
) -> Script:
    """Every role: the author as given, each reviewer returning ``review(turn)`` (PASS by default)."""

    def script(turn: Turn) -> list[Call]:
        if turn.role == "design-author":
            return author(turn)
        return [("final_result", review(turn) if review else PASS)]

    return script


@contextmanager
def role_server(script: Script, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[RoleServer, list[str]]]:
    """The server running, model requests allowed (to loopback only), no API key in the
    environment; yields the server and the CLI options that point every role at it."""
    import pydantic_ai.models

    server = RoleServer(script)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            send_json(self, 200, server.answer(body))

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    base = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    try:
        yield server, ["--model", "openai:scripted", "--base-url", base]
    finally:
        httpd.shutdown()
        httpd.server_close()
