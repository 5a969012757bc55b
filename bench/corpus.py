"""Generated benchmark inputs: a design with a companion and a plan of track files."""

from __future__ import annotations

from pathlib import Path

STAMP = "<!-- workflow-sha: " + "0" * 40 + " -->"


def make_design_dir(root: Path, design_lines: int = 2000, tracks: int = 10) -> Path:
    """Write a design directory whose design.md has about ``design_lines`` lines."""
    wf = root / "_workflow"
    (wf / "plan").mkdir(parents=True, exist_ok=True)
    sections = max(1, (design_lines - 10) // 40)
    design = [STAMP, "# Generated design", "", "## Overview", "", "A generated design for timing.", ""]
    mech = [STAMP, "# Generated design: mechanics", ""]
    names = [f"Component {i}" for i in range(sections)]
    for name in names:
        design += [f"## {name}", "", f"**TL;DR:** {name} keeps its state in one place.", ""]
        for j in range(30):
            design.append(f"Sentence {j} of {name} explains one step of the mechanism in plain words.")
        design += ["", "```python", f"def step_{j}(): return {j}", "```", ""]
        design += [f'**Mechanics:** design-mechanics.md §"{name}"', ""]
        mech += [f"## {name}", "", *[f"Mechanism detail {k} for {name}." for k in range(20)], ""]
    (wf / "design.md").write_text("\n".join(design) + "\n")
    (wf / "design-mechanics.md").write_text("\n".join(mech) + "\n")
    plan = ["# Plan", "", "## Checklist", ""]
    plan += [f'- [ ] {n}\n  **Full design:** design.md §"{n}"' for n in names[:20]]
    (wf / "implementation-plan.md").write_text("\n".join(plan) + "\n")
    for t in range(1, tracks + 1):
        track = [f"# Track {t}", "", "## Decision Log", ""]
        for k in range(10):
            track += [
                f"### Choice {k}",
                "Text.",
                f'**Full design:** design.md §"{names[(t * k) % len(names)]}"',
                "",
            ]
        track += ["## Episodes", "", *[f"### Episode {k}\nLanded step {k}.\n" for k in range(10)]]
        (wf / "plan" / f"track-{t}.md").write_text("\n".join(track) + "\n")
    return root


WORDS = "queue store cache shard lease token window retry budget index ledger batch".split()  # noqa: SIM905


def decision_lines(i: int, rationale: str = "so the {a} pays for itself") -> list[str]:
    a, b = WORDS[i % len(WORDS)], WORDS[(i * 7) % len(WORDS)]
    return [
        f"### D{i}: Keep the {a} of part {i} beside its {b}",
        f"**Decision:** Part {i} keeps its {a} next to the {b} it serves.",
        f"**Alternatives rejected:** A shared {a} for every part (contention grows with load); "
        f"no {a} at all (each request pays full cost).",
        f"**Rationale:** Part {i} is read far more often than it is written, {rationale.format(a=a)}.",
        "",
    ]


def make_log_repo(root: Path, decisions: int, changed: int | None = None) -> Path:
    """A repository holding one design directory, docs/d, whose research log has ``decisions``
    load-bearing decisions and a resolved gate record; ``changed`` rewords one rationale
    (same lines). The offline author writes about 14 design lines per decision."""
    wf = root / "docs" / "d" / "_workflow"
    wf.mkdir(parents=True, exist_ok=True)
    (root / ".git").mkdir(exist_ok=True)
    out = ["# Research log: generated service", "", "## Problem", "", "The service needs a design.", ""]
    out += ["## Findings", "", "- Reads outnumber writes ten to one.", "", "## Decision Log", ""]
    for i in range(1, decisions + 1):
        out += decision_lines(
            i, "and the {a} earns its keep" if i == changed else "so the {a} pays for itself"
        )
    out += ["## Adversarial gate record", "", "### 2026-11-20 — PASS", ""]
    (wf / "research-log.md").write_text("\n".join(out) + "\n")
    return root / "docs" / "d"
