"""An edit killed with SIGKILL during its review resumes without repeating finished calls.

design-sync reads twice in one step: the readability auditor and the comprehension gate. Both
are served by a scripted OpenAI-compatible server on 127.0.0.1 (the inline editor stays on
the offline engine); the comprehension gate's answer is held back, the auditor's is given.
The run is killed once the auditor's spawn is on record, then resumed.
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
from agentkit import chat_completion, events_so_far, send_json, spawn_of
from conftest import STAMP
from editkit import edit, kinds_logged, stamped_repo

PASS = {"verdict": "PASS", "findings": []}


class Script(BaseHTTPRequestHandler):
    log: ClassVar[list[dict[str, Any]]] = []
    phase: ClassVar[str] = "first"
    release: ClassVar[threading.Event] = threading.Event()
    lock: ClassVar[threading.Lock] = threading.Lock()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        messages = body["messages"]
        prompt = next(m["content"] for m in messages if m["role"] == "user")
        params_token = prompt.rsplit("Params file:", 1)[1].strip()
        params = spawn_of(messages)
        if params is None:
            self._record("first turn", "read")
            send_json(self, 200, chat_completion("read", {"path": params_token}, "call-read"))
            return
        if params["role"] == "comprehension-review" and Script.phase == "first":
            self._record(params["role"], "blocked")
            Script.release.wait(60)
            return
        self._record(params["role"], "final")
        send_json(self, 200, chat_completion("final_result", PASS, "call-final"))

    def _record(self, who: str, stage: str) -> None:
        with Script.lock:
            Script.log.append({"phase": Script.phase, "who": who, "stage": stage})

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.slow
def test_sigkill_during_an_edits_review_then_resume(tmp_path: Path) -> None:
    d = stamped_repo(tmp_path)
    runs = tmp_path / "runs"
    edit(d, tmp_path, "length-trigger-crossing")
    edit(
        d,
        tmp_path,
        "mechanics-edit",
        "--old",
        "so idle tenants cost no memory",
        "--new",
        "so an idle tenant costs no memory",
    )
    before = {p.name for p in runs.iterdir()}
    server = ThreadingHTTPServer(("127.0.0.1", 0), Script)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/v1"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    common = ["--runs-dir", str(runs), "--json"]
    models = [
        "--role-model",
        "comprehension-review=openai:scripted",
        "--role-model",
        "readability-auditor=openai:scripted",
    ]
    Script.log, Script.phase = [], "first"
    Script.release.clear()
    try:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pipeline.cli",
                "edit",
                str(d.root),
                "--kind",
                "design-sync",
                *models,
                "--base-url",
                base,
                *common,
            ],
            cwd=d.repo_root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 120
        run_id = None
        while time.monotonic() < deadline:
            run_id = next(
                (p.name for p in runs.iterdir() if p.name not in before and (p / "run.json").is_file()), None
            )
            done = (
                {
                    e["role"]
                    for e in events_so_far(runs, run_id)
                    if e["type"] == "spawn" and e["status"] == "ok"
                }
                if run_id
                else set()
            )
            with Script.lock:
                blocked = any(e["stage"] == "blocked" for e in Script.log)
            if blocked and {"inline-editor", "readability-auditor"} <= done:
                break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        else:
            raise AssertionError(f"the review never reached the kill point: {Script.log}")
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        assert run_id is not None
        distilled = d.design.read_text()
        assert "so an idle tenant costs no memory" in " ".join(distilled.split())
        assert kinds_logged(d) == ["length-trigger-crossing", "mechanics-edit"]
        Script.phase = "resume"
        Script.release.set()
        resumed = subprocess.run(
            [sys.executable, "-m", "pipeline.cli", "resume", run_id, *common],
            cwd=d.repo_root,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
    finally:
        Script.release.set()
        server.shutdown()
    assert resumed.returncode == 0, resumed.stderr
    result = json.loads(resumed.stdout)
    assert result["kind"] == "design-sync" and result["outcome"] == "PASS"
    after = Counter(e["who"] for e in Script.log if e["phase"] == "resume")
    # The auditor finished before the kill: nothing asked again. The gate: only its unanswered request.
    assert after["readability-auditor"] == 0, after
    assert after == {"comprehension-review": 1}, after
    assert d.design.read_text() == distilled and distilled.startswith(STAMP + "\n")
    assert kinds_logged(d) == ["length-trigger-crossing", "mechanics-edit", "design-sync"]
