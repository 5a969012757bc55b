"""Runs that never lie, measured: SIGKILL at random points and kills injected in the finish window.

    python bench/faults.py [--random 50] [--finish 20] [--seed 11]

A loopback OpenAI-compatible server (tests/faultkit.py) plays every role: the author writes
one fixed document and every reviewer passes. Each trial starts `designloop create` on a
fresh copy of the example as a real process and kills it:

- random: SIGKILL after a random delay, drawn from the length of an uninterrupted run and
  counted from the moment the run directory appears;
- finish window: os._exit at one of the finish steps (step6_outcome, step7_review_log,
  step9_present), before or after its writes are saved, in turn.

Then `designloop resume` runs until the run ends (a run killed before it was recorded is
started again). Printed: re-paid answered requests, answers the killed process had stored in
its cache and a later process asked for again (goal 0); answers lost in flight, requests the
server answered in full but the process was killed before it stored the answer (no client
can keep an answer it never stored: each is asked again once); runs finishing with exactly
one review-log entry (goal all); design.md byte-identical to an uninterrupted run's (goal
all); and hangs, a process still running after two minutes (goal 0).
"""

from __future__ import annotations

import argparse
import contextlib
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from agentkit import make_repo  # noqa: E402
from faultkit import FINISH_NODES, ScriptedServer, launch, repaid  # noqa: E402
from graphkit import long_design  # noqa: E402

from pipeline.formats.review_log import parse_entries  # noqa: E402

DOCUMENT = long_design(sections=8) + "\n"  # one auditor slice keeps each trial small
HANG = 120.0


@dataclass
class Tally:
    trials: int = 0
    repaid: int = 0
    lost: int = 0
    one_entry: int = 0
    identical: int = 0
    hangs: int = 0

    def row(self, name: str) -> str:
        return (
            f"| {name} | {self.trials} | {self.repaid} | {self.lost} | {self.one_entry}/{self.trials} | "
            f"{self.identical}/{self.trials} | {self.hangs} |"
        )

    def count(self, log: list[dict[str, object]], killed: int, stored: int) -> None:
        """Score the requests: answers the killed process stored are never to be asked again."""
        answered = len({e["key"] for e in log if e["epoch"] == killed and e["answered"]})
        lost = max(0, answered - stored)
        self.lost += lost
        self.repaid += max(0, repaid(log) - lost)


class Trial:
    def __init__(self, server: ScriptedServer, base: Path) -> None:
        self.server = server
        self.base = base
        self.d = make_repo(base)
        self.d.design.unlink()
        self.runs = base / "runs"
        self.common = [
            "--runs-dir",
            str(self.runs),
            "--model",
            "openai:scripted",
            "--base-url",
            server.base_url,
        ]

    def start(self, node: str | None = None, when: str = "after") -> subprocess.Popen[bytes]:
        self.server.epoch += 1
        args = ["create", str(self.d.root), *self.common, "--no-warmup", "--json"]
        return subprocess.Popen(
            launch(args, node, when),
            cwd=self.d.repo_root,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def stored(self) -> int:
        """How many answers the process stored in its cache before it died."""
        import diskcache

        if not (self.runs / "cache" / "cache.db").is_file():
            return 0
        with contextlib.closing(diskcache.Cache(str(self.runs / "cache"))) as cache:
            return len(cache)

    def run_id(self) -> str | None:
        if not self.runs.is_dir():
            return None
        found = [p.name for p in self.runs.iterdir() if (p / "run.json").is_file()]
        return found[0] if found else None

    def finish(self, tally: Tally, reference: bytes | None) -> bytes:
        """Resume (or start again) until the run ends; then score it. A trial that scores short
        prints what its last command said (on stderr), so the case can be looked into."""
        said = ""
        for _ in range(5):
            run_id = self.run_id()
            self.server.epoch += 1
            if run_id is None:
                args = ["create", str(self.d.root), *self.common, "--no-warmup", "--json"]
            else:
                args = ["resume", run_id, "--runs-dir", str(self.runs), "--json"]
            try:
                done = subprocess.run(launch(args), cwd=self.d.repo_root, capture_output=True, timeout=HANG)
            except subprocess.TimeoutExpired:
                tally.hangs += 1
                break
            tail = done.stderr.decode(errors="replace")[-2000:]
            said = f"{' '.join(args[:2])}: exit {done.returncode}: {tail}"
            if done.returncode == 0:
                break
        entries = parse_entries(self.d.mutations) if self.d.mutations.exists() else []
        run_id = self.run_id()
        tally.trials += 1
        one = len(entries) == 1 and entries[0].run_id == run_id
        produced = self.d.design.read_bytes() if self.d.design.exists() else b""
        same = reference is not None and produced == reference
        tally.one_entry += int(one)
        tally.identical += int(same)
        if not (one and same):
            runs = sorted(p.name for p in self.runs.iterdir()) if self.runs.is_dir() else []
            print(
                f"{self.base.name}: review-log entries {[e.run_id for e in entries]}, runs {runs}, "
                f"design.md {'identical' if same else 'differs'}; last {said}",
                file=sys.stderr,
            )
        return produced


def wait_for_run_dir(trial: Trial, proc: subprocess.Popen[bytes]) -> float:
    start = time.monotonic()
    while trial.run_id() is None and proc.poll() is None and time.monotonic() - start < HANG:
        time.sleep(0.005)
    return time.monotonic()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--random", type=int, default=50)
    parser.add_argument("--finish", type=int, default=20)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    began = time.monotonic()
    with ScriptedServer(DOCUMENT) as server, tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        # The uninterrupted run: the reference document and how long a run lasts.
        trial = Trial(server, base / "reference")
        proc = trial.start()
        seen = wait_for_run_dir(trial, proc)
        proc.wait(HANG)
        length = time.monotonic() - seen
        reference = trial.d.design.read_bytes()
        assert proc.returncode == 0, "the uninterrupted run failed"
        shutil.rmtree(base / "reference")
        kills = Tally()
        for i in range(args.random):
            server.log = []
            trial = Trial(server, base / f"random-{i}")
            proc = trial.start()
            wait_for_run_dir(trial, proc)
            time.sleep(rng.uniform(0, length))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
            proc.wait(HANG)
            killed, stored = server.epoch, trial.stored()
            trial.finish(kills, reference)
            kills.count(server.log, killed, stored)
            shutil.rmtree(base / f"random-{i}")
        window = Tally()
        points = [(node, when) for node in FINISH_NODES for when in ("before", "after")]
        for i in range(args.finish):
            server.log = []
            node, when = points[i % len(points)]
            trial = Trial(server, base / f"finish-{i}")
            proc = trial.start(node, when)
            proc.wait(HANG)
            killed, stored = server.epoch, trial.stored()
            trial.finish(window, reference)
            window.count(server.log, killed, stored)
            shutil.rmtree(base / f"finish-{i}")
    print(f"uninterrupted run: {length:.2f} s from its run directory to its exit\n")
    head = [
        "trials",
        "runs",
        "re-paid answered requests",
        "answers lost in flight",
        "exactly one review-log entry",
    ]
    print("| " + " | ".join([*head, "design.md identical", "hangs"]) + " |")
    print("|" + " --- |" * 7)
    print(kills.row("SIGKILL at a random point"))
    print(window.row("kill in the finish window"))
    print(f"\n(all trials in {time.monotonic() - began:.0f} s)")


if __name__ == "__main__":
    main()
