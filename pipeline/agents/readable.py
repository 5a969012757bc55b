"""What a run can read of the repository: the one walk the tools (Grep, Glob), the code index
(PSI) and the batch's input fingerprint (runs.fingerprint) share.

A walk yields the regular files under a directory (a symlink to one counts; sockets, FIFOs,
devices and dangling links are never yielded, so nothing ever opens them), hidden files
included, and skips the directories of ``SKIP_DIRS`` (version control, virtual environments,
caches, build output) and whatever the caller keeps private. The code index also skips hidden
directories; the tools do not, so the tools' walk is the wider one, and the one the fingerprint
digests.

designloop's own outputs written into the repository (a batch's ``--sarif`` file, the
directories ``report --out`` writes to) are recorded in the runs directory: no role reads them
(they quote other roles' findings), and the fingerprint leaves them out (a batch's report is
never an input of the next batch).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from pipeline.formats.textio import atomic_write

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


def _nothing(path: Path) -> bool:
    return False


def regular(path: Path) -> bool:
    """Whether ``path`` is (or links to) a regular file: never a socket, FIFO or device."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def walk(base: Path, private: Callable[[Path], bool] = _nothing, hidden_dirs: bool = True) -> Iterator[Path]:
    """The regular files under ``base`` in a stable order, but for ``SKIP_DIRS``, the paths
    ``private`` covers (it is handed each directory and file as found) and, unless
    ``hidden_dirs``, the directories whose name starts with a dot."""
    for dirpath, dirnames, filenames in os.walk(base):
        here = Path(dirpath)
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in SKIP_DIRS and (hidden_dirs or not d.startswith(".")) and not private(here / d)
        )
        for name in sorted(filenames):
            path = here / name
            if regular(path) and not private(path):
                yield path


def byproducts(runs_dir: Path, repo_root: Path) -> tuple[Path, ...]:
    """designloop's outputs recorded as written into ``repo_root`` (absolute, resolved)."""
    try:
        data = json.loads((runs_dir / BYPRODUCTS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ()
    paths = data.get("paths") if isinstance(data, dict) else None
    if not isinstance(paths, list):
        return ()
    return tuple((repo_root / p).resolve() for p in paths if isinstance(p, str) and p)


def record_byproduct(runs_dir: Path, repo_root: Path, path: Path) -> None:
    """Remember that designloop wrote ``path`` (a file or a directory) into the repository."""
    real = path.resolve()
    root = repo_root.resolve()
    if not real.is_relative_to(root) or real == root:
        return
    rel = real.relative_to(root).as_posix()
    earlier = {p.relative_to(root).as_posix() for p in byproducts(runs_dir, root) if p.is_relative_to(root)}
    known = sorted(earlier | {rel})
    atomic_write(runs_dir / BYPRODUCTS, json.dumps({"paths": known}, indent=2) + "\n")
