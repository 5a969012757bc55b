"""Paths as the commands take them: relative to the repository root or absolute
(docs/formats.md §1), and a design directory's ``_workflow/``."""

from __future__ import annotations

from pathlib import Path


def resolve(path: Path | None) -> Path | None:
    """Paths may be relative to the repository root or absolute (docs/formats.md §1)."""
    if path is None or path.is_absolute() or path.exists():
        return path
    from pipeline.settings import repo_root

    rooted = repo_root() / path
    return rooted if rooted.exists() else path


def workflow_dir(directory: Path) -> Path:
    return directory / "_workflow" if (directory / "_workflow").is_dir() else directory
