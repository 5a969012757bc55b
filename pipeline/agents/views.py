"""What a bounded cold read may see: the sections in its scope, every heading (the structure
roadmap) and the title; the rest of the design reads as blank lines."""

from __future__ import annotations

from pathlib import Path

from pipeline.agents.spawn import Spawn
from pipeline.formats.design_doc import load_design

NONE = "(none)"


def _resolve(repo_root: Path, raw: str) -> Path:
    path = Path(raw)
    return (path if path.is_absolute() else repo_root / path).resolve()


def bounded_view(repo_root: Path, spawn: Spawn) -> dict[Path, frozenset[int] | None] | None:
    """The comprehension gate's view under ``scope: bounded``; None when the params name no scope."""
    params = spawn.params
    if not params.design_path or not params.bounded_scope:
        return None
    target = _resolve(repo_root, params.design_path)
    views: dict[Path, frozenset[int] | None] = {spawn.params_path.resolve(): None}
    if target.is_file():
        doc = load_design(target)
        first = min((h.line for h in doc.structure.headings if h.level == 2), default=len(doc.lines) + 1)
        lines = set(range(1, first))
        lines.update(h.line for h in doc.structure.headings if h.level <= 2)
        wanted = set(params.bounded_scope)
        for section in doc.sections:
            if section.name in wanted and section.level == 2:
                lines.update(range(section.start, section.end + 1))
        views[target] = frozenset(lines)
    for raw in (params.design_mechanics_path, params.plan_path):
        if raw and raw != NONE:
            views[_resolve(repo_root, raw)] = None
    if params.plan_dir and params.plan_dir != NONE and _resolve(repo_root, params.plan_dir).is_dir():
        for track in _resolve(repo_root, params.plan_dir).glob("track-*.md"):
            views[track.resolve()] = None
    return views
