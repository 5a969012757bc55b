"""bench/model_eval.py scores what a role reported against what was planted: a finding counts
when it names a planted defect's rule on its lines, background findings are set aside, and a
quote that is not on its cited line is not located."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("model_eval", ROOT / "bench" / "model_eval.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["model_eval"] = module
    spec.loader.exec_module(module)
    return module


CLEAN = (
    "# T\n\n## Overview\n\nA service.\n\n## Buckets per tenant and route\n\n**TL;DR:** Buckets.\n\n"
    "Body.\n\n## Bucket state in Redis\n\n**TL;DR:** Redis.\n\nMore.\n\n## When Redis is unreachable\n\n"
    "**TL;DR:** Outage.\n\nText.\n\n## Conventions\n\n**TL;DR:** Names.\n\nText.\n"
)


def test_planting_keeps_each_tldr_first_and_scoring_counts_only_named_defects() -> None:
    bench = _bench()
    auditor = next(p for p in bench.plants() if p.role == "readability-auditor")
    planted = bench.plant(CLEAN, auditor)
    lines = planted.split("\n")
    for heading in ("## Buckets per tenant and route", "## Conventions"):
        assert lines[lines.index(heading) + 2].startswith("**TL;DR:**")
    long_line = next(i for i, line in enumerate(lines, 1) if line.startswith(bench.LONG[:30]))
    hedge_line = next(i for i, line in enumerate(lines, 1) if "might perhaps" in line)
    found = [
        {"rule": "hs-sentence-length", "line": long_line, "quote": bench.LONG[:40]},
        {"rule": "hs-hedge", "line": hedge_line, "quote": "not on this line"},
        {"rule": "hs-filler", "line": 1, "quote": "# T"},  # reported on the clean text too
        {"rule": "hs-puffery", "line": 3, "quote": "## Overview"},  # names no planted defect
    ]
    scores = bench.score(auditor, planted, found, [{"rule": "hs-filler", "quote": "# T"}])
    assert scores["reported"] == 3
    assert scores["precision"] == 2 / 3 and scores["recall"] == 2 / 4
    assert scores["located"] == 2 / 3
    assert scores["missed"] == ["wall of text", "AI-tell words"]
