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
