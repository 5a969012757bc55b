"""Limits a run can meet that are not the token budget: the per-spawn request limit (a setting of
its own, reported as its own stop, raised on resume), and a provider that hangs or answers in
a format that is not its own."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from agentkit import chat_completion, make_repo, runtime, send_json
from conftest import run_cli
from graphkit import PASS, go, returns, start

from pipeline.agents.retry import RetryPolicy
from pipeline.agents.review import review_once
from pipeline.errors import ExitCode
from pipeline.formats.contracts import AuthorOutput
from pipeline.formats.spawn_params import SpawnParams
from pipeline.graph.deps import RunDeps
from pipeline.graph.runner import execute
from pipeline.offline.driver import engine_model
from pipeline.offline.observe import Observations, required
from pipeline.runs.event_log import events_of
from pipeline.runs.events import Stopped
from pipeline.runs.setup import load_run
from pipeline.settings import Limits

DESIGN = "# Looping design\n\n## Overview\n\nA limiter that refills tokens.\n"


def looping_author(reads: int) -> Any:
    """An author that reads a file ``reads`` times (one request each) before it writes."""

    def run(params: SpawnParams, obs: Observations) -> AuthorOutput:
        for offset in range(1, reads + 1):
            obs.call(
                "read", path=required(params.research_log_path, "research_log_path"), offset=offset, limit=1
            )
        output = required(params.output_path, "output_path")
        obs.call("write", path=output, content=DESIGN)
        return AuthorOutput(summary="wrote it", output_path=output)

    return run


def _models(reads: int) -> dict[str, Any]:
    return {"design-author": looping_author(reads), "comprehension-review": returns(PASS)}


def test_the_request_limit_is_its_own_stop_and_a_resume_can_raise_it(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    (d.repo_root / "designloop.toml").write_text("[run]\nspawn_requests = 20\n")
    run_dir = start(d, tmp_path)
    result = go(run_dir, _models(30))
    assert result.exit_code == ExitCode.BUDGET
    assert result.message and "request limit reached: design-author made 20 model requests" in result.message
    assert "token budget" not in result.message.split("(")[0] and "--max-requests 40" in result.message
    assert result.flag == "--max-requests"
    # status shows what the stopped run spent (the stopped spawn's own requests).
    status = run_cli(["status", run_dir.name, "--runs-dir", str(tmp_path / "runs"), "--json"])
    view = json.loads(status.out)
    assert view["state"] == "stopped" and view["tokens"] > 0 and "request limit" in view["message"]
    stopped = events_of(run_dir, Stopped)[0]
    assert stopped.partial is not None and stopped.partial.total_tokens == view["tokens"]
    # A resume with the same limit stops again; a raised one lets the run finish.
    assert go(run_dir, _models(30), resume=True).exit_code == ExitCode.BUDGET

    def configure(deps: RunDeps) -> None:
        for role, engine in _models(30).items():
            deps.runtime.model_overrides[role] = engine_model(role, engine)

    run = load_run(run_dir, max_requests=40)
    finished = asyncio.run(execute(run, resume=True, configure=configure))
    assert finished.exit_code in (ExitCode.OK, ExitCode.FINDINGS), finished.message
    assert json.loads((run_dir / "run.json").read_text())["options"]["max_requests"] == 40


def test_the_request_limit_is_a_setting_and_a_flag(tmp_path: Path) -> None:
    from pipeline.settings import default_params, run_settings

    assert run_settings(default_params(), Path("defaults.toml")).spawn_requests == 100
    assert "--max-requests" in run_cli(["create", "--help"]).out
    d = make_repo(tmp_path)
    bad = run_cli(["create", str(d.root), "--max-requests", "0", "--runs-dir", str(tmp_path / "runs")])
    assert bad.code == ExitCode.BAD_INPUT and "--max-requests 0" in bad.err and "what to do:" in bad.err
    assert not (tmp_path / "runs").exists()


class _Provider(BaseHTTPRequestHandler):
    """An OpenAI-compatible server scripted per request: "hang" (no answer until released),
    "html" (a proxy's error page with status 200), or the next turn of a passing review."""

    script: ClassVar[list[str]] = []
    seen: ClassVar[list[str]] = []
    release: ClassVar[threading.Event] = threading.Event()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        step = self.script[len(self.seen)] if len(self.seen) < len(self.script) else "answer"
        type(self).seen.append(step)
        if step == "hang":
            self.release.wait(60)
            return
        if step == "html":
            page = b"<html><body><h1>502 Bad Gateway</h1>upstream timed out</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)
            return
        if not any(m.get("role") == "tool" for m in body["messages"]):
            path = body["messages"][-1]["content"].rsplit("Params file:", 1)[1].strip()
            send_json(self, 200, chat_completion("read", {"path": path}, "c1"))
        else:
            send_json(self, 200, chat_completion("final_result", PASS.model_dump(), "c2"))

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    import pydantic_ai.models

    _Provider.script, _Provider.seen = [], []
    _Provider.release = threading.Event()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Provider)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        _Provider.release.set()
        server.shutdown()


async def _no_wait(_: float) -> None:
    return None


def _review(tmp_path: Path, base: str, first_turn: float | None = None) -> Any:
    d = make_repo(tmp_path)
    rt = runtime(
        d,
        model_specs={"comprehension-review": "openai:local-model"},
        base_url=base,
        timeout=600.0,
        policy=RetryPolicy(sleep=_no_wait, first_turn_timeout=first_turn),
    )
    return asyncio.run(review_once(rt, "comprehension-review", d, Limits())).results[0]


def test_a_hung_provider_ends_at_the_first_turn_timeout_not_the_spawn_timeout(
    tmp_path: Path, provider: str
) -> None:
    _Provider.script = ["hang", "hang"]
    result = _review(tmp_path, provider, first_turn=0.3)
    assert result.status == "inconclusive" and result.attempts == 2
    assert "no first answer within 0.3 s" in (result.error or "")
    assert _Provider.seen == ["hang", "hang"]  # one request per attempt: the deadline covers retries


def test_the_first_turn_timeout_is_a_setting_in_tens_of_seconds() -> None:
    from pipeline.settings import default_params, run_settings

    settings = run_settings(default_params(), Path("defaults.toml"))
    assert 10 <= settings.first_turn_timeout < 60 < settings.spawn_timeout


def test_a_proxy_page_on_a_200_is_asked_again_like_a_5xx(tmp_path: Path, provider: str) -> None:
    _Provider.script = ["html"]
    result = _review(tmp_path, provider)
    assert result.status == "ok" and result.attempts == 1, result.error
    assert _Provider.seen == ["html", "answer", "answer"]


def test_a_proxy_page_every_time_is_asked_once_more_then_inconclusive(tmp_path: Path, provider: str) -> None:
    _Provider.script = ["html"] * 10
    result = _review(tmp_path, provider)
    assert result.status == "inconclusive" and "Invalid response" in (result.error or "")
    assert _Provider.seen == ["html"] * 4  # two asks per attempt, two attempts
