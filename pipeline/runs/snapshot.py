"""A run's before-snapshot: every file the run may write, as it was when the run started, under
``runs/<run-id>/before/`` at its path in the design directory (``before/_workflow/design.md``),
byte for byte. One format for every kind: a creation run keeps its draft and the companion it
may rewrite, an interactive edit every file it may touch. A file absent then has no copy.

The run reads its starting point from here (an edit plans from it, so a resumed apply writes
the same text), the finish diffs against it, and ``--force`` names the copies it keeps. A
creation run started before this format kept ``before.md`` and ``before-companion.md`` at the
top of its run directory; the reader finds those too, so such a run still resumes.
"""

from __future__ import annotations

from pathlib import Path

from pipeline import confinement
from pipeline.formats.design_dir import DesignDir
from pipeline.formats.edit_ops import plan_files
from pipeline.formats.edit_plan import Reader, read_live
from pipeline.formats.kinds import CREATION_KINDS, Kind
from pipeline.formats.textio import atomic_write_bytes
from pipeline.runs.fingerprint import output_files

SNAPSHOT = "before"
LEGACY = ("before.md", "before-companion.md")
"""The names an earlier format gave a creation run's draft and companion."""


def snapshot_files(design: DesignDir, kind: Kind) -> list[Path]:
    """Every file a run of ``kind`` may write: a creation kind's document and its companion, or
    an interactive edit's design.md, companion, plan and track files."""
    if kind in CREATION_KINDS:
        return output_files(design, kind)
    return [design.design, design.mechanics, *plan_files(design)]


def copy_of(design: DesignDir, run_dir: Path, path: Path) -> Path:
    return run_dir / SNAPSHOT / path.relative_to(design.root)


def take_snapshot(design: DesignDir, run_dir: Path, kind: Kind) -> dict[Path, Path]:
    """Copy every file the run may write that exists now; returns each copy by its original."""
    kept: dict[Path, Path] = {}
    for path in snapshot_files(design, kind):
        if path.is_file():
            copy = copy_of(design, run_dir, path)
            atomic_write_bytes(copy, confinement.read_bytes(path, design.repo_root))
            kept[path] = copy
    return kept


def snapshot_reader(design: DesignDir, run_dir: Path) -> Reader:
    """Reads each file as it was when the run started (absent then: None). A file outside the
    design directory is no part of the snapshot: it is read as it is now."""
    legacy = {
        path: name
        for kind in CREATION_KINDS
        for path, name in zip(output_files(design, kind), LEGACY, strict=True)
    }
    current = (run_dir / SNAPSHOT).is_dir() or not any((run_dir / name).is_file() for name in LEGACY)

    def read(path: Path) -> bytes | None:
        try:
            copy = copy_of(design, run_dir, path)
        except ValueError:
            return read_live(path)
        if not current and path in legacy:
            copy = run_dir / legacy[path]
        try:
            return copy.read_bytes()
        except FileNotFoundError:
            return None

    return read
