"""Start-up of the read-only commands, measured side by side in one run.

    python bench/startup.py [--rounds 9] [--runs 360] [--reference REV]

Builds a repository in a temporary folder (the bundled example and its code, under git), runs
`designloop create` on the example once (offline), and copies that run to a second runs
directory 360 times (each copy with its own run id), so `runs` replays 360 event logs. Then,
round after round, in a shuffled order so that load on the machine falls on all alike, it
starts each read-only command as a whole process:

    --version, --help, status (the latest run), status DIR, runs (over the 360 runs),
    ready DIR, show DIR, gate DIR, slices DIR, check DIR, drift DIR

beside two references: the interpreter alone (`python -c pass`) and a plain JSON replay of
the same 360 event logs (the standard library's json, every line of every log). Printed per
command: the median wall time, its ratio to the interpreter alone, the modules the command
imported and its peak memory; then `runs` ÷ the JSON replay (target <= 2) and `check` on
check.py's generated corpus (bench/corpus.py) beside the figure bench/README.md records for it.

With `--reference REV`, the same commands also run from a checkout of REV (a temporary git
worktree, this virtual environment) in the same rounds, and the ratio of this checkout's time
to REV's is printed per command.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from corpus import make_design_dir  # noqa: E402

EXAMPLE = "examples/docs/adr/0001-request-rate-limiter"
CHECK_RECORDED = 0.1235
"""bench/README.md's figure for `check` (check.py, on its generated 13-file corpus)."""
TARGET = 0.3
"""Seconds each read-only command may take on the example (a quiet machine)."""
COUNT = (
    "import os, sys; sys.argv = ['designloop', *sys.argv[1:]]\n"
    "from pipeline.cli import main\n"
    "try:\n    main()\nexcept SystemExit:\n    pass\n"
    "open(os.environ['DESIGNLOOP_BENCH_MODULES'], 'w').write(str(len(sys.modules)))\n"
)
REPLAY = (
    "import json, os, sys\n"
    "for name in sorted(os.listdir(sys.argv[1])):\n"
    "    path = os.path.join(sys.argv[1], name, 'events.jsonl')\n"
    "    if os.path.isfile(path):\n"
    "        with open(path, 'rb') as handle:\n"
    "            [json.loads(line) for line in handle if line.strip()]\n"
)


@dataclass
class Command:
    name: str
    argv: list[str]
    walls: dict[str, list[float]] = field(default_factory=dict)
    cpus: dict[str, list[float]] = field(default_factory=dict)
    modules: dict[str, int] = field(default_factory=dict)
    rss_mb: float | None = None

    def median(self, checkout: str) -> float:
        return statistics.median(self.walls[checkout])

    def cpu(self, checkout: str) -> float:
        return statistics.median(self.cpus[checkout])


def run_once(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user and system) and peak memory (MB) of one process; a
    failure stops the benchmark."""
    with tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in (0, 1):
            err.seek(0)
            raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{err.read().decode()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def designloop(*args: str) -> list[str]:
    return [sys.executable, "-c", "from pipeline.cli import run; run()", *args]


def make_repository(base: Path, env: dict[str, str], copies: int) -> tuple[Path, Path]:
    """The example under git with one offline run, and a runs directory of ``copies`` runs."""
    repo = base / "repo"
    shutil.copytree(ROOT / "examples", repo / "examples")
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "example"], cwd=repo, check=True)
    subprocess.run(designloop("create", EXAMPLE, "-q"), cwd=repo, env=env, check=True, capture_output=True)
    (run,) = [p for p in (repo / "runs").iterdir() if (p / "events.jsonl").is_file()]
    many = repo / "runs-many"
    many.mkdir()
    for number in range(copies):
        run_id = f"{run.name[:15]}-p1-b{number:05d}"
        target = many / run_id
        shutil.copytree(run, target)
        for name in ("run.json", "events.jsonl"):
            path = target / name
            path.write_text(path.read_text(encoding="utf-8").replace(run.name, run_id), encoding="utf-8")
    keep_views(many, env)
    make_design_dir(repo / "corpus")
    return repo, many


KEEP = (
    "import sys\n"
    "from pathlib import Path\n"
    "from pipeline.runs.event_log import read_events\n"
    "try:\n"
    "    from pipeline.runs.views import ViewKeeper\n"
    "except ImportError:  # a revision whose runs keep no view\n"
    "    sys.exit(0)\n"
    "for run_dir in sorted(Path(sys.argv[1]).iterdir()):\n"
    "    ViewKeeper(run_dir)(read_events(run_dir)[-1])\n"
)


def keep_views(many: Path, env: dict[str, str]) -> None:
    """Each copied run's view kept beside its log, as the run that wrote the log keeps it (a
    copy's log is a new file: the view the original kept does not stand for it)."""
    subprocess.run([sys.executable, "-c", KEEP, str(many)], env=env, check=True)


def commands(runs: int) -> list[Command]:
    return [
        Command("--version", ["--version"]),
        Command("--help", ["--help"]),
        Command("status", ["status"]),
        Command("status DIR", ["status", EXAMPLE]),
        Command(f"runs ({runs} runs)", ["runs", "--runs-dir", "runs-many"]),
        Command("ready DIR", ["ready", EXAMPLE]),
        Command("show DIR --revision current", ["show", EXAMPLE, "--revision", "current"]),
        Command("gate DIR", ["gate", EXAMPLE]),
        Command("slices DIR", ["slices", EXAMPLE]),
        Command("check DIR", ["check", EXAMPLE]),
        Command("check (check.py's corpus)", ["check", "corpus"]),
        Command("drift DIR", ["drift", EXAMPLE]),
    ]


def count_modules(argv: list[str], repo: Path, env: dict[str, str], out: Path) -> int:
    """The modules ``designloop ARGV`` imported, run once more in a process of its own."""
    probe = [sys.executable, "-c", COUNT, *argv]
    modules = {**env, "DESIGNLOOP_BENCH_MODULES": str(out)}
    subprocess.run(probe, cwd=repo, env=modules, capture_output=True, check=False)
    return int(out.read_text())


def worktree(rev: str, base: Path) -> Path:
    path = base / "reference"
    subprocess.run(["git", "worktree", "add", "--detach", "-q", str(path), rev], cwd=ROOT, check=True)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--runs", type=int, default=360, help="runs for `runs` to replay")
    parser.add_argument("--reference", metavar="REV", help="also run the commands from this revision")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="designloop-startup-"))
    reference: Path | None = None
    try:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
        env.pop("DESIGNLOOP_STORE", None)
        checkouts = {"this": env}
        if args.reference:
            reference = worktree(args.reference, base)
            checkouts[args.reference] = {**env, "PYTHONPATH": str(reference)}
        # Each checkout reads runs its own code wrote (a run record's format may differ).
        repos = {
            label: make_repository(base / f"repo-{n}", cenv, args.runs)[0]
            for n, (label, cenv) in enumerate(checkouts.items())
        }
        measured = commands(args.runs)
        floor = Command("python -c pass", [])
        replay = Command("json replay", [])
        jobs: list[tuple[Command, str, list[str], dict[str, str]]] = []
        for label, cenv in checkouts.items():
            jobs += [(c, label, designloop(*c.argv), cenv) for c in measured]
        jobs += [(floor, "this", [sys.executable, "-c", "pass"], env)]
        jobs += [(replay, "this", [sys.executable, "-c", REPLAY, "runs-many"], env)]
        order = random.Random(36)
        for _ in range(args.rounds):
            order.shuffle(jobs)
            for command, label, argv, cenv in jobs:
                wall, cpu, rss = run_once(argv, repos[label], cenv)
                command.walls.setdefault(label, []).append(wall)
                command.cpus.setdefault(label, []).append(cpu)
                if label == "this":
                    command.rss_mb = max(command.rss_mb or 0.0, rss)
        for label, cenv in checkouts.items():
            for command in measured:
                command.modules[label] = count_modules(command.argv, repos[label], cenv, base / "modules")
        report(measured, floor, replay, list(checkouts), args.rounds)
    finally:
        if reference is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(reference)], cwd=ROOT, check=False)
        shutil.rmtree(base, ignore_errors=True)


def report(measured: list[Command], floor: Command, replay: Command, labels: list[str], rounds: int) -> None:
    alone = floor.median("this")
    print(f"medians of {rounds} rounds; the interpreter alone: {alone * 1000:.0f} ms")
    head = ["command", "median ms", "CPU ms", "x interpreter", "modules", "peak MB"]
    if len(labels) > 1:
        head += [f"{labels[1]} ms", f"{labels[1]} CPU ms", f"{labels[1]} modules", f"this / {labels[1]}"]
    rows = [head, ["---"] * len(head)]
    for command in measured:
        mine = command.median("this")
        row = [
            command.name,
            f"{mine * 1000:.0f}",
            f"{command.cpu('this') * 1000:.0f}",
            f"{mine / alone:.1f}",
            str(command.modules["this"]),
            f"{command.rss_mb:.0f}",
        ]
        if len(labels) > 1:
            theirs = command.median(labels[1])
            row += [
                f"{theirs * 1000:.0f}",
                f"{command.cpu(labels[1]) * 1000:.0f}",
                str(command.modules[labels[1]]),
                f"{mine / theirs:.2f}",
            ]
        rows.append(row)
    for row in rows:
        print("| " + " | ".join(row) + " |")
    runs = next(c for c in measured if c.name.startswith("runs"))
    json_replay = replay.median("this")
    print(
        f"\nruns / plain JSON replay of the same logs: {runs.median('this'):.3f} s / {json_replay:.3f} s"
        f" = {runs.median('this') / json_replay:.2f} (target <= 2)"
    )
    slowest = max(measured, key=lambda c: c.median("this"))
    print(f"slowest read-only command: {slowest.name}, {slowest.median('this'):.3f} s (target <= {TARGET} s)")
    check = next(c for c in measured if c.name.startswith("check ("))
    print(
        f"check on check.py's corpus: {check.median('this') * 1000:.0f} ms "
        f"(bench/README.md records {CHECK_RECORDED * 1000:.1f} ms on a quiet machine)"
    )


if __name__ == "__main__":
    main()
