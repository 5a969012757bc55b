"""What a role may not read, by content as well as by path.

The research log is recognised in any file by its normalised text (BOM, line endings and
whitespace removed from the comparison): an exact copy under any name, link or inode, and a
file that is mostly the log or holds nearly all of it (an excerpt, or a copy of an earlier
version made before the log was rewritten). A design draft that absorbs the log's decisions
is not one: it quotes a part of the log among much prose of its own. The draft a cold role
reviews may hold nearly all of a log that is mostly decision records (its records absorb
every decision); it is refused only when it is the log or mostly the log.

Private paths (the runs directory with its run records, checkpoints and model-call cache,
and the spawns' params files under ``_workflow/reviews``) are refused to every role, with
the one exception of a spawn's own params file; hard links to their files are recognised by
inode.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

MIN_LINE = 20
"""Lines shorter than this (after normalising) are too common to tell a copy apart."""
MOSTLY = 0.6
"""A file whose distinctive text is at least this share the log's is mostly the log ..."""
MOSTLY_FLOOR = 0.25
"""... when what it shares is at least this share of the log."""
NEARLY_ALL = 0.8
"""A file that holds at least this share of the log's distinctive text holds the log."""


def normalise(data: bytes) -> str:
    """Text with any BOM dropped, line endings unified and trailing space removed."""
    text = data.decode("utf-8", "replace").removeprefix("\ufeff")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")


def distinctive(text: str) -> dict[str, int]:
    """The text's distinctive lines (inner whitespace collapsed) and their weight, their length."""
    out: dict[str, int] = {}
    for line in text.split("\n"):
        key = " ".join(line.split())
        if len(key) >= MIN_LINE:
            out[key] = len(key)
    return out


@dataclass(slots=True)
class ForbiddenFile:
    """One version of the research log as a cold role must never see it."""

    path: Path
    inode: tuple[int, int]
    digest: str
    """SHA-256 of the normalised text."""
    lines: dict[str, int] = field(default_factory=dict)
    mass: int = 0

    def matches(self, text: str, reviewed: bool = False) -> bool:
        """Whether normalised ``text`` is this log, or mostly it, or holds nearly all of it.
        A ``reviewed`` design draft is refused only when it is the log or mostly the log: a
        faithful draft of a log that is mostly decisions carries nearly every decision line."""
        if hashlib.sha256(text.encode()).hexdigest() == self.digest:
            return True
        if not self.mass:
            return False
        theirs = distinctive(text)
        shared = sum(weight for line, weight in theirs.items() if line in self.lines)
        if not shared:
            return False
        own = sum(theirs.values())
        mostly = shared >= MOSTLY * own and shared >= MOSTLY_FLOOR * self.mass
        return mostly or (not reviewed and shared >= NEARLY_ALL * self.mass)


def forbid(path: Path) -> ForbiddenFile | None:
    """The research log at ``path`` as it is now, or None when it cannot be read."""
    try:
        real = path.resolve(strict=True)
        stat = real.stat()
        text = normalise(real.read_bytes())
    except OSError:
        return None
    lines = distinctive(text)
    digest = hashlib.sha256(text.encode()).hexdigest()
    return ForbiddenFile(real, (stat.st_dev, stat.st_ino), digest, lines, sum(lines.values()))


@dataclass(slots=True)
class LogVersions:
    """Every version of a research log seen in this process: a copy or a link made before the
    log was rewritten (a rewrite gives it a new inode and new text) stays recognised."""

    path: Path
    versions: list[ForbiddenFile] = field(default_factory=list)

    def current(self) -> list[ForbiddenFile]:
        item = forbid(self.path)
        if item is not None and all((v.digest, v.inode) != (item.digest, item.inode) for v in self.versions):
            self.versions.append(item)
        return list(self.versions)


@dataclass(slots=True)
class Private:
    """Directories no role may read, but for the files named in ``allowed``."""

    dirs: tuple[Path, ...] = ()
    allowed: frozenset[Path] = frozenset()
    _inodes: set[tuple[int, int]] | None = None

    def covers(self, real: Path) -> bool:
        if real in self.allowed:
            return False
        if any(real == d or real.is_relative_to(d) for d in self.dirs):
            return True
        try:
            stat = real.stat()
        except OSError:
            return False
        # A hard link elsewhere to a private file (the model cache, a run record) is one too.
        return stat.st_nlink > 1 and (stat.st_dev, stat.st_ino) in self.inodes()

    def inodes(self) -> set[tuple[int, int]]:
        if self._inodes is None:
            found: set[tuple[int, int]] = set()
            allowed = {(s.st_dev, s.st_ino) for p in self.allowed if (s := _stat(p)) is not None}
            for directory in self.dirs:
                for dirpath, _, filenames in os.walk(directory):
                    for name in filenames:
                        stat = _stat(Path(dirpath) / name)
                        if stat is not None and stat.st_nlink > 1:
                            found.add((stat.st_dev, stat.st_ino))
            self._inodes = found - allowed
        return self._inodes

    def inside(self, real: Path) -> list[Path]:
        """The private directories at or below ``real`` (what a recursive search must skip)."""
        return [d for d in self.dirs if d == real or d.is_relative_to(real)]


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except OSError:
        return None
