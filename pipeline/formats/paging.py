"""The Read tool's result: numbered lines and the paging note.

Every line comes back as ``<number>\t<text>``, numbered as the file numbers it (1-based,
lines split at ``\n``, a stamp on line 1 included), so a reader cites the number it sees and
copies a quote from the text after the tab. A Read result that is not the whole file ends
with one note line, ``[lines X-Y of N; call again with offset=Y+1 to read on]`` (or ``[lines
X-Y of N]`` when Y is the last line). A line longer than a whole page comes back cut, with
``[line X of N is cut at C characters]``. :func:`parse_page` reads a result back into the
file's own text, checking every number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NOTE_RE = re.compile(
    r"\n?\[lines (?P<first>\d+)-(?P<last>\d+) of (?P<total>\d+)"
    r"(?:; call again with offset=(?P<next>\d+) to read on)?\]\n?$"
)
CUT_RE = re.compile(r"\n\[line (?P<line>\d+) of (?P<total>\d+) is cut at (?P<size>\d+) characters\]$")


def file_lines(text: str) -> list[str]:
    """The file's lines with their ends, split at ``\n`` only (as ``grep -n`` and the design
    formats count them): a final newline does not add a line."""
    lines = text.split("\n")
    last = lines.pop()
    out = [line + "\n" for line in lines]
    return [*out, last] if last else out


def numbered(lines: list[str], first: int) -> str:
    """``lines`` (with their ends) as ``<number>\t<text>`` lines, the first numbered ``first``."""
    return "".join(f"{number}\t{line}" for number, line in enumerate(lines, start=first))


class NumberingError(ValueError):
    """A Read result whose lines do not carry the numbers they should."""


def unnumbered(text: str, first: int) -> str:
    """The file's own text of numbered lines that start at line ``first``."""
    out = []
    for number, line in enumerate(file_lines(text), start=first):
        prefix = f"{number}\t"
        if not line.startswith(prefix):
            raise NumberingError(f"line {number} of a Read result does not start with {prefix!r}")
        out.append(line[len(prefix) :])
    return "".join(out)


def page_note(first: int, last: int, total: int) -> str:
    """The line that ends a partial Read."""
    if last >= total:
        return f"[lines {first}-{last} of {total}]"
    return f"[lines {first}-{last} of {total}; call again with offset={last + 1} to read on]"


def cut_note(line: int, total: int, size: int) -> str:
    return f"[line {line} of {total} is cut at {size} characters]"


@dataclass(frozen=True, slots=True)
class Page:
    text: str
    """The file's lines in this page, without the note."""
    first: int
    last: int
    total: int
    cut: bool = False
    """A single over-long line came back cut: the file cannot be read whole."""

    @property
    def next_offset(self) -> int | None:
        return self.last + 1 if self.last < self.total else None


def parse_page(result: str, offset: int = 1) -> Page:
    """A Read result as a page of the file's own text (numbers removed, each one checked); a
    result with no note is the whole file from ``offset``."""
    cut = CUT_RE.search(result)
    if cut:
        line, total = int(cut.group("line")), int(cut.group("total"))
        return Page(unnumbered(result[: cut.start()], line), line, line, total, cut=True)
    note = NOTE_RE.search(result)
    if note:
        first = int(note["first"])
        text = result[: note.start()]
        text = unnumbered(text + "\n" if text else text, first)
        return Page(text, first, int(note["last"]), int(note["total"]))
    text = unnumbered(result, offset)
    count = len(file_lines(text))
    return Page(text, offset, offset + count - 1, offset + count - 1)
