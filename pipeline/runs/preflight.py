"""Everything a run will touch, checked before it writes anything (the bad-input contract).

A run that would fail on a directory it cannot write, a file it cannot read, a review log it
cannot append to or a damaged store is refused here, with exit 2, and leaves every file as
it was: nothing is created, nothing is changed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pipeline.errors import InputError
from pipeline.formats.database import check_database
from pipeline.formats.design_dir import DesignDir
from pipeline.formats.kinds import PHASE1, PHASE4, Kind
from pipeline.formats.plan import check_episodes, load_plan_file, load_tracks
from pipeline.formats.research_log import ResearchLog, load_research_log
from pipeline.formats.review_log import parse_entries
from pipeline.formats.space import (
    DESIGN_FLOOR,
    DESIGN_PER_INPUT_BYTE,
    PER_INPUT_BYTE,
    RUN_FLOOR,
    bytes_read,
    check_space,
)
from pipeline.formats.sync_delta import baseline_path
from pipeline.formats.textio import check_write_target, read_text
from pipeline.settings import CACHE_DB, CACHE_DIR, CHECKPOINTS, REVISIONS


def writable_dir(path: Path, what: str, hint: str) -> None:
    """``path`` is a writable directory, or one that can be created in a writable directory."""
    probe = path
    while not probe.exists() and probe.parent != probe:
        if probe.is_symlink():
            raise InputError(f"{what} is a broken link", file=probe, hint=hint)
        probe = probe.parent
    if not probe.is_dir():
        shown = "names a file" if probe == path else f"lies under a file ({probe})"
        raise InputError(f"{what} {shown}, not a directory", file=path, hint=hint)
    if not os.access(probe, os.W_OK | os.X_OK):
        raise InputError(f"{what} is not writable", file=probe, hint=hint)


def writable_file(path: Path, what: str, hint: str) -> None:
    """``path`` can be written as a whole file: not a directory, in an existing writable
    directory (none is created for it), and writable when it exists."""
    if path.is_dir():
        raise InputError(f"{what} names a directory, not a file", file=path, hint=hint)
    parent = path.parent
    if not parent.is_dir():
        raise InputError(f"{what} is in a directory that does not exist ({parent})", file=path, hint=hint)
    if not os.access(parent, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise InputError(f"{what} is not writable", file=path, hint=hint)


def check_runs_dir(runs_dir: Path) -> None:
    """The runs directory can hold a new run, and its checkpoint store and cache are whole."""
    hint = "pass --runs-dir DIR naming a writable directory (it is created when missing)"
    writable_dir(runs_dir, "the runs directory", hint)
    check_database(runs_dir / CHECKPOINTS, "checkpoint store")
    cache = runs_dir / CACHE_DIR
    if cache.exists() and not cache.is_dir():
        raise InputError(
            "the model-call cache is not a directory", file=cache, hint="move the file aside and run again"
        )
    check_database(cache / CACHE_DB, "model-call cache")
    check_database(runs_dir / REVISIONS, "revision store")


def check_reviews(design: DesignDir) -> None:
    """``_workflow/reviews`` (one params file per spawn) is a writable directory or can be made."""
    writable_dir(
        design.reviews,
        "_workflow/reviews",
        "designloop writes one params file per spawn there; move a file of that name aside "
        "and make _workflow/ writable",
    )


def _text(path: Path, what: str) -> None:
    if path.exists():
        read_text(path, what=what)


REVIEW: Literal["review"] = "review"
"""What the one-off ``review`` command reads and writes (no run kind of its own)."""
CheckedAs = Kind | Literal["review"]
"""The kind ``designloop review`` checks its links as: it writes params files and, for the
adversarial review, the research log."""


def outputs(design: DesignDir, kind: CheckedAs) -> list[Path]:
    """The files a run of ``kind`` may write in the design directory."""
    if kind == PHASE1:
        return [design.design, design.mechanics, design.mutations, design.research_log]
    if kind == PHASE4:
        return [design.final, design.final_mechanics, design.mutations]
    if kind == REVIEW:  # the adversarial review appends its gate entry to the log
        return [design.research_log]
    plans = [design.plan] + (sorted(design.plan_dir.glob("*.md")) if design.plan_dir.is_dir() else [])
    return [design.design, design.mechanics, design.mutations, baseline_path(design.workflow), *plans]


def _inside(path: Path, design: DesignDir, what: str) -> None:
    if path.exists() and not path.resolve().is_relative_to(design.repo_root):
        raise InputError(
            f"{what} leads outside the repository (to {path.resolve()}) through a symbolic link",
            file=path,
            hint="replace the link by the file or directory itself, inside the repository",
        )


def check_links(design: DesignDir, kind: CheckedAs) -> None:
    """No read and no write of a run goes through a link out of the repository, and no file a run
    may write is a link at all (formats.textio.check_write_target; docs/formats.md, "Links")."""
    for directory in (design.workflow, design.reviews, design.plan_dir):
        _inside(directory, design, "the directory")
    reads = [design.research_log, design.design, design.mechanics, design.final, design.plan]
    reads += sorted(design.plan_dir.glob("*.md")) if design.plan_dir.is_dir() else []
    for path in reads:
        _inside(path, design, "the file")
    for path in outputs(design, kind):
        check_write_target(path, design.repo_root)
    if design.reviews.is_dir():
        for path in sorted(design.reviews.rglob("*")):
            check_write_target(path, design.repo_root)


def require_decisions(log: ResearchLog) -> None:
    """Phase 1 writes the design from the log's decisions: an empty log, one of headings only, or
    one that records no decision is refused before any author round is spent on it."""
    hint = (
        "write the log's ## Decision Log (### D1: ... with **Decision:** and **Alternatives "
        "rejected:**, docs/formats.md §3), have it reviewed, then run again"
    )
    body = [line for line in log.file.lines if line.strip() and not line.lstrip().startswith("#")]
    if not log.file.text.strip():
        raise InputError("the research log is empty", file=log.path, hint=hint)
    if not body:
        raise InputError("the research log holds headings only", file=log.path, hint=hint)
    if not log.decisions:
        raise InputError(
            "the research log records no decision under ## Decision Log", file=log.path, hint=hint
        )


def check_inputs(design: DesignDir, kind: CheckedAs) -> None:
    """Every file a run of ``kind`` reads, read and parsed as the run will (UTF-8, no NUL byte,
    the formats of docs/formats.md): the log, the designs, the plan, every track file and the
    review log. ``estimate`` runs exactly this."""
    if kind == PHASE1:
        require_decisions(load_research_log(design.research_log))
    elif kind == PHASE4:
        if not design.design.is_file():
            raise InputError(
                "phase4-creation needs the frozen phase-1 design",
                file=design.design,
                hint="run designloop create first, or restore _workflow/design.md",
            )
        if not read_text(design.design, what="design").text.strip():
            raise InputError(
                "the frozen phase-1 design is empty",
                file=design.design,
                hint="run designloop create first, or restore _workflow/design.md from version control",
            )
    for path, what in (
        (design.design, "design"),
        (design.mechanics, "design mechanics"),
        (design.final, "final design"),
        (design.final_mechanics, "final design mechanics"),
    ):
        _text(path, what)
    if design.plan.exists():
        load_plan_file(design.plan)
    if design.plan_dir.is_dir():
        for track in load_tracks(design.plan_dir):
            if kind == PHASE4:  # phase 4 grounds on the episodes: unreadable ones are named now
                check_episodes(track)
    parse_entries(design.mutations)  # a malformed review log is found now, not after the run


def check_design_dir(design: DesignDir, kind: CheckedAs) -> None:
    """What a run reads and writes in the design directory, checked up front."""
    check_links(design, kind)
    writable_dir(design.workflow, "_workflow/", "make the design directory's _workflow/ writable")
    check_reviews(design)
    if kind == PHASE4:
        writable_dir(design.root, "the design directory", "make the design directory writable")
    check_inputs(design, kind)


def check_run_space(design: DesignDir, runs_dir: Path) -> None:
    """The file systems a run writes have room for a run of its size (formats.space): a full
    disk is refused now, not after a half-run."""
    read = bytes_read([design.research_log, design.design, design.mechanics, design.final, design.plan_dir])
    check_space(
        [
            (runs_dir, RUN_FLOOR + PER_INPUT_BYTE * read),
            (design.workflow, DESIGN_FLOOR + DESIGN_PER_INPUT_BYTE * read),
        ]
    )
