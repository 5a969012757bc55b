"""Start-up of the command line, this checkout against another revision, side by side.

Each command (``--version``, ``check`` on the bundled example, ``check --help``, a bare
``gate``) runs as a whole process, alternately from this checkout and from a temporary git
worktree of the base revision (both on this interpreter, each with its own ``pipeline`` first
on the path), several times each; the script prints the medians and their ratio.

    python bench/cli_start.py [--base main] [--runs 9]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = "examples/docs/adr/0001-request-rate-limiter"
COMMANDS = {
    "--version": ["--version"],
    "check DIR": ["check", EXAMPLE, "--format", "text"],
    "check --help": ["check", "--help"],
    "gate DIR": ["gate", EXAMPLE],
}


def _time(tree: Path, args: list[str]) -> float:
    env = dict(os.environ, PYTHONPATH=str(tree))
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", "from pipeline.cli import run; run()", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="main", help="the revision to compare with (default: main)")
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", str(base), args.base], cwd=ROOT, check=True,
                       capture_output=True)  # fmt: skip
        try:
            print(f"{'command':<14} {args.base:>9} {'this':>9} {'ratio':>7}")
            for name, argv in COMMANDS.items():
                before, after = [], []
                for _ in range(args.runs):  # alternately, so load on the machine falls on both
                    before.append(_time(base, argv))
                    after.append(_time(ROOT, argv))
                b, a = statistics.median(before), statistics.median(after)
                print(f"{name:<14} {b:>8.3f}s {a:>8.3f}s {a / b:>6.2f}x")
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, check=False)


if __name__ == "__main__":
    main()
