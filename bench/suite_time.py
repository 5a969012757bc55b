"""The test suite's wall time against a reference commit's, measured side by side in one run.

    python bench/suite_time.py [--reference ebdd253] [--rounds 1]

The reference is checked out into a temporary git worktree and its suite is run the way its
README ran it then (one process: `pytest`); this checkout's suite is run the way the README
runs it now (`pytest -n auto`). Both use this virtual environment and alternate round by round,
so load on the machine falls on both alike. Printed per suite: wall seconds (median over the
rounds), the tests that ran, seconds per test; then the wall ratio and the per-test ratio. The
default reference, ebdd253, is main before the run-shape change (typed events, one finish,
fleet/), whose suite took its heartbeat waits and ran on one process.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUMMARY = re.compile(r"(\d+) passed")


@dataclass
class Suite:
    name: str
    root: Path
    args: list[str]
    walls: list[float]
    tests: int = 0

    def run(self) -> None:
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *self.args]
        start = time.perf_counter()
        done = subprocess.run(command, cwd=self.root, capture_output=True, text=True, check=False)
        self.walls.append(time.perf_counter() - start)
        found = SUMMARY.findall(done.stdout)
        if not found:
            raise SystemExit(f"{self.name}: no summary line; the suite printed:\n{done.stdout[-2000:]}")
        self.tests = int(found[-1])

    @property
    def wall(self) -> float:
        return statistics.median(self.walls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", default="ebdd253")
    parser.add_argument("--rounds", type=int, default=1)
    ns = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        worktree = Path(tmp) / "reference"
        add = ["git", "worktree", "add", "--detach", str(worktree), ns.reference]
        subprocess.run(add, cwd=ROOT, check=True)
        try:
            reference = Suite(f"reference {ns.reference} (pytest)", worktree, ["-p", "no:xdist"], [])
            head = Suite("this checkout (pytest -n auto)", ROOT, ["-n", "auto"], [])
            for _ in range(ns.rounds):
                reference.run()
                head.run()
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT, check=False)
    print(f"{'suite':42} {'wall s':>8} {'tests':>6} {'s/test':>7}")
    for suite in (reference, head):
        print(f"{suite.name:42} {suite.wall:8.1f} {suite.tests:6d} {suite.wall / suite.tests:7.3f}")
    print(f"wall ratio (this / reference): {head.wall / reference.wall:.2f}")
    per_test = (head.wall / head.tests) / (reference.wall / reference.tests)
    print(f"per-test ratio (this / reference): {per_test:.2f}")


if __name__ == "__main__":
    main()
