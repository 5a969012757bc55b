"""What a run can read of the repository: the one walk the tools (Grep, Glob), the code index
(PSI) and the batch's input fingerprint (runs.fingerprint) share.

A walk yields the regular files under a directory (a symlink to one counts; sockets, FIFOs,
devices and dangling links are never yielded, so nothing ever opens them), hidden files
included, and skips the directories of ``SKIP_DIRS`` (version control, virtual environments,
caches, build output) and whatever the caller keeps private. The code index also skips hidden
directories; the tools do not. A file that resolves outside the repository (a link out) is
never yielded: the walk is confined by the one guard (pipeline.confinement). The fingerprint
digests the walk of whoever reads the code: the code index's when every role runs on the
offline engine, the tools' when a model runs.

Every runs directory designloop has used inside the repository is private to every role, not
only the current one: a directory holding a checkpoint store, a request cache, the byproducts
record or a run's directory is one (``store_marked``; ``store_dirs`` finds them all).

designloop's own output files written into the repository (a batch's ``--sarif`` file, the
``report.html`` and ``report.md`` that ``report --out`` wrote) are recorded in the runs
directory (``byproducts.json``; deleting it forgets them): no role reads them
(they quote other roles' findings), and the fingerprint leaves them out (a batch's report is
never an input of the next batch).
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from pipeline import confinement
from pipeline.bounded import load_json
from pipeline.errors import InputError
from pipeline.formats.textio import atomic_write
from pipeline.settings import CACHE_DB, CACHE_DIR, CHECKPOINTS

SKIP_DIRS = frozenset(
    {
        ".git",
        ".venv",
        "venv",
        "node_modules",
        "__pycache__",
        "runs",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".hypothesis",
        "build",
        "dist",
        "target",
    }
)
BYPRODUCTS = "byproducts.json"
MAX_BYPRODUCTS = 1 << 20


RUN_NAME = re.compile(r"\.?\d{8}-\d{6}-[a-z0-9-]+-[0-9a-f]{6}(?:\.partial)?")
"""A run directory's name (a run's id), or a run still being started (``.<id>.partial``)."""
STORE_FILES = frozenset({CHECKPOINTS, f"{CHECKPOINTS}-wal", f"{CHECKPOINTS}-shm", "byproducts.json"})
UNSEARCHED = frozenset({".git", ".venv", "venv", "node_modules", "__pycache__"})
"""Directories ``store_dirs`` does not look into (a marked one in there is still private by
``store_marked`` when a path under it is asked for)."""


def marker_entries(directory: Path) -> list[Path]:
    """The entries of ``directory`` that mark it as a runs directory (none: it is not one)."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    found = [directory / n for n in names if n in STORE_FILES or RUN_NAME.fullmatch(n)]
    if CACHE_DIR in names and os.path.isfile(directory / CACHE_DIR / CACHE_DB):
        found.append(directory / CACHE_DIR)
    if "run.json" in names and "events.jsonl" in names:  # a run's own directory, copied alone
        found.append(directory)
    return found


def store_marked(directory: Path) -> bool:
    """Whether ``directory`` holds designloop's run store or request cache, or is a run's directory."""
    return bool(marker_entries(directory))


def store_dirs(root: Path) -> tuple[Path, ...]:
    """Every runs directory under ``root`` (at the root itself: its marked entries only)."""
    found: list[Path] = [p for p in marker_entries(root) if p != root]
    for dirpath, dirnames, _ in os.walk(root):
        here = Path(dirpath)
        if here != root and store_marked(here):
            found.append(here)
            dirnames[:] = []
            continue
        dirnames[:] = sorted(d for d in dirnames if d not in UNSEARCHED and here / d not in found)
    return tuple(found)


def nothing(path: Path) -> bool:
    """No path is private."""
    return False


def regular(path: Path) -> bool:
    """Whether ``path`` is (or links to) a regular file: never a socket, FIFO or device."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def walk(
    base: Path,
    private: Callable[[Path], bool] = nothing,
    hidden_dirs: bool = True,
    root: Path | None = None,
) -> Iterator[Path]:
    """The regular files under ``base`` in a stable order, but for ``SKIP_DIRS``, the paths
    ``private`` covers (it is handed each directory and file as found), unless
    ``hidden_dirs`` the directories whose name starts with a dot, and every file that resolves
    outside ``root`` (by default the repository ``base`` lies in, else ``base``): a link out of
    the repository is never listed, so nothing quotes what it names (pipeline.confinement).
    A directory link is never followed."""
    top = (root or confinement.repository_of(base) or base).resolve()
    for dirpath, dirnames, filenames in os.walk(base):
        here = Path(dirpath)
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in SKIP_DIRS and (hidden_dirs or not d.startswith(".")) and not private(here / d)
        )
        for name in sorted(filenames):
            path = here / name
            if regular(path) and confinement.inside(path, top) and not private(path):
                yield path


def byproducts(runs_dir: Path, repo_root: Path) -> tuple[Path, ...]:
    """designloop's outputs recorded as written into ``repo_root`` (absolute, resolved)."""
    try:
        raw = confinement.read_bytes(runs_dir / BYPRODUCTS, runs_dir, limit=MAX_BYPRODUCTS)
        data = load_json(raw, file=runs_dir / BYPRODUCTS, what="byproducts record", hint="")
    except (OSError, InputError):
        return ()
    paths = data.get("paths") if isinstance(data, dict) else None
    if not isinstance(paths, list):
        return ()
    return tuple((repo_root / p).resolve() for p in paths if isinstance(p, str) and p)


def record_byproducts(runs_dir: Path, repo_root: Path, files: Iterable[Path]) -> None:
    """Remember the files designloop itself just wrote into the repository (never a directory
    the user named: only what designloop wrote is its own)."""
    root = repo_root.resolve()
    written = {
        real.relative_to(root).as_posix()
        for real in (f.resolve() for f in files)
        if real.is_relative_to(root) and real != root and real.is_file()
    }
    earlier = {p.relative_to(root).as_posix() for p in byproducts(runs_dir, root) if p.is_relative_to(root)}
    if written <= earlier:
        return
    atomic_write(runs_dir / BYPRODUCTS, json.dumps({"paths": sorted(earlier | written)}, indent=2) + "\n")
