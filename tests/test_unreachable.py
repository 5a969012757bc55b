"""A model that cannot be reached: refused before anything is written (exit 2, the URL and the
error named); a server that answers but never with a draft leaves a run that says it was not
reviewed, whose review log does not contradict itself, and no revision."""

from __future__ import annotations

import json
import shutil
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pydantic_ai.models
import pytest
from conftest import EXAMPLE_OUTPUTS, ROOT, run_cli

DIR = "examples/docs/adr/0001-request-rate-limiter"


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    shutil.copytree(ROOT / "examples", repo / "examples", ignore=EXAMPLE_OUTPUTS)
    return repo


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_server_nobody_listens_on_is_refused_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)  # loopback only, nothing listens
    monkeypatch.setenv("OPENAI_API_KEY", "not-a-key")
    repo = _repo(tmp_path)
    before = _tree(repo)
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    for argv in (["create", DIR], ["final", DIR], ["review", "comprehension-review", DIR]):
        done = run_cli([*argv, "--model", "openai:qwen2.5-coder", "--base-url", url], cwd=repo)
        assert done.code == 2, done.err
        assert f"cannot reach {url}/ for openai:qwen2.5-coder: ConnectionRefusedError" in done.err
        assert "what to do:" in done.err and done.out == ""
    assert _tree(repo) == before  # no run directory, no draft, no review log


@contextmanager
def _failing_server() -> Iterator[str]:
    """A server that accepts connections and answers every request with HTTP 503."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.dumps({"error": {"message": "overloaded", "type": "server_error"}}).encode()
            self.send_response(503)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_an_author_that_never_wrote_leaves_a_run_not_reviewed_and_a_log_that_agrees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)  # loopback only
    monkeypatch.setenv("OPENAI_API_KEY", "not-a-key")
    repo = _repo(tmp_path)
    with _failing_server() as url:
        done = run_cli(
            ["create", DIR, "--model", "openai:qwen2.5-coder", "--base-url", url, "--json"], cwd=repo
        )
    assert done.code == 5, done.err
    result = json.loads(done.stdout if hasattr(done, "stdout") else done.out)
    assert result["outcome"] == "INCONCLUSIVE" and result["diff"]["files"] == []
    assert result["revisions"] == []  # nothing written, no revision recorded
    entry = (repo / DIR / "_workflow" / "design-mutations.md").read_text(encoding="utf-8")
    last = entry.rsplit("## Mutation", 1)[1]
    assert "wrote the draft" not in last and "revised the draft" not in last
    assert "design-author wrote nothing" in last and "nothing was written" in last
    with _failing_server() as url:
        shown = run_cli(["create", DIR, "--model", "openai:qwen2.5-coder", "--base-url", url, "-q"], cwd=repo)
    outcome = [line for line in shown.out.splitlines() if line.startswith("run ")][-1]
    assert ": INCONCLUSIVE, not reviewed" in outcome and "reviewed by" not in outcome
