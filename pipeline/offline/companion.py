"""The mechanics companion in the offline engine: the length-trigger split done by the inline
editor, the companion the phase-1 author seeds at target=both, and the phase-4 pair
(design-final.md with footers naming design-mechanics-final.md, and that file)."""

from __future__ import annotations

from pathlib import Path

from pipeline.formats.contracts import AuthorOutput
from pipeline.formats.edits import join, parse
from pipeline.formats.spawn_params import SpawnParams
from pipeline.formats.split import split_design, split_section, with_footers
from pipeline.formats.sync_delta import mechanics_sections, without_stamp
from pipeline.offline.edit_io import read, write_edits
from pipeline.offline.observe import Observations, required
from pipeline.offline.pages import failed

DOC = Path("design.md")
MECHANICS = "design-mechanics.md"
FINAL_MECHANICS = "design-mechanics-final.md"


def split_run(params: SpawnParams, obs: Observations) -> AuthorOutput:
    """length-trigger-crossing: move the long-form content into the (stamped, empty) companion."""
    output, companion = (
        required(params.output_path, "output_path"),
        required(params.design_mechanics_path, "design_mechanics_path"),
    )
    design, mechanics = read(obs, output), read(obs, companion)
    split = split_design(design, DOC, Path(companion).name)
    first = mechanics.split("\n", 1)[0]
    wrote = write_edits(obs, companion, mechanics, first + "\n" + split.mechanics)
    write_edits(obs, output, design, split.design)
    moved = f"moved {split.moved} line(s) of long-form content" if wrote else "moved nothing"
    return AuthorOutput(
        summary=f"Split {len(split.sections)} section(s): {moved} into {Path(companion).name}.",
        output_path=output,
    )


def _write(obs: Observations, path: str, text: str) -> None:
    result = obs.call("write", path=path, content=text)
    if failed(result):
        raise RuntimeError(result)


def seed(design: str, existing: str | None) -> tuple[str, str]:
    """phase1-creation at target=both: design.md keeps what the split keeps; a companion that
    already exists keeps its sections and gains one for each design section it lacks."""
    split = split_design(design, DOC, MECHANICS)
    if existing is None:
        return split.design, split.mechanics
    have = mechanics_sections(existing, DOC)
    added = [s for s in split.sections if s.name not in have]
    lines = existing.rstrip("\n").split("\n")
    for part in added:
        lines += ["", f"## {part.name}", "", *part.mechanics]
    return split.design, join(lines)


def final_pair(design_final: str, frozen_mechanics: str) -> tuple[str, str]:
    """phase4-creation with a companion: footers name design-mechanics-final.md, and every body
    section of design-final.md has its section there (from the frozen companion, else from the
    final section's own long-form text). Neither file is stamped."""
    design = with_footers(design_final, DOC, FINAL_MECHANICS)
    mechanics = without_stamp(frozen_mechanics).strip("\n").split("\n")
    have = mechanics_sections(frozen_mechanics, DOC)
    doc = parse(design, DOC)
    for section in doc.body_sections():
        if section.name in have:
            continue
        body = split_section(doc, section).mechanics
        mechanics += ["", f"## {section.name}", "", *(body or [f'See design-final.md §"{section.name}".'])]
    return design, join(mechanics)


def author_companion(params: SpawnParams, obs: Observations, text: str) -> str:
    """The author's companion at target=both: writes it and returns design.md's text."""
    companion = params.design_mechanics_path
    if params.target != "both" or not companion:
        return text
    if params.kind == "phase4-creation":
        frozen = str(Path(required(params.design_path, "design_path")).parent / MECHANICS)
        design, mechanics = final_pair(text, read(obs, frozen))
    else:
        current = obs.call("read", path=companion)
        if not failed(current):
            current = read(obs, companion)
        existing = None if failed(current) else without_stamp(current)
        design, mechanics = seed(text, existing)
        if not failed(current) and current.startswith("<!-- workflow-sha:"):
            mechanics = current.split("\n", 1)[0] + "\n" + mechanics
    _write(obs, companion, mechanics)
    return design
