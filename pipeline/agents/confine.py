"""What a role may not read, by content as well as by path.

The research log is recognised in any file by its normalised text (BOM, line endings and
whitespace removed from the comparison): an exact copy under any name, link or inode, a file
that is mostly the log or holds nearly all of it (a copy of an earlier version made before the
log was rewritten), and an excerpt of any size: a file that holds a run of the log's words
(``GRAM`` words in a row from one of its lines, case, punctuation, line breaks and JSON escapes
aside) that the design under review does not hold. What the design under review shares with
the log is what an honest design absorbs, so it is no excerpt; the draft a cold role reviews
is refused only when it is the log or mostly the log. :class:`LogWords` also takes the log's
words out of a text (the review-log entry a cold role may read).

Private paths (the runs directory with its run records, checkpoints and model-call cache,
and the spawns' params files under ``_workflow/reviews``) are refused to every role, with
the one exception of a spawn's own params file; hard links to their files are recognised by
inode.
"""

from __future__ import annotations

import hashlib
import html
import os
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pipeline import confinement
from pipeline.agents.readable import marker_entries

MIN_LINE = 20
"""Lines shorter than this (after normalising) are too common to tell a copy apart."""
MOSTLY = 0.6
"""A file whose distinctive text is at least this share the log's is mostly the log ..."""
MOSTLY_FLOOR = 0.25
"""... when what it shares is at least this share of the log."""
MOSTLY_REVIEWED = 0.85
"""The draft under review is mostly the log only past this share of its distinctive text: a
faithful draft of a short log carries its problem, findings, glossary and every decision line
(two thirds of its text), while the log given as the draft is nearly all of it."""
NEARLY_ALL = 0.8
"""A file that holds at least this share of the log's distinctive text holds the log."""


GRAM = 5
"""Words in a row that make an excerpt of the log ..."""
GRAM_CHARS = 20
"""... when they hold at least this many letters and digits."""
WORD = re.compile(r"[^\W_]+")
ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|[nrtbf\"\\/])")
Gram = tuple[str, ...]


def _unescape(match: re.Match[str]) -> str:
    code = match.group(1)
    return chr(int(code, 16)) if code else " "


HOMOGLYPHS = str.maketrans(
    "АВЕЅІЈКМНОРСТХУаеіјорсхуѕԁһԛԝѵѡɡΑΒΕΖΗΙΚΜΝΟΡΤΥΧαβεικνορτυχ",
    "ABESIJKMHOPCTXYaeijopcxysdhqwvwgABEZHIKMNOPTYXabeikvoptux",
)
"""Letters of other scripts drawn like Latin ones (Cyrillic, Greek), folded to the Latin letter
they pass for; the table is Unicode's confusables for the letters a word can be spelled with."""
INVISIBLE = dict.fromkeys(
    map(ord, "\u00ad\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u180e\u034f")
)
"""Soft hyphens, zero-width characters and joiners: nothing a reader sees."""
TAG = re.compile(r"<[A-Za-z/!][^<>]{0,200}>")
SPACED = re.compile(r"(?<![^\W_])(?:[^\W_][ \t]){2,}[^\W_](?![^\W_])")
"""Letter-spacing: single letters with a space between each (``D e c i s i o n``)."""


def fold(text: str) -> str:
    """``text`` as a reader sees it, whatever was done to hide it from a five-word match: HTML
    tags dropped and entities read, Unicode NFKC, soft hyphens and zero-width characters
    removed, homoglyphs folded to the Latin letters they pass for, and letter-spaced words
    closed up (line breaks and other whitespace count as one space by the word split)."""
    text = TAG.sub("", text)
    text = html.unescape(text)
    text = unicodedata.normalize("NFKC", text).translate(INVISIBLE).translate(HOMOGLYPHS)
    return SPACED.sub(lambda m: m.group().replace(" ", "").replace("\t", ""), text)


def words(text: str) -> list[str]:
    """The text's words, case folded, with JSON and string escapes read through, and every
    disguise :func:`fold` undoes undone."""
    return WORD.findall(fold(ESCAPE.sub(_unescape, text)).casefold())


def line_grams(text: str) -> set[Gram]:
    """Every run of ``GRAM`` words within one line of ``text`` (at least ``GRAM_CHARS`` long)."""
    found: set[Gram] = set()
    for line in text.split("\n"):
        found.update(g for g in _runs(words(line)) if sum(map(len, g)) >= GRAM_CHARS)
    return found


def line_runs(text: str) -> set[Gram]:
    """The words of every line of ``text`` that has at least ``GRAM`` words (``GRAM_CHARS`` long)."""
    found: set[Gram] = set()
    for line in text.split("\n"):
        run = tuple(words(line))
        if len(run) >= GRAM and sum(map(len, run)) >= GRAM_CHARS:
            found.add(run)
    return found


def _runs(items: list[str]) -> Iterator[Gram]:
    for i in range(len(items) - GRAM + 1):
        yield tuple(items[i : i + GRAM])


def grams(text: str) -> set[Gram]:
    """Every run of ``GRAM`` words in ``text``, across lines."""
    return set(_runs(words(text)))


@dataclass(slots=True)
class LogWords:
    """The research log's words that a text shared with the design does not excuse: its runs of
    ``GRAM`` words and its whole lines (a line whose every run the design holds, but not in that
    order or with that decision number, is the log's still)."""

    log_only: set[Gram] = field(default_factory=set)
    lines: set[Gram] = field(default_factory=set)

    @classmethod
    def of(cls, log_text: str, shared: Iterable[str]) -> LogWords:
        return cls.parts([line_grams(log_text)], [line_runs(log_text)], shared)

    @classmethod
    def parts(
        cls, gram_sets: Iterable[set[Gram]], line_sets: Iterable[set[Gram]], shared: Iterable[str]
    ) -> LogWords:
        """From the grams and lines of one or more versions of the log, less what ``shared`` holds."""
        texts = list(shared)
        held: set[Gram] = set().union(*(grams(t) for t in texts))
        joined = [" ".join(words(t)) for t in texts]
        only = set().union(*gram_sets) - held
        lines = {run for run in set().union(*line_sets) if not any(" ".join(run) in t for t in joined)}
        return cls(only, lines)

    def __bool__(self) -> bool:
        return bool(self.log_only or self.lines)

    def held_by(self, text: str) -> bool:
        """Whether ``text`` holds any of the log's own words."""
        found = words(text)
        if any(g in self.log_only for g in _runs(found)):
            return True
        joined = " ".join(found)
        return any(" ".join(run) in joined for run in self.lines)

    def redact(self, text: str) -> tuple[str, int]:
        """``text`` with every run of the log's own words replaced by ``[…]``, and how many runs."""
        found = [(m.start(), m.end(), m.group().casefold()) for m in WORD.finditer(text)]
        plain = [w for _, _, w in found]
        hit = [False] * len(found)
        for i in range(len(found) - GRAM + 1):
            if tuple(plain[i : i + GRAM]) in self.log_only:
                hit[i : i + GRAM] = [True] * GRAM
        for run in self.lines:
            for i in range(len(plain) - len(run) + 1):
                if tuple(plain[i : i + len(run)]) == run:
                    hit[i : i + len(run)] = [True] * len(run)
        out, at, runs, i = [], 0, 0, 0
        while i < len(found):
            if not hit[i]:
                i += 1
                continue
            j = i
            while j + 1 < len(found) and hit[j + 1]:
                j += 1
            out += [text[at : found[i][0]], "[…]"]
            at, runs, i = found[j][1], runs + 1, j + 1
        return "".join(out) + text[at:], runs


def normalise(data: bytes) -> str:
    """Text with any BOM dropped, line endings unified and trailing space removed; NUL characters
    dropped (UTF-16 text read as UTF-8 is its letters with a NUL between them)."""
    text = data.decode("utf-8", "replace").removeprefix("\ufeff").replace("\x00", "")
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
    grams: set[Gram] = field(default_factory=set)
    """Its runs of words (``line_grams``): what an excerpt of it holds ..."""
    runs: set[Gram] = field(default_factory=set)
    """... and its lines' words (``line_runs``)."""

    def matches(self, text: str, reviewed: bool = False) -> bool:
        """Whether normalised ``text`` is this log, or mostly it, or holds nearly all of it.
        A ``reviewed`` design draft is refused only when it is the log or mostly the log (by
        ``MOSTLY_REVIEWED``): a faithful draft of a log that is mostly decisions carries nearly
        every decision line."""
        if hashlib.sha256(text.encode()).hexdigest() == self.digest:
            return True
        if not self.mass:
            return False
        theirs = distinctive(text)
        shared = sum(weight for line, weight in theirs.items() if line in self.lines)
        if not shared:
            return False
        own = sum(theirs.values())
        share = MOSTLY_REVIEWED if reviewed else MOSTLY
        mostly = shared >= share * own and shared >= MOSTLY_FLOOR * self.mass
        return mostly or (not reviewed and shared >= NEARLY_ALL * self.mass)


def forbid(path: Path) -> ForbiddenFile | None:
    """The research log at ``path`` as it is now, or None when it cannot be read."""
    try:
        real = path.resolve(strict=True)
        stat = real.stat()
        text = normalise(confinement.read_bytes(real))
    except OSError:
        return None
    lines = distinctive(text)
    digest = hashlib.sha256(text.encode()).hexdigest()
    return ForbiddenFile(
        real,
        (stat.st_dev, stat.st_ino),
        digest,
        lines,
        sum(lines.values()),
        line_grams(text),
        line_runs(text),
    )


@dataclass(slots=True)
class LogGuard:
    """Whether a file holds the research log, for a cold role: the log by name or real path, or
    any file (a hard link included) whose text is the log's (``ForbiddenFile.matches``) or holds an excerpt
    of it the design under review (``reviewed``) does not (``LogWords``)."""

    forbidden: list[ForbiddenFile]
    reviewed: frozenset[Path]
    _seen: dict[tuple[int, int, int, int, bool], bool] = field(default_factory=dict)
    _log_only: LogWords | None = None

    def holds(self, real: Path) -> bool:
        if not self.forbidden:
            return False
        if real.name == "research-log.md":
            return True
        try:
            stat = real.stat()
        except OSError:
            return False
        if any(real == item.path for item in self.forbidden):
            return True
        # A hard link holds the log's very bytes, which the content check finds. An inode alone
        # proves nothing: once the log is rewritten, a new file (the draft) may get its old
        # version's inode back.
        return real.is_file() and self._holds_text(real, stat)

    def _holds_text(self, real: Path, stat: os.stat_result) -> bool:
        reviewed = real in self.reviewed
        key = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, reviewed)
        if key not in self._seen:
            try:
                text = normalise(confinement.read_bytes(real))
            except OSError:
                return False
            copy = any(item.matches(text, reviewed) for item in self.forbidden)
            self._seen[key] = copy or (not reviewed and self.log_only().held_by(text))
        return self._seen[key]

    def log_only(self) -> LogWords:
        """The log's words that the design under review does not share (what an excerpt holds)."""
        if self._log_only is None:
            shared: list[str] = []
            for path in sorted(self.reviewed):
                try:
                    shared.append(normalise(confinement.read_bytes(path)))
                except OSError:
                    continue
            grams = [item.grams for item in self.forbidden]
            self._log_only = LogWords.parts(grams, [item.runs for item in self.forbidden], shared)
        return self._log_only


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
    """Directories no role may read, but for the files named in ``allowed``; with ``root``, also
    every runs directory under it, found by its markers (agents.readable.store_marked)."""

    dirs: tuple[Path, ...] = ()
    allowed: frozenset[Path] = frozenset()
    root: Path | None = None
    _inodes: set[tuple[int, int]] | None = None
    _marked: dict[Path, list[Path]] = field(default_factory=dict)

    def covers(self, real: Path) -> bool:
        if real in self.allowed:
            return False
        if any(real == d or real.is_relative_to(d) for d in self.dirs):
            return True
        if self.root is not None and self._in_store(real):
            return True
        try:
            stat = real.stat()
        except OSError:
            return False
        # A hard link elsewhere to a private file (the model cache, a run record) is one too.
        return stat.st_nlink > 1 and (stat.st_dev, stat.st_ino) in self.inodes()

    def _in_store(self, real: Path) -> bool:
        """Whether ``real`` lies in a runs directory under ``root`` (or is a marked entry of the
        root itself, when the root is one)."""
        assert self.root is not None
        if not real.is_relative_to(self.root) or real == self.root:
            return False
        rel = real.relative_to(self.root)
        for ancestor in (rel, *rel.parents):
            marks = self._marks(self.root / ancestor)
            if marks and (ancestor != Path(".") or any(real.is_relative_to(m) for m in marks)):
                return True
        return False

    def _marks(self, directory: Path) -> list[Path]:
        if directory not in self._marked:
            self._marked[directory] = marker_entries(directory)
        return self._marked[directory]

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
