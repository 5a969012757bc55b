"""One run per design directory at a time: a lock across processes.

``RunLock`` is the interface a run store's lock implements; ``FileRunLock`` is the one for
the local store: an operating-system lock (``flock`` on Unix, through filelock's descriptor
primitive) on ``_workflow/.designloop-run.lock``. The operating system drops the lock when
its holder dies, so a run killed with SIGKILL leaves no stale lock behind: the next run
takes it. While a run holds the file, it names the run, its process and its host, so a
second run can say who is working on the directory. The holder removes the file when it
lets go, so a finished run (or one refused after it took the lock) leaves nothing behind; a
process that locked a file already removed finds it is not the one at the path and tries again.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import socket
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

from filelock import lock_descriptor, unlock_descriptor

from pipeline.errors import DesignloopError, ExitCode, InputError
from pipeline.formats.space import FULL, out_of_space

LOCK_NAME = ".designloop-run.lock"
POLL_SECONDS = 0.2


@dataclass(frozen=True, slots=True)
class Holder:
    """Who holds a design directory: the run, its process, its host and since when."""

    run_id: str
    pid: int
    host: str
    since: str

    def describe(self) -> str:
        return f"run {self.run_id} (pid {self.pid} on {self.host}, since {self.since})"


def holder_for(run_id: str) -> Holder:
    return Holder(
        run_id, os.getpid(), socket.gethostname(), dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    )


class RunLocked(InputError):
    """Another run is working on the design directory."""


def refusal(directory: Path, current: Holder | None) -> RunLocked:
    """The error for a directory another run holds, naming it where it is known."""
    who = current.describe() if current else "another designloop run"
    return RunLocked(
        f"{who} is working on this design directory",
        file=directory,
        hint=(f"wait for it (designloop status {current.run_id} shows it), " if current else "wait for it, ")
        + "or pass --wait to start when it is done",
    )


class LockLost(DesignloopError):
    """The run no longer holds its design directory's lock (the store's session ended, the lock
    file was removed): it stops before writing anything more, and stays resumable."""

    exit_code = ExitCode.INTERNAL


def lost(directory: Path, holder: Holder | None, why: str) -> LockLost:
    run = f"run {holder.run_id}" if holder else "the run"
    return LockLost(
        f"{run} lost its lock on this design directory ({why}); it stopped so that no two runs "
        "work on the directory at once",
        file=directory,
        hint=(f"designloop resume {holder.run_id} continues it" if holder else "resume the run")
        + " once no other run holds the directory (designloop status shows who does)",
    )


def holder_from(raw: object) -> Holder | None:
    """A holder from its stored JSON object; None when it is not (yet) a whole one."""
    try:
        assert isinstance(raw, dict)
        return Holder(str(raw["run_id"]), int(raw["pid"]), str(raw["host"]), str(raw["since"]))
    except (AssertionError, KeyError, TypeError, ValueError):
        return None


class RunLock(Protocol):
    """The lock a run store gives each design directory; held for the whole of a run."""

    def acquire(self, holder: Holder, wait: bool, on_wait: Callable[[Holder | None], None] | None) -> None:
        """Take the lock, or raise RunLocked naming the holder (``wait``: block until it is free)."""

    def release(self) -> None:
        """Give the lock up; a holder that dies gives it up too."""

    def holder(self) -> Holder | None:
        """The live holder, or None when no run holds the lock. Takes and writes nothing."""

    def check(self) -> None:
        """Raise LockLost unless this process still holds the lock (a fence before a write that
        cannot be taken back)."""

    def relabel(self, holder: Holder) -> None:
        """Name another run as the holder (a run started anew in place of the one named)."""


class FileRunLock:
    """An OS file lock on the design directory's ``_workflow/.designloop-run.lock``."""

    def __init__(self, design_root: Path) -> None:
        self.directory = design_root
        self.path = design_root / "_workflow" / LOCK_NAME
        self._fd: int | None = None
        self._holder: Holder | None = None

    def acquire(
        self, holder: Holder, wait: bool = False, on_wait: Callable[[Holder | None], None] | None = None
    ) -> None:
        if self._fd is not None:
            raise RuntimeError("the run lock is already held by this process")
        told = False
        while True:
            fd = self._open()
            try:
                if not self._try(fd):
                    current = self._read(fd)
                    if not wait:
                        raise refusal(self.directory, current)
                    if on_wait is not None and not told:
                        on_wait(current)
                        told = True
                    lock_descriptor(fd, blocking=True, poll_interval=POLL_SECONDS)
                if self._at_path(fd):
                    self._name_or_let_go(fd, holder)
                    self._fd, fd = fd, -1
                    return
            finally:
                if fd >= 0:
                    os.close(fd)

    def _name_or_let_go(self, fd: int, holder: Holder) -> None:
        """Name the holder in the file just locked; one that cannot be named (a full disk) is
        removed before the lock is let go, so a refused run leaves no lock file behind."""
        try:
            self._name(fd, holder)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(self.path)
            if exc.errno in FULL:
                raise out_of_space(self.path, resume=None) from exc
            raise

    def _name(self, fd: int, holder: Holder) -> None:
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(asdict(holder)) + "\n").encode(), 0)
        os.fsync(fd)
        self._holder = holder

    def relabel(self, holder: Holder) -> None:
        if self._fd is None:
            raise RuntimeError("the run lock is not held by this process")
        self._name(self._fd, holder)

    def check(self) -> None:
        if self._fd is None:
            raise lost(self.directory, self._holder, "it was released")
        try:
            there = self._at_path(self._fd)
        except OSError as exc:  # a stale NFS handle, a permission taken away: nothing vouches for it
            why = f"its lock file {self.path} cannot be checked: {exc.strerror or exc}"
            raise lost(self.directory, self._holder, why) from None
        if not there:
            raise lost(self.directory, self._holder, f"its lock file {self.path} was removed or replaced")

    def _open(self) -> int:
        try:
            # 0o666 less the umask, as any other program's file
            return os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o666)
        except OSError as exc:
            raise InputError(
                f"cannot create the run lock: {exc.strerror}"
                + (" (a symbolic link is in its place)" if self.path.is_symlink() else ""),
                file=self.path,
                hint="make the design directory's _workflow/ writable",
            ) from None

    def _at_path(self, fd: int) -> bool:
        """Whether the locked file is still the one at the path (its holder removes it on release)."""
        try:
            here = os.stat(self.path)
        except FileNotFoundError:
            return False
        mine = os.fstat(fd)
        return (here.st_dev, here.st_ino) == (mine.st_dev, mine.st_ino)

    def _try(self, fd: int) -> bool:
        # A `status` probe holds the lock for a moment; a few tries see past it.
        for _ in range(5):
            if lock_descriptor(fd, blocking=False):
                return True
            with contextlib.suppress(OSError):
                os.sched_yield()
        return False

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
            unlock_descriptor(fd)
        finally:
            os.close(fd)

    def holder(self) -> Holder | None:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return None
        try:
            if lock_descriptor(fd, blocking=False):
                unlock_descriptor(fd)
                return None
            return self._read(fd)
        finally:
            os.close(fd)

    @staticmethod
    def _read(fd: int) -> Holder | None:
        try:
            return holder_from(json.loads(os.pread(fd, 4096, 0).decode("utf-8")))
        except (OSError, ValueError):
            return None  # the holder is still writing its name


def run_lock(design_root: Path) -> RunLock:
    """The lock of a design directory in the local run store."""
    return FileRunLock(design_root)


@contextlib.contextmanager
def holding(
    lock: RunLock, holder: Holder, wait: bool, on_wait: Callable[[Holder | None], None] | None = None
) -> Iterator[RunLock]:
    lock.acquire(holder, wait, on_wait)
    try:
        yield lock
    finally:
        lock.release()
