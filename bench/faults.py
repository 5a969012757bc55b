"""Runs that never lie, measured: SIGKILL at random points, kills injected in the finish window,
and two model behaviours that once made a run lie, each under random SIGKILLs.

    python bench/faults.py [--random 50] [--finish 20] [--unplaced 20] [--edits 20] [--seed 11]
                           [--keep bench/out/faults]

A loopback OpenAI-compatible server (tests/faultkit.py) plays every role: the author writes
one fixed document and every reviewer passes, except in two scenarios:

- section-less findings: the readability auditors return one should-fix that names no
  section, no line and no quote, in round 1 only (every other trial) or in every round. A run
  that ends PASS though no auditor read the document again after such a finding, or though
  the auditors raise it every round, is a false PASS;
- several edits per turn: after its write, the author sends four `edit` calls in one
  assistant message. Every replacement missing from the final design.md is a lost edit.

Each trial starts `designloop create` on a fresh copy of the example as a real process and
kills it:

- random (and both scenarios): SIGKILL after a random delay, drawn from the length of an
  uninterrupted run of the same scenario and counted from the moment the run directory appears;
- finish window: os._exit at one of the finish steps (step6_outcome, step7_review_log,
  step9_present), before or after its writes are saved, in turn.

Then `designloop resume` runs until the run ends (a run killed before it was recorded is
started again). Printed: re-paid answered requests, answers the killed process had stored in
its cache and a later process asked for again (goal 0); answers lost in flight, requests the
server answered in full but the process was killed before it stored the answer (no client
can keep an answer it never stored: each is asked again once); runs finishing with exactly
one review-log entry (goal all); design.md byte-identical to an uninterrupted run's (goal
all); the outcome the scenario calls for (goal all); false PASS and lost edits (goal 0); and
hangs, a process still running after two minutes (goal 0).

A trial that scores short keeps what it has to say under --keep/<trial>/: every command with
its exit code, stdout and whole stderr (the killed process's too), each run's events.jsonl,
the review log and design.md; its path is printed on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from agentkit import make_repo  # noqa: E402
from faultkit import FINISH_NODES, ScriptedServer, launch, repaid  # noqa: E402
from graphkit import long_design  # noqa: E402

from pipeline.formats.review_log import parse_entries  # noqa: E402

DOCUMENT = long_design(sections=8) + "\n"  # one auditor slice keeps each trial small
EDITS = [
    (f"Step {j} of component {i} stores one value", f"Step {j} of component {i} keeps one value")
    for i, j in ((0, 1), (2, 3), (4, 5), (6, 7))
]
HANG = 120.0


@dataclass
class Tally:
    trials: int = 0
    repaid: int = 0
    lost: int = 0
    one_entry: int = 0
    identical: int = 0
    expected: int = 0
    false_pass: int = 0
    lost_edits: int = 0
    hangs: int = 0

    def row(self, name: str) -> str:
        n = self.trials
        cells = [self.repaid, self.lost, f"{self.one_entry}/{n}", f"{self.identical}/{n}"]
        cells += [f"{self.expected}/{n}", self.false_pass, self.lost_edits, self.hangs]
        return f"| {name} | {n} | " + " | ".join(str(c) for c in cells) + " |"

    def count(self, log: list[dict[str, Any]], killed: int, stored: int) -> None:
        """Score the requests: answers the killed process stored are never to be asked again."""
        answered = len({e["key"] for e in log if e["epoch"] == killed and e["answered"]})
        lost = max(0, answered - stored)
        self.lost += lost
        self.repaid += max(0, repaid(log) - lost)


@dataclass
class Said:
    """What the trial's commands said, kept for a trial that scores short."""

    commands: list[str] = field(default_factory=list)

    def add(self, args: list[str], code: int | None, out: str, err: str) -> None:
        self.commands.append(
            f"$ designloop {' '.join(args)}\nexit {code}\n--- stdout\n{out}\n--- stderr\n{err}\n"
        )


class Trial:
    def __init__(self, server: ScriptedServer, base: Path) -> None:
        self.server = server
        self.base = base
        self.d = make_repo(base)
        self.d.design.unlink()
        self.runs = base / "runs"
        self.said = Said()
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
        self.killed_err = self.base / f"killed-{self.server.epoch}.stderr"
        return subprocess.Popen(
            launch(args, node, when),
            cwd=self.d.repo_root,
            stdout=subprocess.DEVNULL,
            stderr=self.killed_err.open("wb"),
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

    def finish(self, tally: Tally, reference: bytes | None, expect: str) -> tuple[bytes, str | None]:
        """Resume (or start again) until the run ends; then score the review log and the design.
        Returns the design and the outcome the last command printed."""
        outcome: str | None = None
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
                self.said.add(args, None, "", f"still running after {HANG:.0f} s")
                break
            out, err = done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")
            self.said.add(args, done.returncode, out, err)
            with contextlib.suppress(json.JSONDecodeError):
                outcome = json.loads(out).get("outcome")
            if done.returncode == 0:
                break
        entries = parse_entries(self.d.mutations) if self.d.mutations.exists() else []
        tally.trials += 1
        one = len(entries) == 1 and entries[0].run_id == self.run_id()
        produced = self.d.design.read_bytes() if self.d.design.exists() else b""
        same = reference is not None and produced == reference
        tally.one_entry += int(one)
        tally.identical += int(same)
        tally.expected += int(outcome == expect)
        self.short = not (one and same and outcome == expect)
        return produced, outcome

    def keep(self, keep: Path, why: str) -> None:
        """Keep everything the trial said, and where it left things, for a later look."""
        target = keep / self.base.name
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        killed = "".join(
            f"--- {p.name}\n{p.read_text(errors='replace')}\n"
            for p in sorted(self.base.glob("killed-*.stderr"))
        )
        (target / "commands.txt").write_text(f"{why}\n\n{killed}\n" + "\n".join(self.said.commands))
        for events in self.runs.glob("*/events.jsonl") if self.runs.is_dir() else []:
            shutil.copy(events, target / f"{events.parent.name}.events.jsonl")
        for path in (self.d.mutations, self.d.design):
            if path.exists():
                shutil.copy(path, target / path.name)
        print(f"{self.base.name}: {why}; kept in {target}", file=sys.stderr)


def wait_for_run_dir(trial: Trial, proc: subprocess.Popen[bytes]) -> float:
    start = time.monotonic()
    while trial.run_id() is None and proc.poll() is None and time.monotonic() - start < HANG:
        time.sleep(0.005)
    return time.monotonic()


def reference_run(server: ScriptedServer, base: Path) -> tuple[bytes, float]:
    """An uninterrupted run: the design it leaves and how long a run lasts."""
    trial = Trial(server, base)
    proc = trial.start()
    seen = wait_for_run_dir(trial, proc)
    proc.wait(HANG)
    length = time.monotonic() - seen
    assert proc.returncode == 0, f"the uninterrupted run failed: {trial.killed_err.read_text()}"
    produced = trial.d.design.read_bytes()
    shutil.rmtree(base)
    return produced, length


def killed_trial(
    server: ScriptedServer, base: Path, delay: float | None, node: tuple[str, str] | None
) -> tuple[Trial, int, int]:
    """Start a trial and kill it: after ``delay`` seconds, or at the finish step ``node``."""
    server.log = []
    trial = Trial(server, base)
    if node is not None:
        proc = trial.start(*node)
    else:
        proc = trial.start()
        wait_for_run_dir(trial, proc)
        time.sleep(delay or 0.0)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
    proc.wait(HANG)
    return trial, server.epoch, trial.stored()


def false_pass(server: ScriptedServer, mode: str, outcome: str | None) -> bool:
    """PASS though the auditors raised a section-less finding every round, or though no auditor
    read the document again after the one it raised in round 1."""
    if outcome != "PASS":
        return False
    if mode == "always":
        return True
    return not any(e["role"] == "readability-auditor" and (e["round"] or 1) > 1 for e in server.log)


def scenario(
    name: str, server: ScriptedServer, trials: int, rng: random.Random, tmp: Path, keep: Path, expect: str
) -> Tally:
    """``trials`` random SIGKILLs of the scenario ``server`` plays, each resumed to its end."""
    tally = Tally()
    if not trials:
        return tally
    reference, length = reference_run(server, tmp / f"{name}-reference")
    for i in range(trials):
        if server.unplaced is not None:
            server.unplaced = "once" if i % 2 == 0 else "always"
        trial, killed, stored = killed_trial(server, tmp / f"{name}-{i}", rng.uniform(0, length), None)
        wanted = "SHOULD-FIX REMAINS" if server.unplaced == "always" else expect
        produced, outcome = trial.finish(tally, reference, wanted)
        tally.count(server.log, killed, stored)
        why = []
        if server.unplaced is not None and false_pass(server, server.unplaced, outcome):
            tally.false_pass += 1
            why.append(f"false PASS ({server.unplaced})")
        lost = sum(new.encode() not in produced for _, new in server.edits)
        tally.lost_edits += lost
        if lost:
            why.append(f"{lost} edit(s) lost")
        if trial.short or why:
            trial.keep(keep, ", ".join(why) or f"scored short (outcome {outcome})")
        shutil.rmtree(tmp / f"{name}-{i}")
    return tally


def finish_window(server: ScriptedServer, trials: int, tmp: Path, keep: Path) -> Tally:
    tally = Tally()
    if not trials:
        return tally
    reference, _ = reference_run(server, tmp / "finish-reference")
    points = [(node, when) for node in FINISH_NODES for when in ("before", "after")]
    for i in range(trials):
        trial, killed, stored = killed_trial(server, tmp / f"finish-{i}", None, points[i % len(points)])
        trial.finish(tally, reference, "PASS")
        tally.count(server.log, killed, stored)
        if trial.short:
            trial.keep(keep, f"scored short (killed at {points[i % len(points)]})")
        shutil.rmtree(tmp / f"finish-{i}")
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--random", type=int, default=50)
    parser.add_argument("--finish", type=int, default=20)
    parser.add_argument("--unplaced", type=int, default=20)
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--keep", type=Path, default=ROOT / "bench" / "out" / "faults")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    began = time.monotonic()
    rows: list[tuple[str, Tally]] = []
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        with ScriptedServer(DOCUMENT) as server:
            rows.append(
                (
                    "SIGKILL at a random point",
                    scenario("random", server, args.random, rng, tmp, args.keep, "PASS"),
                )
            )
            rows.append(("kill in the finish window", finish_window(server, args.finish, tmp, args.keep)))
        with ScriptedServer(DOCUMENT, unplaced="once") as server:
            rows.append(
                (
                    "section-less findings, SIGKILL",
                    scenario("unplaced", server, args.unplaced, rng, tmp, args.keep, "PASS"),
                )
            )
        with ScriptedServer(DOCUMENT, edits=EDITS) as server:
            rows.append(
                (
                    "four edits in one turn, SIGKILL",
                    scenario("edits", server, args.edits, rng, tmp, args.keep, "PASS"),
                )
            )
    head = [
        "trials",
        "runs",
        "re-paid answered requests",
        "answers lost in flight",
        "exactly one review-log entry",
        "design.md identical",
        "expected outcome",
        "false PASS",
        "lost edits",
        "hangs",
    ]
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    for name, tally in rows:
        if tally.trials:
            print(tally.row(name))
    print(f"\n(all trials in {time.monotonic() - began:.0f} s)")


if __name__ == "__main__":
    main()
