"""The Read tool's paging note: how a partial read says which lines it holds and where to go on.

A Read result that is not the whole file ends with one note line, ``[lines X-Y of N; call
again with offset=Y+1 to read on]`` (or ``[lines X-Y of N]`` when Y is the last line). A line
longer than a whole page comes back cut, with ``[line X of N is cut at C characters]``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NOTE_RE = re.compile(
    r"\n?\[lines (?P<first>\d+)-(?P<last>\d+) of (?P<total>\d+)"
    r"(?:; call again with offset=(?P<next>\d+) to read on)?\]\n?$"
)
CUT_RE = re.compile(r"\n\[line (?P<line>\d+) of (?P<total>\d+) is cut at (?P<size>\d+) characters\]$")


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
    """A Read result as a page; a result with no note is the whole file from ``offset``."""
    cut = CUT_RE.search(result)
    if cut:
        line, total = int(cut.group("line")), int(cut.group("total"))
        return Page(result[: cut.start()], line, line, total, cut=True)
    note = NOTE_RE.search(result)
    if note:
        text = result[: note.start()]
        return Page(text + "\n" if text else text, int(note["first"]), int(note["last"]), int(note["total"]))
    count = len(result.splitlines())
    return Page(result, offset, offset + count - 1, offset + count - 1)
