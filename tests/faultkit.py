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
from typing import Any

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


class ScriptedServer:
    """A loopback OpenAI-compatible server that plays every role of a creation run: the author
    writes ``document``, every reviewer passes. It records each request with the process
    ``epoch`` it arrived in and whether its answer was sent in full."""

    def __init__(self, document: str) -> None:
        import threading
        from http.server import ThreadingHTTPServer

        self.document = document
        self.epoch = 0
        self.log: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        handler = _handler(self)
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> ScriptedServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        from agentkit import chat_completion, params_in

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
            return chat_completion("final_result", {"verdict": "PASS", "findings": []}, "call-final")
        summary = {"summary": "wrote the design", "output_path": "x"}
        return chat_completion("final_result", summary, "call-final")


def _handler(server: ScriptedServer) -> Any:
    import hashlib
    from http.server import BaseHTTPRequestHandler

    from agentkit import send_json

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers["Content-Length"]))
            entry = {"epoch": server.epoch, "key": hashlib.sha256(raw).hexdigest(), "answered": False}
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
