"""`designloop batch create --jobs 2` against `--jobs 1` on an offline batch, side by side in one run.

    python bench/jobs.py [--dirs 10] [--rounds 3] [--reference REV]

Builds a repository with `--dirs` copies of the bundled example's design directory (and its
code), then, round after round, runs `designloop batch create 'docs/adr/*'` as a whole process
on a fresh copy of it (no earlier runs: every directory is a new offline run), once with
`--jobs 1` and once with `--jobs 2`, in alternating order. Printed: the median wall time of
each, their ratio (target >= 1.6 on 2 cores), and the machine's load average before and after
(others' work on the same cores shows there). With `--reference REV`, REV's `--jobs 2` runs in
the same rounds from a temporary git worktree (this virtual environment), and its ratio to
`--jobs 1` is printed too.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from batchkit import batch_repo  # noqa: E402


def batch(pristine: Path, work: Path, jobs: int, pythonpath: Path) -> float:
    """Wall seconds of one batch."""
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(pristine, work)
    env = {**os.environ, "PYTHONPATH": str(pythonpath), "NO_COLOR": "1"}
    env.pop("DESIGNLOOP_STORE", None)
    designloop = [sys.executable, "-m", "pipeline.cli"]
    command = [*designloop, "batch", "create", "docs/adr/*", "--jobs", str(jobs), "--json"]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    rows = json.loads(done.stdout)["directories"] if done.stdout.strip() else []
    failed = [
        f"{r['directory']}: {r['action']} {r['outcome']} {r['message']}"
        for r in rows
        if r["outcome"] != "PASS"
    ]
    if done.returncode != 0 or failed or not rows:
        said = "\n".join(failed)
        raise SystemExit(f"the batch failed ({done.returncode}):\n{said}\n{done.stderr[-3000:]}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dirs", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reference", metavar="REV")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="designloop-jobs-"))
    reference: Path | None = None
    try:
        repo = batch_repo(base / "build", [f"d{i:03d}" for i in range(args.dirs)])
        pristine = base / "pristine"
        shutil.copytree(repo, pristine)
        kinds: list[tuple[str, int, Path]] = [("--jobs 1", 1, ROOT), ("--jobs 2", 2, ROOT)]
        if args.reference:
            reference = base / "reference"
            add = ["git", "worktree", "add", "--detach", "-q", str(reference), args.reference]
            subprocess.run(add, cwd=ROOT, check=True)
            kinds.append((f"{args.reference} --jobs 2", 2, reference))
        for _, jobs, path in kinds:  # compiled and cached once, before anything is timed
            batch(pristine, base / "work", jobs, path)
        load_before = os.getloadavg()
        walls: dict[str, list[float]] = {label: [] for label, _, _ in kinds}
        for number in range(args.rounds):
            order = kinds if number % 2 == 0 else list(reversed(kinds))
            for label, jobs, path in order:
                walls[label].append(batch(pristine, base / "work", jobs, path))
        load_after = os.getloadavg()
    finally:
        if reference is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(reference)], cwd=ROOT, check=False)
        shutil.rmtree(base, ignore_errors=True)
    one = statistics.median(walls["--jobs 1"])
    print(f"{args.dirs} new offline directories, medians of {args.rounds} rounds, {os.cpu_count()} cores")
    print("| batch | wall | --jobs 1 / this |")
    print("| --- | --- | --- |")
    for label in walls:
        wall = statistics.median(walls[label])
        print(f"| {label} | {wall:.2f} s | {one / wall:.2f} |")
    print(
        f"\nload average (1, 5, 15 min) before: {', '.join(f'{x:.1f}' for x in load_before)}; "
        f"after: {', '.join(f'{x:.1f}' for x in load_after)} (target >= 1.6 on a quiet 2-core machine)"
    )


if __name__ == "__main__":
    main()
