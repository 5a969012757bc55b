"""Time `designloop check` against markdownlint-cli2 on the same generated files.

Both run as whole processes, side by side in one run, several times each; the script
prints the medians and their ratio. markdownlint-cli2 is installed from the npm registry
into bench/node/ on first use.

    python bench/check.py [--runs 7]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpus import make_design_dir  # noqa: E402

NODE_DIR = HERE / "node"
MDL = NODE_DIR / "node_modules" / ".bin" / "markdownlint-cli2"


def ensure_markdownlint() -> Path | None:
    if MDL.exists():
        return MDL
    if shutil.which("npm") is None:
        return None
    NODE_DIR.mkdir(exist_ok=True)
    subprocess.run(
        ["npm", "install", "--silent", "--prefix", str(NODE_DIR), "markdownlint-cli2"],
        check=False,
        capture_output=True,
    )
    return MDL if MDL.exists() else None


def timed(cmd: list[str], runs: int, ok: tuple[int, ...]) -> list[float]:
    times: list[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
        if done.returncode not in ok:
            raise SystemExit(f"{cmd[0]} failed ({done.returncode}): {done.stderr.decode()[:400]}")
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = make_design_dir(Path(tmp) / "design")
        wf = root / "_workflow"
        files = [
            wf / "design.md",
            wf / "design-mechanics.md",
            wf / "implementation-plan.md",
            *sorted((wf / "plan").glob("track-*.md")),
        ]
        lines = sum(len(f.read_text().splitlines()) for f in files)
        exe = shutil.which("designloop") or sys.exit("designloop is not installed in this environment")
        ours = timed([exe, "check", str(root)], args.runs, (0,))
        print(
            f"inputs: {len(files)} files, {lines} lines (design.md {len(files[0].read_text().splitlines())})"
        )
        print(f"designloop check        median {statistics.median(ours) * 1000:7.1f} ms  (9 rules)")
        mdl = ensure_markdownlint()
        if mdl is None:
            print("markdownlint-cli2 unavailable (npm registry unreachable): no ratio")
            return
        theirs = timed([str(mdl), *map(str, files)], args.runs, (0, 1))
        print(
            f"markdownlint-cli2       median {statistics.median(theirs) * 1000:7.1f} ms  (its default rules)"
        )
        print(
            f"ratio (markdownlint / designloop): {statistics.median(theirs) / statistics.median(ours):.1f}x"
        )


if __name__ == "__main__":
    main()
