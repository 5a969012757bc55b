"""Reading a whole file through the Read tool, page by page.

The Read tool returns numbered lines, at most one page per call, and says so in a note
(formats.paging); the offline roles take the numbers off (checking each) and read on until
they hold every line. A file that cannot be read whole (a
single line longer than a page) is :class:`Unreadable`: a review role reports it as a
blocker, an author fails; no role says "ok" about text it has not seen.
"""

from __future__ import annotations

from pipeline.formats.paging import NumberingError, parse_page
from pipeline.formats.textio import split_lines
from pipeline.offline.observe import Observations, Unreadable


def failed(result: str) -> bool:
    """Whether a tool's result is a refusal or an error rather than what was asked for."""
    return result.startswith(("refused:", "error:"))


def read_whole(obs: Observations, path: str) -> str:
    """The whole text of ``path``; raises :class:`Unreadable` when that is impossible."""
    offset, parts = 1, []
    while True:
        args: dict[str, object] = {"path": path} if offset == 1 else {"path": path, "offset": offset}
        result = obs.call("read", **args)
        if failed(result):
            raise Unreadable(path, result)
        try:
            page = parse_page(result, offset)
        except NumberingError as exc:
            raise Unreadable(path, str(exc)) from None
        if page.cut:
            raise Unreadable(path, f"line {page.first} is longer than one Read page; it was cut")
        if page.first != offset:
            raise Unreadable(path, f"asked for line {offset}, the Read tool returned from line {page.first}")
        parts.append(page.text)
        if page.next_offset is None:
            return "".join(parts)
        offset = page.next_offset


def read_lines(obs: Observations, path: str) -> list[str]:
    return split_lines(read_whole(obs, path))
