"""Measuring the offline engine: planted-defect recall and false positives on clean documents.

A corpus directory holds ``defects.toml`` (planted defects) and the clean bases they
mutate. Every case runs through the real runtime, so the measurement covers the spawn
contract, the confined tools and the typed outputs as well as the rules.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import tomllib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.agents.review import review_once
from pipeline.agents.roles import load_roles
from pipeline.agents.runtime import Runtime
from pipeline.formats.design_dir import DesignDir, open_design_dir
from pipeline.formats.findings import SEVERITY_ORDER
from pipeline.settings import Limits, data_dir

FILES = {"design": "_workflow/design.md", "log": "_workflow/research-log.md", "final": "design-final.md"}
CLEAN_RUNS: dict[str, list[tuple[str, str | None]]] = {
    # base -> (role, draft file or None for the role's default)
    "example": [
        ("readability-auditor", "design"),
        ("readability-auditor", "final"),
        ("comprehension-review", "design"),
        ("comprehension-review", "final"),
        ("absorption-check", "design"),
        ("fidelity-check", "final"),
        ("adversarial-review", None),
    ],
    "queue": [
        ("readability-auditor", "design"),
        ("comprehension-review", "design"),
        ("absorption-check", "design"),
        ("adversarial-review", None),
    ],
    "cache": [
        ("readability-auditor", "design"),
        ("comprehension-review", "design"),
        ("absorption-check", "design"),
        ("adversarial-review", None),
    ],
}


@dataclass(frozen=True, slots=True)
class Case:
    id: str
    role: str
    base: str
    file: str
    expect: str
    edits: tuple[tuple[str, str], ...]
    severity: str = "should-fix"


@dataclass(slots=True)
class RoleScore:
    planted: int = 0
    found: int = 0
    clean_runs: int = 0
    false_positives: int = 0
    misses: list[str] = field(default_factory=list)
    noise: list[str] = field(default_factory=list)

    @property
    def recall(self) -> float:
        return self.found / self.planted if self.planted else 1.0


def load_cases(corpus: Path) -> list[Case]:
    data = tomllib.loads((corpus / "defects.toml").read_text(encoding="utf-8"))
    return [
        Case(
            c["id"],
            c["role"],
            c["base"],
            c["file"],
            c["expect"],
            tuple((a, b) for a, b in c["edits"]),
            c.get("severity", "should-fix"),
        )
        for c in data["defect"]
    ]


def _examples_root() -> Path:
    return data_dir("params").parent / "examples"


def build_base(base: str, corpus: Path, into: Path) -> DesignDir:
    """A throwaway repository with one clean design directory (and, for the example, its code)."""
    repo = into / "repo"
    (repo / ".git").mkdir(parents=True)
    target = repo / "docs" / "adr" / base
    (target / "_workflow").mkdir(parents=True)
    if base == "example":
        example = _examples_root() / "docs" / "adr" / "0001-request-rate-limiter" / "_workflow"
        shutil.copytree(
            example,
            target / "_workflow",
            dirs_exist_ok=True,
            ignore=shutil.ignore_patterns("reviews", "design-mutations.md"),
        )
        shutil.copytree(_examples_root() / "ratelimit", repo / "code")
        shutil.copy(corpus / "base" / "design.md", target / "_workflow" / "design.md")
        shutil.copy(corpus / "base" / "design-final.md", target / "design-final.md")
        (target / "designloop.toml").write_text('code_root = "../../../code"\n')
    else:
        for name, rel in FILES.items():
            source = corpus / base / Path(rel).name
            if source.exists() and name != "final":
                shutil.copy(source, target / rel)
    return open_design_dir(target)


def apply_edits(path: Path, edits: tuple[tuple[str, str], ...], case_id: str) -> None:
    text = path.read_text(encoding="utf-8")
    for find, replace in edits:
        count = text.count(find)
        if count != 1:
            raise ValueError(f"{case_id}: edit text occurs {count} times in {path.name}: {find[:60]!r}")
        text = text.replace(find, replace)
    path.write_text(text, encoding="utf-8")


async def _findings(d: DesignDir, role: str, draft: str | None) -> tuple[list[Any], str]:
    runtime = Runtime(repo_root=d.repo_root, roles=load_roles(d.repo_root), model_specs={})
    path = d.root / FILES[draft] if draft else None
    run = await review_once(runtime, role, d, Limits(), draft=path)
    status = ",".join(r.status for r in run.results)
    return [f for r in run.results if r.review for f in r.review.findings], status


def evaluate(corpus: Path) -> dict[str, RoleScore]:
    scores: dict[str, RoleScore] = defaultdict(RoleScore)
    with tempfile.TemporaryDirectory() as tmp:
        for index, case in enumerate(load_cases(corpus)):
            d = build_base(case.base, corpus, Path(tmp) / f"case{index}")
            apply_edits(d.root / FILES[case.file], case.edits, case.id)
            draft = case.file if case.file in ("design", "final") else None
            findings, status = asyncio.run(_findings(d, case.role, draft))
            score = scores[case.role]
            score.planted += 1
            rank = SEVERITY_ORDER[case.severity]
            hit = any(f.rule == case.expect and SEVERITY_ORDER[f.severity] <= rank for f in findings)
            if hit and status == "ok":
                score.found += 1
            else:
                score.misses.append(f"{case.id} ({status}): got {sorted({f.rule for f in findings})}")
        for base, runs in CLEAN_RUNS.items():
            for role, draft in runs:
                d = build_base(base, corpus, Path(tmp) / f"clean-{base}-{role}-{draft}")
                findings, status = asyncio.run(_findings(d, role, draft))
                score = scores[role]
                score.clean_runs += 1
                blocking = [f for f in findings if f.severity in ("blocker", "should-fix")]
                score.false_positives += len(blocking) + (status != "ok")
                score.noise += [f"{base}/{draft}: {f.rule} {f.quote!r}" for f in blocking]
    return dict(scores)


def table(scores: dict[str, RoleScore]) -> str:
    rows = [
        "| role | planted | found | recall | clean runs | false positives |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    total = RoleScore()
    for role in sorted(scores):
        s = scores[role]
        rows.append(
            f"| {role} | {s.planted} | {s.found} | {s.recall:.2f} | {s.clean_runs} | {s.false_positives} |"
        )
        total.planted += s.planted
        total.found += s.found
        total.clean_runs += s.clean_runs
        total.false_positives += s.false_positives
    rows.append(
        f"| all | {total.planted} | {total.found} | {total.recall:.2f} | {total.clean_runs} | "
        f"{total.false_positives} |"
    )
    return "\n".join(rows)
