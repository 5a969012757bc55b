"""The mechanics companion in the creation kinds: whether a run writes one (target=both), and
stamping the one phase 1 seeds. Phase-4 copies are never stamped."""

from __future__ import annotations

from typing import Literal

from pipeline import confinement
from pipeline.errors import InputError
from pipeline.formats.design_dir import DIR_PARAMS, DesignDir
from pipeline.formats.kinds import PHASE1, CreationKind
from pipeline.formats.stamp import has_stamp, prepend_stamp, stamp_of
from pipeline.formats.sync_delta import baseline_path
from pipeline.formats.textio import atomic_write_bytes, read_text
from pipeline.graph.deps import RunDeps
from pipeline.runs.events import Stamped
from pipeline.settings import load_toml

COMPANION_KEY = "mechanics_companion"


def _requested(d: DesignDir) -> bool:
    """designloop.toml in the design directory says ``mechanics_companion = true``."""
    path = d.root / DIR_PARAMS
    if not path.is_file():
        return False
    try:
        return load_toml(path).get(COMPANION_KEY) is True
    except InputError:
        return False


def creation_target(deps: RunDeps, kind: CreationKind) -> Literal["design", "both"]:
    """Phase 1 writes both files when a companion exists, is asked for, or the research log is
    already past the length trigger; phase 4 when the frozen design has a companion."""
    d = deps.design
    if kind != PHASE1:
        return "both" if d.mechanics.is_file() else "design"
    if d.mechanics.is_file() or _requested(d):
        return "both"
    log = d.research_log
    big = log.is_file() and len(read_text(log, what="research log").lines) > deps.limits.top_level_line_cap
    return "both" if big else "design"


def stamp_companion(deps: RunDeps) -> bool:
    """Stamp the companion phase 1 wrote (idempotent), and record it as the sync baseline."""
    d = deps.design
    if not d.mechanics.is_file() or d.mechanics.stat().st_size == 0:
        return False
    before = deps.before(d.mechanics)
    kept = stamp_of(before) if before is not None else None  # an existing stamp stays
    wrote = prepend_stamp(d.mechanics, deps.workflow_sha, kept)
    deps.events.emit(Stamped(path=deps.rel(d.mechanics), wrote=wrote))
    atomic_write_bytes(baseline_path(d.workflow), confinement.read_bytes(d.mechanics))
    return has_stamp(d.mechanics)
