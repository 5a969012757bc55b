"""Fault injection for crash tests and bench/faults.py: designloop as a real subprocess that
dies (os._exit, as a SIGKILL would leave it) at a chosen point of the checkpoint protocol.

``launch`` builds the command line: it arms the fault, then runs ``designloop`` with the
given arguments. The fault is injected into the checkpointer, never raced against a clock:
``before`` dies after a task's side effects but before its writes are saved, ``after``
dies after its writes are saved but before the step's checkpoint.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Self

TESTS = Path(__file__).resolve().parent
KILLED = 137
FINISH_NODES = ("step6_outcome", "step7_review_log", "step9_present")
"""The finish: the stamp lands earlier, with the author's first write (step1_stamp)."""


def arm(node: str, when: str) -> None:
    """Die when a task of ``node`` saves its writes: ``before`` or ``after`` saving them."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    original = AsyncSqliteSaver.aput_writes

    async def aput_writes(self: Any, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        hit = node in str(task_path).replace(",", " ").split()
        if hit and when == "before":
            os._exit(KILLED)
        await original(self, config, writes, task_id, task_path)
        if hit and when == "after":
            os._exit(KILLED)

    AsyncSqliteSaver.aput_writes = aput_writes  # type: ignore[method-assign]


def launch(args: list[str], node: str | None = None, when: str = "after") -> list[str]:
    """The command line of ``designloop ARGS``, armed to die at ``node`` when one is given."""
    code = [f"import sys; sys.path.insert(0, {str(TESTS)!r})"]
    if node is not None:
        code.append(f"import faultkit; faultkit.arm({node!r}, {when!r})")
    code.append("from pipeline.cli import main; main()")
    return [sys.executable, "-c", "; ".join(code), *args]


UNPLACED = {
    "severity": "should-fix",
    "section": None,
    "line": None,
    "quote": None,
    "rule": "readability",
    "message": "a reader cannot tell what a tenant is",
    "suggested_fix": "define it where it is first used",
}
"""A finding that names no section, no line and no quote, as models return them."""


class ScriptedServer:
    """A loopback OpenAI-compatible server that plays every role of a creation run: the author
    writes ``document``, every reviewer passes. It records each request with the process
    ``epoch`` it arrived in and whether its answer was sent in full.

    ``unplaced``: the readability auditors return one section-less should-fix (``UNPLACED``)
    in round 1 only (``"once"``) or in every round (``"always"``). ``edits``: after its write,
    the author sends these (old, new) replacements as several ``edit`` calls in one message."""

    def __init__(
        self, document: str, unplaced: str | None = None, edits: list[tuple[str, str]] | None = None
    ) -> None:
        import threading
        from http.server import ThreadingHTTPServer

        self.document = document
        self.unplaced = unplaced
        self.edits = edits or []
        self.epoch = 0
        self.log: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        handler = _handler(self)
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        from agentkit import chat_completion, completion, params_in, spawn_of

        messages = body["messages"]
        prompt = next(m["content"] for m in messages if m["role"] == "user")
        params_path = prompt.rsplit("Params file:", 1)[1].strip()
        last = messages[-1]
        if last["role"] == "user":
            return chat_completion("read", {"path": params_path}, "call-read")
        params = params_in(last["content"])
        if params is not None:
            if params["role"] == "design-author":
                return chat_completion(
                    "write", {"path": params["output_path"], "content": self.document}, "call-write"
                )
            return chat_completion("final_result", self.review(params), "call-final")
        params = spawn_of(messages) or {}
        if self.edits and last["content"].startswith("wrote "):
            calls = [
                ("edit", {"path": params.get("output_path", ""), "old_string": old, "new_string": new})
                for old, new in self.edits
            ]
            return completion(calls, len(messages))
        summary = {"summary": "wrote the design", "output_path": "x"}
        return chat_completion("final_result", summary, "call-final")

    def review(self, params: dict[str, Any]) -> dict[str, Any]:
        flagged = params["role"] == "readability-auditor" and (
            self.unplaced == "always" or (self.unplaced == "once" and params.get("round") == 1)
        )
        return (
            {"verdict": "NEEDS REVISION", "findings": [UNPLACED]}
            if flagged
            else {"verdict": "PASS", "findings": []}
        )


def _handler(server: ScriptedServer) -> Any:
    import hashlib
    from http.server import BaseHTTPRequestHandler

    from agentkit import send_json, spawn_of

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers["Content-Length"]))
            params = spawn_of(json.loads(raw)["messages"]) or {}
            entry = {
                "epoch": server.epoch,
                "key": hashlib.sha256(raw).hexdigest(),
                "answered": False,
                "role": params.get("role"),
                "round": params.get("round"),
            }
            with server.lock:
                server.log.append(entry)
            send_json(self, 200, server.reply(json.loads(raw)))
            self.wfile.flush()
            entry["answered"] = True

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


def repaid(log: list[dict[str, Any]]) -> int:
    """Requests answered in full in one process and asked again by a later one."""
    answered: dict[str, int] = {}
    count = 0
    for entry in log:
        first = answered.get(entry["key"])
        if first is not None and entry["epoch"] > first:
            count += 1
        if entry["answered"] and first is None:
            answered[entry["key"]] = entry["epoch"]
    return count
