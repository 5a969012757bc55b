"""What a batch spends before and around its runs, measured side by side in one run.

    python bench/batch_setup.py [--small 10] [--large 300] [--first 60] [--tree 2181]
                                [--rounds 3] [--reference REV]

Builds a repository (the bundled example's code and `--large` copies of its design directory
under docs/adr/), runs one offline `create` for real and gives every other copy the same record
(its run directory and outputs copied, the run id and directory renamed), so that a batch over
them finds every directory unchanged since a PASS: the all-skipped batch is the batch's
planning and nothing else. A check that every row was skipped guards the copies. Printed,
each the median of `--rounds` (planning is timed inside the process, from the batch's start,
so the interpreter's start-up is not in it):

1. planning cost per directory of an all-skipped batch of `--small` and of `--large`
   directories, two ways: the batch's time over its directories, t(N) / N, and their ratio
   (target <= 1.2: flat), and what each directory adds to a batch of one, (t(N) - t(1)) /
   (N - 1) (the per-batch set-up left out; a difference of two timings, noisy at `--small`
   on a loaded machine);
2. the same at `--small` with an unrelated tree of `--tree` folders elsewhere in the
   repository, against without it (target: about 1, the tree costs nothing per directory);
3. the time from the batch's start to its first run's start, over `--small` and `--first`
   fresh directories (no earlier runs; the batch is stopped once its first run started);
4. `designloop batch create` as a whole process over `--first` skipped directories against
   one skipped directory (the difference is what the other directories cost; target <= 2 s),
   beside hashing every input of those directories with hashlib (the floor).

With `--reference REV`, the same measures run from a checkout of REV (a temporary git
worktree, this virtual environment) in the same rounds, and each is printed as this
checkout's over REV's.
"""

from __future__ import annotations

import argparse
import hashlib
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

HELPER = """
import asyncio, json, sys, time
from pathlib import Path
from pipeline.agents.session import SessionOptions
from pipeline.fleet.batch import BatchOptions, BatchRunner
from pipeline.runs.store import LocalStore

mode, repo, runs = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
dirs = [repo / "docs" / "adr" / name for name in sys.argv[4:]]
options = BatchOptions("phase1-creation", SessionOptions(runs_dir=runs), jobs=2)
runner = BatchRunner(options, LocalStore(runs))
first = []

def progress(row, event):
    if row.action in ("new", "resumed") and not first:
        first.append(time.perf_counter())

runner.progress = progress

async def main():
    started = time.perf_counter()
    task = asyncio.create_task(runner.run(dirs))
    if mode == "skip":
        batch = await task
        actions = sorted({row.action for row in batch.rows})
        return {"seconds": time.perf_counter() - started, "actions": actions}
    while not first and not task.done():
        await asyncio.sleep(0.01)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    return {"seconds": first[0] - started if first else None, "actions": ["new"]}

print(json.dumps(asyncio.run(main())))
"""


def designloop_env(pythonpath: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(pythonpath), "NO_COLOR": "1"}
    env.pop("DESIGNLOOP_STORE", None)
    return env


def python(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


def helper(mode: str, repo: Path, runs: Path, names: list[str], env: dict[str, str]) -> float:
    done = python(["-c", HELPER, mode, str(repo), str(runs), *names], repo, env)
    if done.returncode != 0:
        raise SystemExit(f"the {mode} batch failed:\n{done.stderr[-3000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    if mode == "skip" and out["actions"] != ["skipped"]:
        raise SystemExit(f"expected every directory skipped, got {out['actions']}")
    if out["seconds"] is None:
        raise SystemExit("no run started")
    return float(out["seconds"])


def build(base: Path, large: int, first: int) -> tuple[Path, list[str], list[str]]:
    """The repository: ``large`` directories with a PASS on record, ``first`` without any run."""
    done = [f"d{i:03d}" for i in range(large)]
    fresh = [f"f{i:03d}" for i in range(first)]
    repo = batch_repo(base, [done[0], *fresh])
    one = python(
        ["-m", "pipeline.cli", "batch", "create", f"docs/adr/{done[0]}", "-q"], repo, designloop_env(ROOT)
    )
    if one.returncode != 0:
        raise SystemExit(f"the seed run failed:\n{one.stderr}")
    copy_record(repo, done[0], done[1:])
    shutil.copytree(repo / "docs" / "adr", base / "pristine")
    return repo, done, fresh


def copy_record(repo: Path, seed: str, names: list[str]) -> None:
    """Every directory of ``names``: the seed's design directory as its run left it, and that
    run's record under a run id of its own, naming the directory."""
    adr, runs = repo / "docs" / "adr", repo / "runs"
    (run,) = [p for p in runs.iterdir() if (p / "events.jsonl").is_file()]
    for number, name in enumerate(names, start=1):
        shutil.copytree(adr / seed, adr / name)
        run_id = f"{run.name[:-6]}{number:06x}"
        target = runs / run_id
        shutil.copytree(run, target)
        for file in ("run.json", "events.jsonl"):
            path = target / file
            text = path.read_text(encoding="utf-8").replace(run.name, run_id)
            text = text.replace(f'"docs/adr/{seed}"', f'"docs/adr/{name}"')
            path.write_text(text.replace(f"docs/adr/{seed}/", f"docs/adr/{name}/"), encoding="utf-8")


def unrelated_tree(repo: Path, folders: int) -> None:
    for number in range(folders):
        folder = repo / "vendor" / f"pkg{number // 50}" / f"mod{number}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "module.txt").write_text(f"module {number}\n")


def hash_inputs(repo: Path, names: list[str]) -> float:
    """Seconds to hash every file of the directories and the code they describe (the floor)."""
    started = time.perf_counter()
    for path in [
        *(p for n in names for p in (repo / "docs" / "adr" / n).rglob("*")),
        *(repo / "code").rglob("*"),
    ]:
        if path.is_file():
            hashlib.sha256(path.read_bytes()).hexdigest()
    return time.perf_counter() - started


def cli_batch(repo: Path, names: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = python(
        ["-m", "pipeline.cli", "batch", "create", *(f"docs/adr/{n}" for n in names), "--json"], repo, env
    )
    wall = time.perf_counter() - started
    if done.returncode != 0 or json.loads(done.stdout)["totals"]["skipped"] != len(names):
        raise SystemExit(f"the batch did not skip every directory:\n{done.stderr[-2000:]}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=10)
    parser.add_argument("--large", type=int, default=300)
    parser.add_argument("--first", type=int, default=60)
    parser.add_argument("--tree", type=int, default=2181)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reference", metavar="REV")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="designloop-batch-setup-"))
    reference: Path | None = None
    try:
        repo, done, fresh = build(base, args.large, args.first)
        checkouts = {"this": designloop_env(ROOT)}
        if args.reference:
            reference = base / "reference"
            add = ["git", "worktree", "add", "--detach", "-q", str(reference), args.reference]
            subprocess.run(add, cwd=ROOT, check=True)
            checkouts[args.reference] = designloop_env(reference)
        measures = Measures(repo, base, checkouts)
        small, large = done[: args.small], done
        for env in checkouts.values():  # compiled once, before anything is timed
            cli_batch(repo, done[:1], env)
        for _ in range(args.rounds):
            for label, env in checkouts.items():
                measures.skip(label, "skip small", small, env)
                measures.skip(label, "skip large", large, env)
                measures.add(label, "first small", measures.first(fresh[: args.small], env))
                measures.add(label, "first large", measures.first(fresh, env))
                measures.add(label, "cli one", cli_batch(repo, done[:1], env))
                measures.add(label, "cli many", cli_batch(repo, done[: args.first], env))
        measures.floor = statistics.median(hash_inputs(repo, done[: args.first]) for _ in range(args.rounds))
        unrelated_tree(repo, args.tree)
        for _ in range(args.rounds):
            for label, env in checkouts.items():
                measures.skip(label, "skip small, tree", small, env)
        measures.report(args)
    finally:
        if reference is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(reference)], cwd=ROOT, check=False)
        shutil.rmtree(base, ignore_errors=True)


class Measures:
    def __init__(self, repo: Path, base: Path, checkouts: dict[str, dict[str, str]]) -> None:
        self.repo, self.base, self.labels = repo, base, list(checkouts)
        self.values: dict[tuple[str, str], list[float]] = {}
        self.counts: dict[str, int] = {}
        self.floor = 0.0

    def add(self, label: str, name: str, value: float) -> None:
        self.values.setdefault((label, name), []).append(value)

    def get(self, label: str, name: str) -> float:
        return statistics.median(self.values[label, name])

    def skip(self, label: str, name: str, names: list[str], env: dict[str, str]) -> None:
        """An all-skipped batch over ``names``, and over its first directory alone."""
        self.add(label, f"{name} one", helper("skip", self.repo, self.repo / "runs", names[:1], env))
        self.add(label, name, helper("skip", self.repo, self.repo / "runs", names, env))
        self.counts[name] = len(names)

    def per_directory(self, label: str, name: str) -> float:
        """What each directory adds to a batch of one (medians)."""
        return (self.get(label, name) - self.get(label, f"{name} one")) / (self.counts[name] - 1)

    def first(self, names: list[str], env: dict[str, str]) -> float:
        """From the batch's start to its first run's start, over fresh directories (restored
        and with a runs directory of their own each time: every directory is new)."""
        adr = self.repo / "docs" / "adr"
        for name in names:
            shutil.rmtree(adr / name)
            shutil.copytree(self.base / "pristine" / name, adr / name)
        runs = self.base / "fresh-runs"
        shutil.rmtree(runs, ignore_errors=True)
        return helper("first", self.repo, runs, names, env)

    def averaged(self, label: str, name: str) -> float:
        """The batch's planning over its directories (start-up within the process included)."""
        return self.get(label, name) / self.counts[name]

    def report(self, args: argparse.Namespace) -> None:
        rows = [
            (f"planning / directories, {args.small} skipped", "avg skip small", 1000, "ms"),
            (f"planning / directories, {args.large} skipped", "avg skip large", 1000, "ms"),
            (
                f"the same at {args.small} with {args.tree} unrelated folders",
                "avg skip small, tree",
                1000,
                "ms",
            ),
            (f"added per directory, {args.small} skipped", "skip small", 1000, "ms"),
            (f"added per directory, {args.large} skipped", "skip large", 1000, "ms"),
            (f"the same at {args.small} with {args.tree} unrelated folders", "skip small, tree", 1000, "ms"),
            (f"start to first run, {args.small} new directories", "first small", 1, "s"),
            (f"start to first run, {args.first} new directories", "first large", 1, "s"),
            ("`batch create`, 1 skipped directory (start-up)", "cli one", 1, "s"),
            (f"`batch create`, {args.first} skipped directories", "cli many", 1, "s"),
        ]
        other = self.labels[1] if len(self.labels) > 1 else None
        head = "| measure | this |" + (f" {other} | this / {other} |" if other else "")
        print(head)
        print("| --- | --- |" + (" --- | --- |" if other else ""))
        for title, key, scale, unit in rows:
            name = key.removeprefix("avg ")
            value = (
                self.averaged
                if key.startswith("avg")
                else self.per_directory
                if key.startswith("skip")
                else self.get
            )
            mine = value("this", name)
            line = f"| {title} | {mine * scale:.{2 if unit == 's' else 1}f} {unit} |"
            if other:
                theirs = value(other, name)
                line += f" {theirs * scale:.{2 if unit == 's' else 1}f} {unit} | {mine / theirs:.2f} |"
            print(line)
        for label in self.labels:
            flat = self.averaged(label, "skip large") / self.averaged(label, "skip small")
            added = self.per_directory(label, "skip large") / self.per_directory(label, "skip small")
            tree = self.per_directory(label, "skip small, tree") / self.per_directory(label, "skip small")
            extra = self.get(label, "cli many") - self.get(label, "cli one")
            print(
                f"\n{label}: planning / directories, {args.large} / {args.small} = {flat:.2f} "
                f"(target <= 1.2); added per directory, {args.large} / {args.small} = {added:.2f}; "
                f"with the unrelated tree / without = {tree:.2f}; {args.first} skipped directories "
                f"cost {extra:.2f} s over one (target <= 2 s; hashing all their inputs: {self.floor:.3f} s)"
            )


if __name__ == "__main__":
    main()
