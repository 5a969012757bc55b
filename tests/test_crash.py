"""A run killed with SIGKILL in the middle of a fan-out resumes without re-paying finished calls.

The model is a scripted OpenAI-compatible server on 127.0.0.1; designloop runs as a real
subprocess through its default HTTP stack, and is killed while one auditor slice waits
for its answer.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from agentkit import chat_completion, events_so_far, make_repo, params_in, send_json, spawn_of
from graphkit import long_design

from pipeline.errors import ExitCode
from pipeline.formats.review_log import parse_entries
from pipeline.formats.slices import partition
from pipeline.formats.stamp import has_stamp

DOC = long_design(sections=22) + "\n"  # 534 lines: three auditor slices
PASS = {"verdict": "PASS", "findings": []}


class Script(BaseHTTPRequestHandler):
    log: ClassVar[list[dict[str, Any]]] = []
    phase: ClassVar[str] = "first"
    blocked_slice: ClassVar[int | None] = None
    release: ClassVar[threading.Event] = threading.Event()
    lock: ClassVar[threading.Lock] = threading.Lock()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        messages = body["messages"]
        prompt = next(m["content"] for m in messages if m["role"] == "user")
        params_token = prompt.rsplit("Params file:", 1)[1].strip()
        params = spawn_of(messages)
        last = messages[-1]
        if params is None:
            stage, reply = "read", chat_completion("read", {"path": params_token}, "call-read")
        elif params["role"] == "design-author" and params_in(last["content"]) is not None:
            stage = "write"
            reply = chat_completion("write", {"path": params["output_path"], "content": DOC}, "call-write")
        elif params["role"] == "design-author":
            stage = "final"
            reply = chat_completion(
                "final_result", {"summary": "wrote the design", "output_path": "x"}, "call-final"
            )
        else:
            stage = "final"
            if params.get("slice") and params["slice"][0] == Script.blocked_slice and Script.phase == "first":
                self._record(params, "blocked")
                Script.release.wait(60)
                return
            reply = chat_completion("final_result", PASS, "call-final")
        self._record(params, stage)
        send_json(self, 200, reply)

    def _record(self, params: dict[str, Any] | None, stage: str) -> None:
        who = ("first turn", None) if params is None else (params["role"], (params.get("slice") or [None])[0])
        with Script.lock:
            Script.log.append({"phase": Script.phase, "who": who, "stage": stage})

    def log_message(self, *args: Any) -> None:
        pass


def _cli(args: list[str], cwd: Path) -> list[str]:
    return [sys.executable, "-m", "pipeline.cli", *args]


@pytest.mark.slow
def test_sigkill_mid_fan_out_resumes_without_repeating_finished_calls(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    d.design.unlink()
    runs = tmp_path / "runs"
    server = ThreadingHTTPServer(("127.0.0.1", 0), Script)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/v1"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    common = ["--runs-dir", str(runs), "--json"]
    # The stamp lands on line 1 as soon as the author has written: the auditors read it too.
    slices = partition(["<!-- workflow-sha: stamp -->", *DOC.splitlines()], 200, 6)
    assert len(slices) == 3
    Script.log, Script.phase, Script.blocked_slice = [], "first", slices[2][0]
    Script.release.clear()
    try:
        proc = subprocess.Popen(
            _cli(
                [
                    "create",
                    str(d.root),
                    "--model",
                    "openai:scripted",
                    "--base-url",
                    base,
                    "--no-warmup",
                    *common,
                ],
                d.repo_root,
            ),
            cwd=d.repo_root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        # Kill only on the run's own evidence: a spawn event is written after its answers are
        # cached, so the finished spawns are known to the client, not just sent by the server.
        finished: set[tuple[str, int | None]] = {("design-author", None), ("absorption-check", None)}
        finished |= {("readability-auditor", s[0]) for s in slices[:2]}
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            done_spawns = {
                (e["role"], e["slice"][0] if e.get("slice") else None)
                for e in events_so_far(runs)
                if e["type"] == "spawn" and e["status"] == "ok"
            }
            with Script.lock:
                blocked = any(e["stage"] == "blocked" for e in Script.log)
            if blocked and finished <= done_spawns:
                break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        else:
            raise AssertionError(f"the fan-out never reached the kill point: {Script.log}")
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        Script.phase = "resume"
        Script.release.set()
        run_id = next(p.name for p in runs.iterdir() if (p / "run.json").is_file())
        done = subprocess.run(
            _cli(["resume", run_id, *common], d.repo_root),
            cwd=d.repo_root,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
    finally:
        Script.release.set()
        server.shutdown()
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["outcome"] == "PASS" and result["review_log_entry"] == 1
    after = Counter(e["who"] for e in Script.log if e["phase"] == "resume")
    # Finished spawns: nothing asked again. The killed slice: only its unanswered request.
    for who in [
        ("design-author", None),
        ("absorption-check", None),
        *(("readability-auditor", s[0]) for s in slices[:2]),
    ]:
        assert after[who] == 0, (who, after)
    assert after[("readability-auditor", slices[2][0])] == 1
    # The comprehension gate had not run: its first turn and its answer.
    assert after[("first turn", None)] == 1 and after[("comprehension-review", None)] == 1
    assert sum(after.values()) == 3, after
    assert has_stamp(d.design) and d.design.read_text().split("\n", 1)[1] == DOC
    assert [e.number for e in parse_entries(d.mutations)] == [1]


class Leaky(BaseHTTPRequestHandler):
    """A provider that answers 400 and echoes the request's credentials in the error."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        error = {
            "message": f"bad request from {self.headers.get('Authorization')}",
            "type": "invalid_request_error",
        }
        send_json(self, 400, {"error": error})

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.slow
def test_api_keys_never_reach_logs_run_records_or_the_review_log(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    runs = tmp_path / "runs"
    key = "sk-test-SECRETMARKER0123456789"
    server = ThreadingHTTPServer(("127.0.0.1", 0), Leaky)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/v1"
    env = {**{k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}, "OPENAI_API_KEY": key}
    try:
        done = subprocess.run(
            _cli(
                [
                    "create",
                    str(d.root),
                    "--model",
                    "openai-chat:scripted",
                    "--base-url",
                    base,
                    "--no-warmup",
                    "--runs-dir",
                    str(runs),
                    "--json",
                ],
                d.repo_root,
            ),
            cwd=d.repo_root,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
    finally:
        server.shutdown()
    # The author never got an answer: no draft, no review, and the run says so.
    assert done.returncode == ExitCode.INCONCLUSIVE, done.stderr
    result = json.loads(done.stdout)
    assert result["outcome"] == "INCONCLUSIVE"
    log = d.mutations.read_text()
    assert "inconclusive: design-author returned no valid output twice in round 1" in log
    assert "status_code: 400" in log and "the author wrote no draft" in log
    assert "**Mechanical checks** (target=design): SKIPPED" in log
    assert "**Cold-read** (scope: whole-doc): SKIPPED" in log
    events = [e for p in runs.glob("*/events.jsonl") for e in p.read_text().splitlines()]
    assert any("invalid_request_error" in e or "400" in e for e in events)  # the error itself is kept
    written = [done.stdout, done.stderr, d.mutations.read_text()]
    written += [
        f.read_text(errors="replace")
        for f in runs.rglob("*")
        if f.is_file() and f.suffix in (".json", ".jsonl", ".md")
    ]
    written += [f.read_text(errors="replace") for f in d.reviews.rglob("*") if f.is_file()]
    for text in written:
        assert "SECRETMARKER" not in text


def test_a_base_url_with_credentials_is_not_stored() -> None:
    from pipeline.runs.setup import stored_url

    assert stored_url("http://user:SECRET@host:8000/v1") is None
    assert stored_url("http://localhost:11434/v1") == "http://localhost:11434/v1"
    assert stored_url(None) is None
