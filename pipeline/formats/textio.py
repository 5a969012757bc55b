"""Reading text strictly and writing it atomically.

Every text file designloop reads goes through :func:`read_text`, which reads it through the
confinement guard (pipeline.confinement: nothing outside the repository) and turns missing,
unreadable or non-UTF-8 files into :class:`InputError` values naming the file and the
byte offset. Every file it rewrites goes through :func:`atomic_write`: a temporary file
in the same directory, flushed and renamed over the target, so a crash never leaves a
half-written file. No write follows or replaces a symbolic link (:func:`check_write_target`):
a link where designloop writes is refused before anything is written.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from pipeline import confinement
from pipeline.errors import InputError
from pipeline.formats.space import FULL, out_of_space


@dataclass(frozen=True, slots=True)
class TextFile:
    """A decoded text file: its lines with line endings normalised to ``\\n``."""

    path: Path
    text: str
    newline: str
    """The file's dominant line ending, kept so a rewrite preserves it."""
    bom: bool

    @property
    def lines(self) -> list[str]:
        return split_lines(self.text)


def split_lines(text: str) -> list[str]:
    """Split text into lines; a final newline does not add a line."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def decode(data: bytes, path: Path) -> TextFile:
    bom = data.startswith(b"\xef\xbb\xbf")
    if bom:
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = exc.start + (3 if bom else 0)
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            f"not valid UTF-8: byte 0x{data[exc.start]:02x} at byte offset {offset}",
            file=path,
            line=line,
            hint="re-save the file as UTF-8 (for example: iconv -f latin1 -t utf-8)",
        ) from None
    nul = text.find("\x00")
    if nul != -1:
        raise InputError(
            f"holds a NUL byte at character {nul} (a binary file, or text saved as UTF-16)",
            file=path,
            line=text.count("\n", 0, nul) + 1,
            hint="pass a UTF-8 text file; re-save it as UTF-8 (for example: iconv -f utf-16 -t utf-8)",
        )
    crlf = text.count("\r\n")
    newline = "\r\n" if crlf and crlf * 2 >= text.count("\n") else "\n"
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return TextFile(path=path, text=text, newline=newline, bom=bom)


MAX_INPUT = 64 << 20
"""No design document, log or plan is larger: a bigger input is not one (or never ends)."""


MISSING = {
    "research log": "a design directory holds _workflow/research-log.md (docs/formats.md §1): "
    "write it, or pass the directory that has it",
    "design": "write it first (designloop create DIR), or pass the right path",
}
"""What to do about a missing input, by what it is (a flag's file: check the path)."""


def read_text(path: Path, *, what: str = "file", root: Path | None = None) -> TextFile:
    """Read and decode ``path``, or raise an :class:`InputError` that says what to do. The read
    is confined to ``root`` (by default the repository the path lies in; pipeline.confinement);
    only a regular file is read (a FIFO or a device could block or never end), and one of at
    most ``MAX_INPUT`` bytes."""
    try:
        data = confinement.read_bytes(path, root, what=what, limit=MAX_INPUT)
    except FileNotFoundError:
        raise InputError(f"{what} not found", file=path, hint=MISSING.get(what, "check the path")) from None
    except IsADirectoryError:
        raise InputError(
            f"{what} is a directory, not a file", file=path, hint="pass the file's path"
        ) from None
    except confinement.NotRegularFile:
        raise InputError(
            f"{what} is not a regular file (a device, a FIFO or a socket: it may never end)",
            file=path,
            hint="pass a text file",
        ) from None
    except confinement.TooLarge as exc:
        raise InputError(
            f"{what} is {exc.size} bytes, more than any design document ({MAX_INPUT} at most)",
            file=path,
            hint="pass the document itself",
        ) from None
    except PermissionError:
        raise InputError(
            f"{what} is not readable (permission denied)", file=path, hint="fix the file's permissions"
        ) from None
    except OSError as exc:
        raise InputError(
            f"{what} could not be read: {exc.strerror}",
            file=path,
            hint="check the path and the file's permissions",
        ) from None
    return decode(data, path)


def encode(text: str, newline: str = "\n", bom: bool = False) -> bytes:
    body = text.replace("\n", newline) if newline != "\n" else text
    return (b"\xef\xbb\xbf" if bom else b"") + body.encode("utf-8")


def umask() -> int:
    """The process umask, read without changing it where the system tells it (Linux), else
    by setting it and putting it straight back."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


enclosing_repository = confinement.repository_of
"""The nearest directory at or above a path (as given, links not followed) holding ``.git``."""


def check_write_target(path: Path, root: Path | None = None) -> None:
    """Refuse to write ``path`` when it is a symbolic link (wherever it points: following it would
    overwrite the file it names, replacing it would silently break it), or when a linked
    directory takes it out of its repository (``root``, else the one ``path`` lies in)."""
    if path.is_symlink():
        target = Path(os.path.abspath(path.parent / os.readlink(path)))
        where = root or enclosing_repository(path.parent)
        outside = where is not None and not target.resolve().is_relative_to(where.resolve())
        raise InputError(
            f"is a symbolic link to {target}"
            + (", outside the repository" if outside else "")
            + "; designloop writes only regular files and never follows or replaces a link",
            file=path,
            hint="replace the link by a regular file (or remove it) and run again",
        )
    where = root or enclosing_repository(path.parent)
    if where is None:
        return
    real = path.parent.resolve()
    if not real.is_relative_to(where.resolve()):
        raise InputError(
            f"lies in a linked directory that leads outside the repository ({real})",
            file=path,
            hint="replace the directory link by a directory inside the repository and run again",
        )


def check_runs_link(given: Path) -> None:
    """A runs directory inside the repository that leads out of it through a link (a checked-in
    ``runs`` link, say) is refused: designloop would write its runs where nobody named.
    ``--runs-dir`` naming a place outside the repository is the user's choice, and fine."""
    repo = enclosing_repository(given)
    real = given.resolve()
    if repo is not None and given != real and not real.is_relative_to(repo.resolve()):
        raise InputError(
            f"the runs directory leads outside the repository (to {real}) through a symbolic link",
            file=given,
            hint=f"pass --runs-dir {real} if runs belong there, or remove the link",
        )


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a same-directory temporary file and a rename; a full
    disk is :class:`~pipeline.formats.space.OutOfSpace`, with the file as it was. A file that
    exists keeps its mode; a new one gets the mode any other program would give it (0666 less
    the umask), not the temporary file's 0600."""
    check_write_target(path)
    made = [d for d in (path.parent, *path.parent.parents) if not d.exists()]
    try:
        _replace(path, data)
    except BaseException as exc:
        for directory in made:  # deepest first: the directories made for it, left empty
            with contextlib.suppress(OSError):
                directory.rmdir()
        if isinstance(exc, OSError) and exc.errno in FULL:
            raise out_of_space(path, len(data)) from exc
        raise


def _replace(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{_writer()}-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def _writer() -> str:
    """The temporary file's mark of who writes it: ``dl-<host>-<pid>``, so that the next command
    can tell a writer that died (kill -9) from one still writing (:func:`sweep_debris`)."""
    host = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]
    return f"dl-{host}-{os.getpid()}"


TEMP_RE = re.compile(r"^\..+\.dl-(?P<host>[0-9a-f]{8})-(?P<pid>\d+)-[^/]*\.tmp$")
LEGACY_TEMP_RE = re.compile(r"^\.(?:design[\w.-]*\.md|[\w.-]+\.claims\.json)\.[a-z0-9_]{8}\.tmp$")
"""A temporary file named before writers marked theirs (swept once it is an hour old)."""
LEGACY_AGE = 3600.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True


def sweep_debris(*directories: Path) -> list[Path]:
    """Remove what an atomic write killed mid-way (kill -9, a power cut) left in ``directories``:
    the temporary files whose writer on this machine is gone (another machine's are left to it),
    and unmarked ones an hour old. Returns what was removed; nothing else is ever touched."""
    host = _writer().split("-")[1]
    removed: list[Path] = []
    for directory in directories:
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in names:
            path = directory / name
            match = TEMP_RE.match(name)
            if match is not None:
                stale = match.group("host") == host and not _alive(int(match.group("pid")))
            elif LEGACY_TEMP_RE.match(name):
                try:
                    stale = time.time() - path.lstat().st_mtime > LEGACY_AGE
                except OSError:
                    continue
            else:
                continue
            if stale and not path.is_symlink() and path.is_file():
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                    removed.append(path)
    return removed


def atomic_write(path: Path, text: str, *, newline: str = "\n", bom: bool = False) -> None:
    if "\x00" in text:  # never a text file designloop would refuse to read back
        raise InputError("the text holds a NUL byte; nothing was written", file=path, hint="write text only")
    atomic_write_bytes(path, encode(text, newline, bom))


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
