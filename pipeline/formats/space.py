"""A full disk is bad input: named, with the path and the space needed where known, exit 2.

Before a run writes anything, the pre-flight compares the free space of every file system it
will write with what a run of its size needs (:func:`check_space`); a disk that fills while a
run goes on is recognised in whatever form the failure takes (an ``OSError`` with ``ENOSPC``
or ``EDQUOT``, SQLite's "database or disk is full", or its "disk I/O error" on a file system
with almost nothing left) by :func:`space_error`, which the write sites and the command line
turn into :class:`OutOfSpace`.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from pipeline.errors import InputError

FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
NEARLY_FULL = 1 << 20
"""Below this many free bytes, SQLite's "disk I/O error" is taken for a full disk."""
RUN_FLOOR = 1 << 20
"""What any run needs at least in its runs directory (its record, checkpoints, the cache) ..."""
PER_INPUT_BYTE = 30
"""... and this many bytes per byte of what it reads (each round's checkpoint holds the state)."""
DESIGN_FLOOR = 1 << 18
"""What a run needs at least in the design directory (the design, params files, the review log) ..."""
DESIGN_PER_INPUT_BYTE = 4
"""... and this many bytes per byte it reads."""


class OutOfSpace(InputError):
    """No space left where designloop writes; nothing was lost, and nothing half-written is left."""

    def then(self, step: str) -> OutOfSpace:
        """The same error, its hint ending with ``step`` (what to do once there is room)."""
        head = (self.hint or "free space on the device").rsplit(", then ", 1)[0]
        self.hint = f"{head}, then {step}"
        return self


def free_bytes(path: Path) -> int | None:
    """The bytes an unprivileged writer may still use on ``path``'s file system (its nearest
    existing ancestor's), or None when it cannot be told."""
    probe = path
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    try:
        stat = os.statvfs(probe)
    except OSError:
        return None
    return stat.f_bavail * stat.f_frsize


def _size(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} bytes"


def out_of_space(path: Path, needed: int | None = None, resume: str | None = None) -> OutOfSpace:
    free = free_bytes(path)
    known = []
    if needed is not None:
        known.append(f"{_size(needed)} needed")
    if free is not None:
        known.append(f"{_size(free)} free")
    then = f"then {resume}" if resume else "then run again"
    return OutOfSpace(
        "no space left on the device" + (f" ({', '.join(known)})" if known else ""),
        file=path,
        hint=f"free space on the file system that holds {path} (df -h {path.parent}), {then}",
    )


def _causes(exc: BaseException) -> Iterable[BaseException]:
    seen: set[int] = set()
    todo = [exc]
    while todo:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        yield item
        todo += [e for e in (item.__cause__, item.__context__) if e is not None]
        todo += list(getattr(item, "exceptions", ()))


def space_error(
    exc: BaseException, where: Path | None = None, resume: str | None = None
) -> OutOfSpace | None:
    """The named error when ``exc`` (or what caused it) is a full disk, else None. ``where``: the
    place written when the failure names none (the runs directory, for SQLite's stores)."""
    for item in _causes(exc):
        if isinstance(item, OutOfSpace):
            return item
        if isinstance(item, OSError) and item.errno in FULL:
            path = Path(item.filename) if isinstance(item.filename, str) else where
            return out_of_space(path or Path.cwd(), resume=resume)
        if isinstance(item, sqlite3.OperationalError) and where is not None:
            text = str(item)
            nearly_full = (free_bytes(where) or 0) < NEARLY_FULL
            if "database or disk is full" in text or ("disk I/O error" in text and nearly_full):
                return out_of_space(where, resume=resume)
    return None


def _device(path: Path) -> int | None:
    probe = path
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    try:
        return probe.stat().st_dev
    except OSError:
        return None


def check_space(needs: Iterable[tuple[Path, int]]) -> None:
    """Each file system has what the places on it need (``needs``: a place and its bytes)."""
    totals: dict[int | None, tuple[Path, int]] = {}
    for path, needed in needs:
        device = _device(path)
        first, sum_ = totals.get(device, (path, 0))
        totals[device] = (first, sum_ + needed)
    for path, needed in totals.values():
        free = free_bytes(path)
        if free is not None and free < needed:
            raise out_of_space(path, needed)


def bytes_read(inputs: Iterable[Path]) -> int:
    """The size of what a run reads (files, and the files of directories)."""
    read = 0
    for path in inputs:
        try:
            if path.is_dir():
                read += sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
            elif path.is_file():
                read += path.stat().st_size
        except OSError:
            continue
    return read
