"""What a run costs, measured side by side in one run: requests, wall time, prefix share.

    python bench/run_cost.py [--decisions 50] [--sizes 1000,10000,50000]

A loopback provider (bench/loopback.py) plays every role with a set latency L per request;
`designloop create` runs as a real process against it on a generated design directory whose
draft is a 4-slice document. Printed:

- wall ÷ critical path at L = 200 ms and 1 s, OpenAI-compatible (the critical path is L
  times the longest chain of dependent requests: the author's turns, then the longest
  conversation of the fan-out and the second check, then the comprehension gate's);
- requests sent by a second identical run, by a run in a fresh copy of the repository that
  shares the runs directory, and by a run after one research-log decision changed, each
  against the cold run's;
- the share of the auditors' request bodies that is a common byte prefix, on their first and
  second turns (each auditor spawn asked on its own, without the cache, so every body is sent);
- the warm-up: how long the fan-out waited for the first auditor's first answer with a
  provider that caches prompts (Anthropic wire format) and with one that does not;
- offline create time at about 1k, 10k and 50k design lines, and whether every decision
  record reached the design.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))


from corpus import make_log_repo  # noqa: E402
from loopback import Loopback, Request  # noqa: E402

from pipeline.agents.spawn import prefix_share  # noqa: E402
from pipeline.runs.event_log import events_of  # noqa: E402
from pipeline.runs.events import Spawned  # noqa: E402

STAGE = {"design-author": 0, "readability-auditor": 1, "absorption-check": 1, "comprehension-review": 2}
DESIGNLOOP = [sys.executable, "-m", "pipeline.cli"]


def create(
    design: Path, *args: str, env: dict[str, str] | None = None, clock: list[float] | None = None
) -> tuple[float, dict[str, Any]]:
    """Run ``designloop create`` in the design's repository: (wall seconds, its --json output);
    ``clock`` receives the moment the process was started."""
    repo = design.parent.parent
    started = time.monotonic()
    if clock is not None:
        clock.append(started)
    done = subprocess.run(
        [*DESIGNLOOP, "create", str(design.relative_to(repo)), "--json", *args],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"designloop create failed ({done.returncode}):\n{done.stderr}")
    return wall, json.loads(done.stdout)


def critical_path(requests: list[Request], latency: float) -> float:
    """L times the longest chain: per round and stage, the longest conversation."""
    turns: dict[tuple[str, int, int | None], int] = defaultdict(int)
    for r in requests:
        if r.spawn is not None:
            turns[r.spawn] = max(turns[r.spawn], r.turn + 1)
    stages: dict[tuple[int, int], int] = defaultdict(int)
    for (role, round_, _), count in turns.items():
        key = (round_, STAGE.get(role, 3))
        stages[key] = max(stages[key], count)
    return latency * sum(stages.values())


def openai(url: str) -> tuple[list[str], dict[str, str]]:
    return ["--model", "openai:bench", "--base-url", f"{url}/v1"], {"OPENAI_API_KEY": "bench"}


def anthropic(url: str) -> tuple[list[str], dict[str, str]]:
    return ["--model", "anthropic:claude-sonnet-4-5"], {
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "bench",
    }


def spawns_of(design: Path, run_id: str) -> list[Spawned]:
    return events_of(design.parent.parent / "runs" / run_id, Spawned)


def wall_rows(work: Path, decisions: int) -> list[tuple[str, str]]:
    rows = []
    for latency in (0.2, 1.0):
        with Loopback(latency) as server:
            design = make_log_repo(work / f"wall-{latency}", decisions)
            args, env = openai(server.url)
            clock: list[float] = []
            wall, out = create(design, *args, env=env, clock=clock)
            sent = server.take()
        path = critical_path(sent, latency)
        before = min(r.arrived for r in sent) - clock[0]
        rows.append(
            (
                f"wall ÷ critical path, L = {latency * 1000:.0f} ms",
                f"{wall / path:.2f}  ({wall:.2f} s ÷ {path:.1f} s; "
                f"{out['outcome']}, {out['rounds']} round(s))",
            )
        )
        rows.append(
            (
                "  of which before the first request",
                f"{before:.2f} s; from the first request to the exit: {(wall - before) / path:.2f}x",
            )
        )
    return rows


def request_rows(work: Path, decisions: int) -> list[tuple[str, str]]:
    with Loopback(0.05) as server:
        args, env = openai(server.url)
        design = make_log_repo(work / "repeat", decisions)
        _, cold = create(design, *args, env=env)
        cold_n = len(server.take())
        create(design, *args, env=env)
        again = len(server.take())
        copy = work / "repeat-copy"
        shutil.copytree(design.parent.parent, copy, ignore=shutil.ignore_patterns("runs"))
        runs = design.parent.parent / "runs"
        create(copy / "docs" / "d", *args, "--runs-dir", str(runs), env=env)
        copied = len(server.take())
        make_log_repo(design.parent.parent, decisions, changed=decisions // 2)
        _, changed = create(design, *args, env=env)
        changed_n = len(server.take())
    spawns = spawns_of(design, cold["run_id"])
    slices = sum(1 for e in spawns if e.role == "readability-auditor" and e.round == 1)
    return [
        ("requests, cold run", f"{cold_n}  ({slices}-slice design, {cold['outcome']})"),
        ("requests, second identical run", str(again)),
        ("requests, fresh copy sharing the runs directory", str(copied)),
        (
            "requests, one decision changed",
            f"{changed_n}  ({changed_n / cold_n:.0%} of the cold run; {changed['outcome']})",
        ),
    ]


def prefix_rows(work: Path, decisions: int) -> list[tuple[str, str]]:
    """Each auditor spawn of the fan-out asked on its own, each with an empty cache (a runs
    directory of its own), so every body reaches the provider."""
    with Loopback(0.0) as server:
        args, env = openai(server.url)
        design = make_log_repo(work / "prefix", decisions)
        repo = design.parent.parent
        create(design, *args, env=env)
        server.take()
        run_env = {**os.environ, "PYTHONPATH": str(ROOT), **env}
        listing = subprocess.run(
            [*DESIGNLOOP, "slices", "docs/d"],
            cwd=repo,
            env=run_env,
            capture_output=True,
            text=True,
            check=True,
        )
        for index, (start, end) in enumerate(json.loads(listing.stdout)["slices"]):
            review = [*DESIGNLOOP, "review", "readability-auditor", "docs/d", "--slice", f"{start}-{end}"]
            review += [*args, "--runs-dir", f"runs-slice-{index}", "--json"]
            done = subprocess.run(review, cwd=repo, env=run_env, capture_output=True, text=True, check=False)
            if done.returncode not in (0, 1):
                raise SystemExit(f"designloop review failed:\n{done.stderr}")
        sent = server.take()
    by_turn: dict[int, list[str]] = defaultdict(list)
    for r in sent:
        by_turn[r.turn].append(r.body.decode())
    first, second = by_turn.get(0, []), by_turn.get(1, [])
    return [
        ("body prefix share, fan-out first turn", f"{prefix_share(first):.3f}  ({len(first)} bodies)"),
        ("body prefix share, fan-out second turn", f"{prefix_share(second):.3f}  ({len(second)} bodies)"),
    ]


def warmup_rows(work: Path, decisions: int) -> list[tuple[str, str]]:
    rows = []
    for name, wire in (("Anthropic (caches prompts)", anthropic), ("OpenAI-compatible (no cache)", openai)):
        with Loopback(1.0) as server:
            args, env = wire(server.url)
            design = make_log_repo(work / f"warm-{name[:4]}", decisions)
            _, out = create(design, *args, env=env)
            sent = server.take()
        spawns = spawns_of(design, out["run_id"])
        waits = [e.warmup_wait or 0.0 for e in spawns if e.role == "readability-auditor"]
        first_turns = sum(1 for r in sent if r.turn == 0)
        rows.append(
            (
                f"warm-up wait, {name}",
                f"{max(waits):.2f} s at L = 1 s (was a fixed 60 s); "
                f"{first_turns} first-turn request(s) sent for {len(spawns)} spawns",
            )
        )
    return rows


def offline_rows(work: Path, sizes: list[int]) -> list[tuple[str, str]]:
    rows, times = [], {}
    for lines in sizes:
        decisions = max(1, lines // 14)
        design = make_log_repo(work / f"offline-{lines}", decisions)
        wall, out = create(design)
        text = (design / "_workflow" / "design.md").read_text()
        present = sum(1 for i in range(1, decisions + 1) if f"### D{i}:" in text)
        times[lines] = wall
        rows.append(
            (
                f"offline create, {len(text.splitlines()):,} design lines",
                f"{wall:.1f} s; {present}/{decisions} decision records; {out['outcome']}",
            )
        )
    for small, large in itertools.pairwise(sizes):
        rows.append(
            (f"offline time ratio {small:,} → {large:,} lines", f"{times[large] / times[small]:.2f}x")
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--decisions", type=int, default=50, help="decisions in the log (50: a 4-slice draft)"
    )
    parser.add_argument("--sizes", default="1000,10000,50000", help="offline design sizes in lines")
    options = parser.parse_args()
    sizes = [int(s) for s in options.sizes.split(",") if s]
    with tempfile.TemporaryDirectory(prefix="run-cost-") as tmp:
        work = Path(tmp)
        rows = wall_rows(work, options.decisions)
        rows += request_rows(work, options.decisions)
        rows += prefix_rows(work, options.decisions)
        rows += warmup_rows(work, options.decisions)
        rows += offline_rows(work, sizes)
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        print(f"{label:<{width}}  {value}")


if __name__ == "__main__":
    main()
