"""The one confinement rule: what designloop reads of a repository stays inside it.

Every file designloop reads on a command's or a role's behalf goes through this module (a
test, tests/test_confinement_guard.py, enumerates every module that opens a file and fails on
one that reads around it):

* a **recorded** path (a claims ledger's code file and code root, a path a run record keeps)
  is relative to the repository root: an absolute one, or one with a ``..`` part, is refused
  before anything is looked up (:func:`recorded`);
* **any** path, whoever named it (a user, a role, a record, a walk of the tree), that resolves
  outside the repository, through a symbolic link of the file itself or of any directory on
  its way, is refused (:func:`confined`);
* the read opens the resolved path without following a link at its last part, so a link
  swapped in between the check and the open is refused by the system, and it opens without
  blocking, so a FIFO or a device is never waited on (:func:`open_fd`, :func:`read_bytes`).

The repository of a path is the nearest directory at or above it, as given (links not
followed), that holds ``.git`` (docs/formats.md §1), unless the caller names the root. A path
in no repository at all is read as named: there is nothing to confine it to (a file a user
names on the command line outside any checkout).

A refusal is :class:`OutsideRepository`, an input error (exit 2) that names the path as given
and says where it leads, never what the file holds.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath, PureWindowsPath

from pipeline.errors import InputError

__all__ = [
    "NotRegularFile",
    "OutsideRepository",
    "TooLarge",
    "confined",
    "inside",
    "open_fd",
    "read_bytes",
    "recorded",
    "recorded_problem",
    "repository_of",
]

OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class OutsideRepository(InputError):
    """A path that is absolute where a relative one is recorded, climbs out with ``..``, or
    resolves (through any link) outside the repository; nothing was read."""


class NotRegularFile(OSError):
    """The path is a FIFO, a socket or a device: it could block or never end."""


class TooLarge(OSError):
    """The file is larger than the caller reads."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"{size} bytes, more than {limit}")
        self.size = size
        self.limit = limit


def repository_of(path: Path) -> Path | None:
    """The nearest directory at or above ``path`` (as given, links not followed) holding ``.git``."""
    here = Path(os.path.abspath(path))
    for candidate in (here, *here.parents):
        if os.path.lexists(candidate / ".git"):
            return candidate
    return None


def inside(path: Path, root: Path) -> bool:
    """Whether ``path`` resolves (every link followed) to ``root`` or below it."""
    try:
        real = path.resolve()
        base = root.resolve()
    except (OSError, RuntimeError):  # a link loop resolves nowhere
        return False
    return real == base or real.is_relative_to(base)


def recorded_problem(name: str) -> str | None:
    """Why ``name`` is not a recorded path (relative, no ``..`` part), or None when it is one."""
    if not name or "\x00" in name:
        return "an empty path, or one holding a NUL character"
    if PurePosixPath(name).is_absolute() or PureWindowsPath(name).is_absolute() or name.startswith("\\"):
        return f"{name!r} is an absolute path; recorded paths are relative to the repository root"
    if ".." in PurePosixPath(name.replace("\\", "/")).parts:
        return f"{name!r} climbs out with '..'; recorded paths stay inside the repository"
    return None


def confined(path: Path, root: Path | None = None, *, what: str = "file") -> Path:
    """The real path of ``path``, refused when it resolves outside ``root`` (by default the
    repository ``path`` lies in). A relative ``path`` is taken from ``root`` when one is given,
    else from the current directory."""
    if root is None:
        given, base = Path(os.path.abspath(path)), repository_of(path)
    else:
        given, base = (path if path.is_absolute() else root / path), root
    try:
        real = given.resolve()
    except (OSError, RuntimeError):
        raise OutsideRepository(
            f"{what} is a link that resolves nowhere (a loop)",
            file=path,
            hint="replace the link by the file it should name",
        ) from None
    if base is None:
        return real
    top = base.resolve()
    if real != top and not real.is_relative_to(top):
        raise OutsideRepository(
            f"{what} resolves outside the repository ({top}); designloop reads nothing outside it",
            file=path,
            hint="keep the file inside the repository: replace the link (or the path) by the file itself",
        )
    return real


def recorded(
    root: Path, name: str, *, what: str = "path", file: Path | None = None, line: int | None = None
) -> Path:
    """The real path a recorded ``name`` (relative to ``root``) names: refused when it is
    absolute, climbs out with ``..`` or resolves outside ``root``. ``file`` and ``line`` name
    the record, so that the error points at it (never at what the path names)."""
    problem = recorded_problem(name)
    if problem is not None:
        raise OutsideRepository(
            f"{what}: {problem}",
            file=file,
            line=line,
            hint="a recorded path is relative to the repository root",
        )
    try:
        return confined(root / name, root, what=f"{what} {name!r}")
    except OutsideRepository as exc:
        raise OutsideRepository(
            exc.message,
            file=file if file is not None else exc.file,
            line=line,
            hint=exc.hint,
        ) from None


def open_fd(path: Path, root: Path | None = None, *, what: str = "file") -> int:
    """A read-only descriptor of the regular file ``path`` (confined as :func:`confined`),
    opened without following a link and without blocking. Raises what ``os.open`` raises,
    :class:`IsADirectoryError` and :class:`NotRegularFile`; the caller closes it."""
    real = confined(path, root, what=what)
    fd = os.open(real, OPEN_FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(path)
        if not stat.S_ISREG(mode):
            raise NotRegularFile(f"{path}: not a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bytes(
    path: Path, root: Path | None = None, *, what: str = "file", limit: int | None = None
) -> bytes:
    """The bytes of the regular file ``path``, confined (:func:`confined`); a file larger than
    ``limit`` is :class:`TooLarge`, unread."""
    fd = open_fd(path, root, what=what)
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if limit is not None and size > limit:
            raise TooLarge(size, limit)
        data = handle.read() if limit is None else handle.read(limit + 1)
    if limit is not None and len(data) > limit:  # it grew while being read
        raise TooLarge(len(data), limit)
    return data
