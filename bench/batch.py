"""Batch generation measured, side by side in one run, against a loopback OpenAI-compatible
provider that answers every request after a fixed latency.

    python bench/batch.py [--dirs 100] [--jobs 32] [--latency 2.0] [--no-workers]

1. One directory alone: one run's critical path (its wall time).
2. ``designloop batch create`` over DIRS small directories at --jobs JOBS: the wall time
   against the concurrency bound, ceil(DIRS / JOBS) x one run's critical path (goal <= 1.2).
3. The identical batch again: requests sent (goal 0: every directory is skipped as unchanged).
   Beside it, the same directories run anew (their PASS forgotten) with the cache kept: the
   requests that differ between two runs of identical inputs.
4. Two workers on a PostgreSQL store (started by .ci/pg.sh) over DIRS/10 directories, one
   worker SIGKILLed while its run's comprehension review is in flight: directories ending with
   exactly one review-log entry (goal all), answered requests paid again (goal 0), and the
   seconds from the kill to the other worker resuming the run (goal <= 60).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from batchkit import batch_repo  # noqa: E402
from faultkit import ScriptedServer, repaid  # noqa: E402
from graphkit import long_design  # noqa: E402
from workerkit import HoldingServer, finished, holder_pid, query, wait_until, worker  # noqa: E402

from pipeline.formats.review_log import parse_entries  # noqa: E402

DOC = long_design(sections=8) + "\n"  # one auditor slice: a small directory


class Slow:
    """Adds a fixed latency to every answer of a scripted server."""

    latency = 0.0

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        time.sleep(self.latency)
        return super().reply(body)  # type: ignore[misc,no-any-return]


class SlowServer(Slow, ScriptedServer):
    pass


class SlowHoldingServer(Slow, HoldingServer):
    pass


def designloop(args: list[str], cwd: Path, server: ScriptedServer) -> tuple[float, dict[str, Any]]:
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", *args, "--model", "openai:scripted", "--base-url",
         server.base_url, "--no-warmup", "--json"],
        cwd=cwd, capture_output=True, text=True, env={**os.environ, "OPENAI_API_KEY": "bench"},
    )  # fmt: skip
    if not done.stdout:
        raise SystemExit(done.stderr)
    return time.monotonic() - began, json.loads(done.stdout)


def names(n: int) -> list[str]:
    return [f"d{i:03d}" for i in range(n)]


def local(args: argparse.Namespace, base: Path) -> None:
    with SlowServer(DOC) as server:
        server.latency = args.latency
        one = batch_repo(base / "one", ["d000"])
        single, out = designloop(["batch", "create", "docs/adr/*", "--jobs", "1"], one, server)
        assert out["totals"]["exit_code"] == 0, out
        requests_per_run = len(server.log)

        repo = batch_repo(base / "many", names(args.dirs))
        server.log.clear()
        wall, out = designloop(["batch", "create", "docs/adr/*", "--jobs", str(args.jobs)], repo, server)
        passed = sum(d["outcome"] == "PASS" for d in out["directories"])
        first_requests = len(server.log)
        bound = math.ceil(args.dirs / args.jobs) * single

        server.log.clear()
        again_wall, again = designloop(
            ["batch", "create", "docs/adr/*", "--jobs", str(args.jobs)], repo, server
        )
        skipped = again["totals"]["skipped"]
        again_requests = len(server.log)

        # The same inputs run anew: the runs forgotten, the cache kept.
        runs = repo / "runs"
        for child in runs.iterdir():
            if child.name not in ("cache",):
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        server.log.clear()
        anew_wall, anew = designloop(
            ["batch", "create", "docs/adr/*", "--jobs", str(args.jobs)], repo, server
        )
        anew_requests = len(server.log)

    print(f"latency {args.latency} s per request, {requests_per_run} requests per run")
    print("| measure | value |")
    print("|---|---|")
    print(f"| one run alone (critical path) | {single:.2f} s |")
    print(
        f"| {args.dirs} directories at --jobs {args.jobs}: wall | {wall:.2f} s ({passed}/{args.dirs} PASS) |"
    )
    print(f"| concurrency bound ceil({args.dirs}/{args.jobs}) x critical path | {bound:.2f} s |")
    print(f"| wall / bound (goal <= 1.2) | {wall / bound:.2f} |")
    print(f"| requests, first batch | {first_requests} |")
    print(
        f"| identical second batch: requests (goal 0) | {again_requests} "
        f"({skipped} skipped, {again_wall:.2f} s) |"
    )
    print(
        f"| same inputs run anew, cache kept: requests | {anew_requests} of {first_requests} "
        f"({anew['totals']['cache_hits']} answered from the cache, {anew_wall:.2f} s) |"
    )


def workers(args: argparse.Namespace, base: Path) -> None:
    started = subprocess.run(["bash", str(ROOT / ".ci" / "pg.sh"), "start"], capture_output=True, text=True)
    if started.returncode != 0:
        raise SystemExit(started.stderr)
    env = dict(p.split("=", 1) for line in started.stdout.splitlines() for p in line.split()[1:] if "=" in p)
    url = env["DESIGNLOOP_TEST_PG"]
    count = max(3, args.dirs // 10)
    try:
        repo = batch_repo(base / "workers", names(count))
        with SlowHoldingServer(DOC, "comprehension-review", "docs/adr/d000/") as server:
            server.latency = args.latency
            _, queued = designloop(["enqueue", "create", "docs/adr/*", "--store", url], repo, server)
            runs = {Path(d["directory"]).name: d["run_id"] for d in queued["directories"]}
            server.epoch = 1
            procs = [worker(url, repo, "--jobs", "4"), worker(url, repo, "--jobs", "4")]
            try:
                server.held.wait(timeout=600)
                pid = wait_until(lambda: holder_pid(url, "docs/adr/d000"))
                victim = next(p for p in procs if p.pid == pid)
                victim.send_signal(signal.SIGKILL)
                killed_at = time.time()
                victim.wait()
                server.epoch = 2
                server.release.set()
                wait_until(lambda: finished(url) >= set(runs.values()), limit=900)
                wait_until(lambda: query(url, "SELECT COUNT(*) FROM pgqueuer")[0][0] == 0)
            finally:
                for p in procs:
                    if p.poll() is None:
                        p.send_signal(signal.SIGTERM)
                        p.wait(timeout=60)
            again = repaid(server.log)
        events = [
            r[0] for r in query(url, "SELECT event FROM events WHERE run_id = %s ORDER BY id", runs["d000"])
        ]
        resumed = next(e for e in events if e["type"] == "resume" and e["pid"] != pid)
        import datetime as dt

        takeover = dt.datetime.fromisoformat(resumed["time"]).timestamp() - killed_at
        one = sum(
            len(parse_entries(repo / "docs" / "adr" / n / "_workflow" / "design-mutations.md")) == 1
            for n in runs
        )
        left = query(url, "SELECT COUNT(*) FROM pgqueuer")[0][0]
    finally:
        subprocess.run(["bash", str(ROOT / ".ci" / "pg.sh"), "stop", env["PGDIR"]], capture_output=True)
    print()
    print(f"two workers (--jobs 4 each), {count} directories, one worker SIGKILLed mid-run")
    print("| measure | value |")
    print("|---|---|")
    print(f"| directories with exactly one review-log entry (goal all) | {one}/{count} |")
    print(f"| answered requests paid again (goal 0) | {again} |")
    print(f"| kill to resume by the other worker (goal <= 60 s) | {takeover:.1f} s |")
    print(f"| jobs left on the queue | {left} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dirs", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=32)
    parser.add_argument("--latency", type=float, default=2.0)
    parser.add_argument("--no-workers", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        local(args, Path(tmp))
        if not args.no_workers:
            workers(args, Path(tmp))


if __name__ == "__main__":
    main()
