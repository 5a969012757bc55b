"""The built-in grep's matching: a model's regular expression over the lines of a file, within
a time limit, and how its answer is shown (as ``grep -n`` prints it, cut to size, and a note
when a pattern that found nothing is written in a syntax it does not take).

Patterns run on the ``regex`` package rather than the standard library's ``re``: every match
takes a time limit (``timeout=``) and, with ``concurrent=True``, lets go of the GIL while it
runs. A pattern that backtracks without end (``^(\\w+\\s?)*$`` over an ordinary line) so stops
with a named error at the tool's time limit, while every other spawn, the live view and the
run's own time limits go on; with ``re`` it held the process for minutes. ``regex`` also
reads grep's POSIX classes (``[[:space:]]``, ``[[:upper:]]``), which ``re`` takes for a
nested set that matches something else. (google-re2 would never backtrack, but it refuses
backreferences and lookaround, which models write too.)

A file is searched line by line, as grep searches it. Most files of a search hold no match, so
each is first matched whole (the pattern in multi-line mode), and only a file that matches
whole is searched line by line: a line's match is a match of the whole text, so nothing is
lost, except for the constructs that can tell a line's start or end from the text's (``\\A``,
``\\Z``, ``\\z``, ``\\G`` and the negative lookarounds), with which every line is searched.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import regex

from pipeline.agents.braces import TooManyWords, expand_text

MAX_MATCHES = 200
MAX_CONTEXT = 10
WHOLE_UNSAFE = re.compile(r"\\[AZzG]|\(\?<?!")
"""Constructs a line's match and the whole text's can disagree on (see the module's docstring)."""


class TimedOut(Exception):
    """The search ran past its time limit, in ``path``."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


def compile_pattern(pattern: str, ignore_case: bool) -> regex.Pattern[str]:
    """The model's pattern, compiled (``regex.error`` when it is not one)."""
    return regex.compile(pattern, regex.IGNORECASE if ignore_case else 0)


@dataclass(frozen=True, slots=True)
class Match:
    """One line a search found: the file (relative to the repository root), its line number
    (the number Read shows) and its text."""

    path: str
    line: int
    text: str


class LineSearch:
    """One pattern over the lines of many files, with ``limit`` seconds of matching in all (the
    time spent walking and reading files is not the pattern's)."""

    def __init__(self, pattern: regex.Pattern[str], limit: float) -> None:
        self.line = pattern
        self.left = limit
        self.whole = (
            None
            if WHOLE_UNSAFE.search(pattern.pattern)
            else regex.compile(pattern.pattern, pattern.flags | regex.MULTILINE)
        )

    def _found(self, pattern: regex.Pattern[str], text: str, path: str) -> bool:
        if self.left <= 0:
            raise TimedOut(path)
        start = time.monotonic()
        try:
            return pattern.search(text, timeout=self.left, concurrent=True) is not None
        except TimeoutError:
            raise TimedOut(path) from None
        finally:
            self.left -= time.monotonic() - start

    def matching(self, path: str, lines: list[str]) -> Iterator[Match]:
        """The lines of ``path`` (without their ends) that the pattern matches; TimedOut once
        the matching has taken its time."""
        if self.whole is not None and not self._found(self.whole, "\n".join(lines), path):
            return
        for number, line in enumerate(lines, start=1):
            if self._found(self.line, line, path):
                yield Match(path, number, line)


def globbed(glob: str | None) -> list[str]:
    """A glob as a list of globs, its braces expanded (``*.{py,md}``: ``*.py``, ``*.md``)."""
    if not glob:
        return []
    try:
        return expand_text(glob)
    except TooManyWords:
        return [glob]


def shown(found: Iterable[tuple[Match, list[str]]], context: int, limit: int) -> tuple[list[str], str | None]:
    """The matches as grep -n prints them (``file:line:text``; with ``context``, the lines
    around as ``file-line-text`` and ``--`` between groups), at most ``MAX_MATCHES`` matches
    and ``limit`` characters, with the note that says where the answer was cut (None: whole)."""
    context = max(0, min(context, MAX_CONTEXT))
    out: list[str] = []
    size = 0
    printed: dict[str, int] = {}
    for count, (match, lines) in enumerate(found):
        if count >= MAX_MATCHES:
            return out, f"(truncated at {MAX_MATCHES} matches: narrow the path, the glob or the pattern)"
        first = max(1, match.line - context)
        last = min(len(lines), match.line + context)
        done = printed.get(match.path, 0)
        group = ["--"] if context and out and done < first - 1 else []
        for number in range(max(first, done + 1), last + 1):
            mark = ":" if number == match.line else "-"
            group.append(f"{match.path}{mark}{number}{mark}{lines[number - 1]}")
        grown = size + sum(len(line) + 1 for line in group)
        if grown > limit:
            room = limit - size
            if not out and group:  # one line longer than the whole answer: shown cut
                out.append(group[0][:room])
            return out, (
                f"(cut at {limit:,} characters, after {count} matches: narrow the path, the glob or"
                " the pattern, or read the file with offset and limit)"
            )
        out += group
        size = grown
        printed[match.path] = max(done, last)
    return out, None


BRE_ESCAPES = re.compile(r"\\[|(){}+?<>]")
"""grep's basic-syntax operators (``\\|``, ``\\(``, ``\\+`` ...) and word edges (``\\<``, ``\\>``):
in a Python pattern they match the character itself."""
BRE_NOTE = (
    "the pattern is a Python regular expression: a backslash makes |, (, ), {, }, + or ? match"
    " itself, and \\< or \\> a < or >; write a|b for either, \\b for a word's edge"
)


def no_match(pattern: str) -> str:
    """What a search that found nothing answers, with a note when the pattern is written in
    grep's basic syntax (which matches something else here)."""
    return f"no matches ({BRE_NOTE})" if BRE_ESCAPES.search(pattern) else "no matches"
