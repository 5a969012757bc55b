"""Brace expansion as bash does it, before any glob: ``{a,b}``, ``{1..3}``, ``{01..10..3}``,
``{a..e}``, nested braces, a preamble and a postscript (``src/{app,lib}/*.py``).

A word is a sequence of characters, each marked quoted or not: a quoted (or backslashed) brace
or comma is text, as in a shell, so ``grep -E 'a{1,3}'`` keeps its pattern while
``--include=*.{py,md}`` becomes two options. A brace with no unquoted comma at its top level
and no sequence in it (``{}``, ``{a}``, an unmatched ``{``) stays text, and the scan goes on
inside it (``{a{b,c}}`` is ``{ab} {ac}``), as bash does.

The braceexpand package expands a plain string into plain strings: it cannot say which
characters were quoted, in the word or in each result, and the glob expansion that comes next
needs both (the same reason the command line is not split with ``shlex``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

Char = tuple[str, bool]
"""One character of a word, and whether it was quoted."""
MAX_WORDS = 1000
"""The most words one word may expand to (``{1..100000}`` is refused, not produced)."""
SEQUENCE = re.compile(r"(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?")


class TooManyWords(ValueError):
    """A brace expansion past ``MAX_WORDS`` words."""


def expand(word: Sequence[Char]) -> list[list[Char]]:
    """The words ``word`` expands to, left to right (the word itself when it holds no brace
    expansion); an empty one is dropped, as bash drops it (``a{,b}`` is ``a ab``, ``{a,}`` is
    ``a``)."""
    out = _expand(list(word))
    if len(out) > 1:
        out = [w for w in out if w]
    if len(out) > MAX_WORDS:
        raise TooManyWords(f"a brace expansion makes {len(out)} words; at most {MAX_WORDS} are run")
    return out


def expand_text(text: str) -> list[str]:
    """The strings a plain, unquoted ``text`` expands to (a glob such as ``*.{py,md}``)."""
    return ["".join(ch for ch, _ in word) for word in expand([(ch, False) for ch in text])]


def _expand(word: list[Char]) -> list[list[Char]]:
    start = 0
    while (found := _next_brace(word, start)) is not None:
        opening, closing = found
        alternatives = _alternatives(word[opening + 1 : closing])
        if alternatives is None:
            start = opening + 1  # a brace that expands nothing is text; look inside it
            continue
        head, tail = word[:opening], _expand(word[closing + 1 :])
        out: list[list[Char]] = []
        for alternative in alternatives:
            for middle in _expand(alternative):
                out += [head + middle + rest for rest in tail]
                if len(out) > MAX_WORDS:
                    return out
        return out
    return [word]


def _next_brace(word: list[Char], start: int) -> tuple[int, int] | None:
    """The first unquoted ``{`` at or after ``start`` with its matching unquoted ``}``."""
    for opening in range(start, len(word)):
        if word[opening] != ("{", False):
            continue
        depth = 0
        for i in range(opening, len(word)):
            if word[i] == ("{", False):
                depth += 1
            elif word[i] == ("}", False):
                depth -= 1
                if depth == 0:
                    return opening, i
    return None


def _alternatives(inner: list[Char]) -> list[list[Char]] | None:
    """What the braces around ``inner`` stand for: the parts between its top-level unquoted
    commas, or a sequence's items; None when neither (the braces are text)."""
    parts: list[list[Char]] = [[]]
    depth = 0
    for ch in inner:
        if ch == ("{", False):
            depth += 1
        elif ch == ("}", False):
            depth -= 1
        if ch == (",", False) and depth == 0:
            parts.append([])
        else:
            parts[-1].append(ch)
    if len(parts) > 1:
        return parts
    if any(quoted for _, quoted in inner):
        return None
    items = _sequence("".join(ch for ch, _ in inner))
    return [[(ch, False) for ch in item] for item in items] if items is not None else None


def _sequence(text: str) -> list[str] | None:
    """``1..5``, ``05..1``, ``1..10..3``, ``a..e`` as bash counts them; None for anything else."""
    match = SEQUENCE.fullmatch(text)
    if match is None:
        return None
    first, last, by = match.group(1), match.group(2), match.group(3)
    step = abs(int(by)) if by and int(by) else 1
    if first.isalpha() != last.isalpha():
        return None
    if first.isalpha():
        a, b = ord(first), ord(last)
        if abs(b - a) // step >= MAX_WORDS:
            raise TooManyWords(f"{{{text}}} makes more than {MAX_WORDS} words")
        return [chr(c) for c in range(a, b + (1 if b >= a else -1), step if b >= a else -step)]
    a, b = int(first), int(last)
    if abs(b - a) // step >= MAX_WORDS:
        raise TooManyWords(f"{{{text}}} makes more than {MAX_WORDS} words")
    padded = any(re.match(r"-?0\d", n) for n in (first, last))
    width = max(len(first), len(last)) if padded else 0
    numbers = range(a, b + (1 if b >= a else -1), step if b >= a else -step)
    return [_padded(n, width) for n in numbers]


def _padded(number: int, width: int) -> str:
    """``number`` zero-padded to ``width`` characters (a minus sign counts), as bash pads."""
    sign = "-" if number < 0 else ""
    return sign + str(abs(number)).zfill(max(0, width - len(sign)))
