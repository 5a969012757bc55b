"""Helpers for edit tests: the example in a throwaway repository with a stamped design.md."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from agentkit import make_repo
from conftest import STAMP, run_cli

from pipeline.formats.design_dir import DesignDir
from pipeline.formats.review_log import parse_entries


def stamped_repo(tmp_path: Path) -> DesignDir:
    d = make_repo(tmp_path, plan_refs=True)
    d.design.write_text(STAMP + "\n" + d.design.read_text(encoding="utf-8"), encoding="utf-8")
    return d


def edit(d: DesignDir, tmp_path: Path, kind: str, *args: str) -> tuple[int, dict[str, Any], str]:
    """Run ``designloop edit`` with --json; returns (exit code, the JSON or {}, stderr)."""
    result = run_cli(
        ["edit", str(d.root), "--kind", kind, *args, "--runs-dir", str(tmp_path / "runs"), "--json"]
    )
    data = json.loads(result.out) if result.out.strip() else {}
    return result.code, data, result.err


def tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` with a digest of its bytes."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def entry_text(d: DesignDir, number: int) -> str:
    log = d.mutations.read_text(encoding="utf-8")
    start = log.index(f"## Mutation {number} —")
    rest = log[start:]
    nxt = rest.find("\n## Mutation ", 1)
    return rest if nxt < 0 else rest[:nxt]


def kinds_logged(d: DesignDir) -> list[str]:
    return [e.kind for e in parse_entries(d.mutations)]
