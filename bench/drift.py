"""Time `designloop claims` and `designloop drift` on a generated repository.

The repository holds 1,000 code files (Python, Go, TypeScript and a Makefile-style text file
per package: 250 packages of four) and 50 design directories; each design-final.md makes 24
claims (symbols in prose, a location, a path, a name in fenced code) about the code of five
packages. The script

1. writes every ledger (`designloop claims 'docs/adr/*'`),
2. times `designloop drift 'docs/adr/*'` with every claim current,
3. changes one function's body (cited by the directories that cover its package) and times
   drift again, checking that exactly those directories' sentences are named,
4. reformats and re-comments 100 files and checks that drift stays at exit 0,
5. times the whole-repository input fingerprint (what a batch digests without --stale-only)
   for comparison;
6. times `claims` the way a CI loop calls it, once per design directory: 50 calls with the code
   index kept in runs/index (grounding.index_store) against one call for all 50 directories,
   and a per-directory call with no index kept (runs/index removed first), side by side.

Each timing is a whole process, the median of several runs.

    python bench/drift.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PACKAGES = 250
DIRECTORIES = 50
PER_DIRECTORY = 5
"""Packages each design directory describes."""


def py(n: int) -> str:
    return (
        f'"""Package {n}: buckets."""\n\n\nLIMIT_{n} = {n + 10}\n\n\n'
        f"class Bucket{n}:\n"
        f"    def take(self, cost):\n        return self.left - cost\n\n"
        f"    def refill(self, now):\n        self.left = min(LIMIT_{n}, self.left + now)\n\n\n"
        f"def key_{n}(tenant, route):\n    return f'rl:{{tenant}}:{{route}}:{n}'\n"
    )


def go(n: int) -> str:
    return (
        f"package p{n}\n\n// Serve{n} answers one request.\nfunc Serve{n}(port int) error {{\n"
        f"\treturn listen(port + {n})\n}}\n\nfunc listen(port int) error {{\n\treturn nil\n}}\n"
    )


def ts(n: int) -> str:
    return (
        f"export class Limiter{n} {{\n  allow(cost: number): boolean {{\n"
        f"    return cost <= {n + 1};\n  }}\n}}\n"
    )


def make(n: int) -> str:
    return f"build{n}:\n\tcc -O2 -o app{n} main{n}.c\n\ncheck{n}:\n\t./app{n} --self-test\n"


def design(d: int) -> str:
    lines = [f"# Design {d}", "", "## Overview", ""]
    for n in range(d * PER_DIRECTORY, (d + 1) * PER_DIRECTORY):
        lines += [
            f"`Bucket{n}.take` subtracts the cost from what is left.",
            f"`Bucket{n}.refill` tops it up to `LIMIT_{n}`.",
            f"`Serve{n}` listens on the port it is given; it lives in `pkg{n}/serve.go`.",
            f"`Limiter{n}.allow` admits a request when the cost is small enough.",
            f"The key is built by `key_{n}`, at `pkg{n}/limits.py:17`.",
            "",
        ]
    lines += ["```python", f"bucket = Bucket{d * PER_DIRECTORY}()", "```", ""]
    return "\n".join(lines)


def generate(root: Path) -> None:
    (root / ".git").mkdir(parents=True)
    for n in range(PACKAGES):
        pkg = root / f"pkg{n}"
        pkg.mkdir()
        (pkg / "limits.py").write_text(py(n))
        (pkg / "serve.go").write_text(go(n))
        (pkg / "limiter.ts").write_text(ts(n))
        (pkg / "build.mk").write_text(make(n))
    for d in range(DIRECTORIES):
        target = root / "docs" / "adr" / f"{d:04d}-design" / "design-final.md"
        target.parent.mkdir(parents=True)
        target.write_text(design(d))


def designloop(root: Path, *args: str) -> tuple[int, str, float]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", *args], cwd=root, capture_output=True, text=True, check=False
    )
    return done.returncode, done.stdout, time.perf_counter() - start


def median_of(root: Path, runs: int, *args: str) -> tuple[float, int, str]:
    times, code, out = [], 0, ""
    for _ in range(runs):
        code, out, took = designloop(root, *args)
        times.append(took)
    return statistics.median(times), code, out


def fingerprint_time(root: Path) -> float:
    from pipeline.runs.fingerprint import code_digest

    start = time.perf_counter()
    code_digest(root)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        generate(root)
        files = sum(1 for p in root.rglob("*") if p.is_file() and "docs" not in p.parts)
        claims_time, code, out = median_of(root, 1, "claims", "docs/adr/*", "--json")
        assert code == 0, out
        total = sum(f["claims"] for f in json.loads(out)["files"])
        current, code, out = median_of(root, args.runs, "drift", "docs/adr/*", "--json")
        report = json.loads(out)
        assert code == 0 and report["current"] == total, report["stale"][:3]
        # one body change in package 7: design directory 1 covers packages 5-9
        limits = root / "pkg7" / "limits.py"
        limits.write_text(limits.read_text().replace("self.left - cost", "self.left - 2 * cost"))
        changed, code, out = median_of(root, args.runs, "drift", "docs/adr/*", "--json")
        stale = json.loads(out)["stale"]
        named = sorted({(s["file"], s["line"], s["mention"]) for s in stale})
        assert code == 1 and named == [("docs/adr/0001-design/design-final.md", 17, "Bucket7.take")], named
        limits.write_text(py(7))
        for n in range(100):  # layout and comments only (no line moves: the locations stay true)
            path = root / f"pkg{n}" / "limits.py"
            path.write_text(
                path.read_text().replace(
                    "    def take(self, cost):", "    def take( self,  cost ):  # take some"
                )
            )
        _, layout_code, out = median_of(root, 1, "drift", "docs/adr/*", "--json")
        layout = json.loads(out)
        whole = statistics.median(fingerprint_time(root) for _ in range(args.runs))
        for n in range(100):  # back as the ledgers have them
            (root / f"pkg{n}" / "limits.py").write_text(py(n))
        scale = fleet_scale(root, args.runs)
    print(f"repository: {files} code files, {DIRECTORIES} design directories, {total} claims")
    print(f"claims (write every ledger): {claims_time:.2f} s")
    print(f"drift, every claim current:  {current:.2f} s (median of {args.runs})")
    print(f"drift, one body changed:     {changed:.2f} s; stale: {named}")
    stale_after = sorted({(s["file"], s["line"]) for s in layout["stale"]})
    print(f"drift after re-layout of 100 files: exit {layout_code}; stale lines: {stale_after}")
    print(f"whole-repository input fingerprint (in process): {whole:.2f} s")
    one, loop, cold, warm = scale
    print(f"claims for all {DIRECTORIES} directories in one call, index kept: {one:.2f} s")
    print(
        f"claims once per directory, {DIRECTORIES} calls, index kept: {loop:.2f} s "
        f"({loop / one:.1f}x one call)"
    )
    print(
        f"one per-directory call: {warm:.2f} s with the index kept, {cold:.2f} s without "
        f"({cold / warm:.1f}x; {DIRECTORIES} calls without: about {cold * DIRECTORIES:.0f} s)"
    )


def fleet_scale(root: Path, runs: int) -> tuple[float, float, float, float]:
    """``claims`` as a CI loop calls it: one call for every directory, then one per directory,
    with the index kept; and one per-directory call without it (the store removed first)."""
    import shutil

    directories = sorted(p.name for p in (root / "docs" / "adr").iterdir())
    one, code, out = median_of(root, 1, "claims", "docs/adr/*")
    assert code == 0, out
    start = time.perf_counter()
    for name in directories:
        code, out, _ = designloop(root, "claims", f"docs/adr/{name}")
        assert code == 0, out
    loop = time.perf_counter() - start
    warm = median_of(root, runs, "claims", f"docs/adr/{directories[0]}")[0]
    colds = []
    for _ in range(max(1, runs // 2)):
        shutil.rmtree(root / "runs" / "index", ignore_errors=True)
        colds.append(designloop(root, "claims", f"docs/adr/{directories[0]}")[2])
    return one, loop, statistics.median(colds), warm


if __name__ == "__main__":
    main()
