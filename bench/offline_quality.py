"""The offline engine's quality and speed: planted-defect recall, false positives, time per role.

    python bench/offline_quality.py

Recall and false positives come from tests/corpus (defects.toml and the clean bases); the
times are one run of each role on the bundled example, through the full runtime.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from quality import build_base, evaluate, table  # noqa: E402

from pipeline.agents.review import review_once  # noqa: E402
from pipeline.agents.roles import load_roles  # noqa: E402
from pipeline.agents.runtime import Runtime  # noqa: E402
from pipeline.settings import Limits  # noqa: E402

CORPUS = ROOT / "tests" / "corpus"
ROLES = [
    ("design-author", None),
    ("readability-auditor", None),
    ("absorption-check", None),
    ("comprehension-review", None),
    ("adversarial-review", None),
    ("fidelity-check", "design-final.md"),
]


def time_roles(repeats: int = 5) -> list[tuple[str, float]]:
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for role, draft in ROLES:
            samples = []
            for i in range(repeats):
                d = build_base("example", CORPUS, Path(tmp) / f"{role}-{i}")
                runtime = Runtime(repo_root=d.repo_root, roles=load_roles(d.repo_root), model_specs={})
                path = d.root / draft if draft else (d.root / "draft.md" if role == "design-author" else None)
                start = time.perf_counter()
                asyncio.run(review_once(runtime, role, d, Limits(), draft=path))
                samples.append(time.perf_counter() - start)
            out.append((role, statistics.median(samples)))
    return out


def main() -> None:
    start = time.perf_counter()
    scores = evaluate(CORPUS)
    print(table(scores))
    print(f"\n(corpus evaluated in {time.perf_counter() - start:.1f} s)\n")
    print("| role | median seconds per run on the example |\n| --- | --- |")
    for role, seconds in time_roles():
        print(f"| {role} | {seconds:.3f} |")


if __name__ == "__main__":
    main()
