"""Drift and --stale-only on a repository nobody here wrote: pallets/itsdangerous.

bench/drift_real/ holds three design directories written for this check (research logs and
track files describing itsdangerous's signer, its timestamps and its URL-safe serializers; the
project's own code is never copied here). The script clones itsdangerous at a pinned commit into
a temporary directory, adds the three directories, and with the offline engine:

1. creates each design and runs `batch final --stale-only` (every directory new);
2. checks that `drift` finds every claim current;
3. makes a real code change: `TimestampSigner.get_timestamp` returns milliseconds instead of
   seconds, which makes exactly one design sentence untrue (the timestamps design's "returns
   the current time as whole seconds since the epoch");
4. checks that `drift` names exactly that sentence (and its SARIF result is at that line), and
   that `batch final --stale-only` re-runs exactly that directory, after which drift is clean;
5. adds an unrelated function and checks that `--stale-only` runs nothing while the default
   (the whole code) runs every directory.

    python bench/drift_real.py [--repo URL_OR_PATH]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = "https://github.com/pallets/itsdangerous"
COMMIT = "672971d"
UNTRUE = (
    "docs/adr/0002-timestamps/design-final.md",
    "`TimestampSigner.get_timestamp` returns the current time as whole seconds since the epoch.",
)


def designloop(root: Path, *args: str) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", *args], cwd=root, capture_output=True, text=True, check=False
    )
    return done.returncode, done.stdout + done.stderr


def batch(root: Path, *extra: str) -> dict[str, str]:
    code, out = designloop(root, "batch", "final", "docs/adr/*", "--runs-dir", "runs", "--json", *extra)
    assert code == 0, out
    data: dict[str, Any] = json.loads(out)
    return {Path(r["directory"]).name: r["action"] for r in data["directories"]}


def drift(root: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    code, out = designloop(root, "drift", "docs/adr/*", "--json", *extra)
    return code, json.loads(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repo", default=REPO, help="itsdangerous's repository (a URL or a local clone)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "itsdangerous"
        subprocess.run(["git", "clone", "-q", args.repo, str(root)], check=True)
        subprocess.run(["git", "-C", str(root), "checkout", "-q", COMMIT], check=True)
        shutil.copytree(HERE / "drift_real", root / "docs" / "adr")
        for directory in sorted((root / "docs" / "adr").iterdir()):
            code, out = designloop(root, "create", str(directory.relative_to(root)), "--runs-dir", "runs")
            assert code == 0, out
        print("first batch:", batch(root, "--stale-only"))
        code, report = drift(root)
        assert code == 0 and not report["stale"], report["stale"]
        print(f"drift: {report['claims']} claims, all current")

        timed = root / "src" / "itsdangerous" / "timed.py"
        text = timed.read_text(encoding="utf-8")
        assert "        return int(time.time())\n" in text
        timed.write_text(text.replace("return int(time.time())\n", "return int(time.time() * 1000)\n"))
        code, report = drift(root, "--sarif", "drift.sarif")
        named = [(s["file"], s["quote"]) for s in report["stale"]]
        assert code == 1 and len(named) == 1 and named[0][0] == UNTRUE[0] and UNTRUE[1] in named[0][1], named
        sarif = json.loads((root / "drift.sarif").read_text(encoding="utf-8"))
        [result] = sarif["runs"][0]["results"]
        line = report["stale"][0]["line"]
        assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == line
        what = report["stale"][0]["what"]
        print(f"drift after the change: exit {code}; stale: {UNTRUE[0]}:{line} ({what})")
        after = batch(root, "--stale-only")
        expected = {"0001-signing": "skipped", "0002-timestamps": "new", "0003-url-safe": "skipped"}
        assert after == expected, after
        print("batch final --stale-only:", after)
        code, report = drift(root)
        assert code == 0, report["stale"]

        encoding = root / "src" / "itsdangerous" / "encoding.py"
        encoding.write_text(encoding.read_text() + "\n\ndef unused_helper() -> int:\n    return 0\n")
        quiet = batch(root, "--stale-only")
        assert set(quiet.values()) == {"skipped"}, quiet
        print("an unrelated change, --stale-only:", quiet)
        print("the same change, the default (whole code):", batch(root))


if __name__ == "__main__":
    main()
