"""Workers on a real PostgreSQL store: a loopback provider that can hold one run's request
until released (the run is then mid-run, and the worker running it can be killed on that
evidence), worker processes, and the store's view of which runs ended."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from agentkit import params_in
from faultkit import ScriptedServer


class HoldingServer(ScriptedServer):
    """Plays every role; the first request of ``role`` whose params name ``directory`` is held
    (``held`` is set) until ``release`` is set, and then never answered. Every request that
    comes while it is held waits for the release too, so once the requests answered before
    the hold are in the run's cache (``settled``), a worker killed has been paid for nothing
    it did not keep."""

    def __init__(self, document: str, role: str, directory: str) -> None:
        super().__init__(document)
        self.role, self.directory = role, directory
        self.held = threading.Event()
        self.release = threading.Event()
        self.waiting = 0

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        last = body["messages"][-1]
        content = last.get("content") or ""
        if (
            not self.held.is_set()
            and last["role"] != "user"
            and (params_in(content) or {}).get("role") == self.role
            and self.directory in content
        ):
            self.held.set()
            self._wait_for_release()
            raise ConnectionAbortedError("the held request is never answered")
        if self.held.is_set() and not self.release.is_set():
            self._wait_for_release()
        return super().reply(body)

    def _wait_for_release(self) -> None:
        with self.lock:
            self.waiting += 1
        try:
            self.release.wait(timeout=600)
        finally:
            with self.lock:
                self.waiting -= 1

    def settled(self, cached: Callable[[], int]) -> bool:
        """No request in flight but those waiting for the release, and every request answered
        so far is in the request cache (``cached`` counts its entries): a worker stores an
        answer after it has received it in full, and one killed in between would pay for it
        twice."""
        with self.lock:
            unanswered = sum(1 for entry in self.log if not entry["answered"])
            answered = {entry["key"] for entry in self.log if entry["answered"]}
            waiting = self.waiting
        return unanswered == waiting and cached() >= len(answered)


def worker(url: str, repo: Path, *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "pipeline.cli", "worker", "--store", url, *extra],
        cwd=repo,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "OPENAI_API_KEY": "test-key"},
    )


def query(url: str, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, options="-c search_path=designloop") as conn:
        return conn.execute(sql, args).fetchall()


def holder_pid(url: str, directory: str) -> int | None:
    rows = query(url, "SELECT holder FROM holders WHERE key = %s", f"designloop:dir:{directory}")
    return int(rows[0][0]["pid"]) if rows else None


def finished(url: str) -> set[str]:
    rows = query(url, "SELECT DISTINCT run_id FROM events WHERE event->>'type' = 'outcome'")
    return {r[0] for r in rows}


def wait_until(check: Any, limit: float = 240.0) -> Any:
    """Poll the store for evidence (bounded: a run that never comes is a failure, not a hang)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError("the evidence never came")
