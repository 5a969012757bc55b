"""Where the non-prose parts of a Markdown inline run are: code spans, inline HTML,
autolinks and bare URLs, link destinations and reference labels, images; and where each
link's text is. markdown-it's inline tokens carry no offsets, so the children are found in
order with a cursor over the source.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import ClassVar

from markdown_it.token import Token

URL_RE = re.compile(r"(?:https?|ftp)://[^\s<>\"'`)\]]+|www\.[\w-]+\.[^\s<>\"'`)\]]+")
BACKTICKS_RE = re.compile(r"`++")


def code_span_runs(text: str) -> list[tuple[int, int, int]]:
    """(start, end, fence length) of each inline code span of ``text``, as CommonMark pairs
    backticks: a run of backticks opens a span that the next run of the same length on the same
    line closes; a run that none closes is literal text. Linear in the text (each run is looked
    at once), where a pattern with a back-reference to the opening run backtracks over every
    way of splitting a long run of backticks."""
    runs: list[tuple[int, int, int]] = []
    line = seen = 0
    for match in BACKTICKS_RE.finditer(text):
        line += text.count("\n", seen, match.start())
        seen = match.start()
        runs.append((match.start(), match.end(), line))
    closer: list[int | None] = [None] * len(runs)
    later: dict[tuple[int, int], int] = {}
    for index in range(len(runs) - 1, -1, -1):
        start, end, row = runs[index]
        closer[index] = later.get((end - start, row))
        later[(end - start, row)] = index
    spans: list[tuple[int, int, int]] = []
    index = 0
    while index < len(runs):
        pair = closer[index]
        if pair is None:
            index += 1
            continue
        start, end, _ = runs[index]
        spans.append((start, runs[pair][1], end - start))
        index = pair + 1
    return spans


def _close_paren(text: str, at: int) -> int:
    """Index just past the ``)`` matching the ``(`` at ``at`` (or the text's end)."""
    depth = 0
    for index in range(at, len(text)):
        char = text[index]
        if char == "\\":
            continue
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return index + 1
    return len(text)


Masked = tuple[list[bool], list[tuple[int, int]], list[tuple[int, int, str]]]


class _Cursor:
    """A walk over an inline run's source, child token by child token: each kind of child
    moves the cursor past its source and masks what is not prose."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.masked = [False] * len(text)
        self.code: list[tuple[int, int]] = []
        self.links: list[tuple[int, int, str]] = []
        self.opened: list[tuple[int, str]] = []
        self.in_autolink = False

    def mask(self, a: int, b: int) -> None:
        for index in range(max(0, a), min(b, len(self.text))):
            self.masked[index] = True

    def step(self, child: Token) -> None:
        if self.in_autolink:
            self.in_autolink = child.type != "link_close"
            return
        if child.type == "link_open" and child.markup == "autolink":
            self.autolink()
            return
        handler = self.HANDLERS.get(child.type)
        if handler is not None:
            handler(self, child)

    def text_run(self, child: Token) -> None:
        at = self.text.find(child.content, self.pos) if child.content else -1
        if at >= 0:
            self.pos = at + len(child.content)

    def code_span(self, child: Token) -> None:
        fence = re.escape(child.markup)
        pattern = re.compile(rf"(?<!`){fence}(?!`)(.*?)(?<!`){fence}(?!`)", re.DOTALL)
        match = pattern.search(self.text, self.pos)
        if match:
            self.mask(match.start(), match.end())
            self.code.append(match.span(1))
            self.pos = match.end()

    def html(self, child: Token) -> None:
        at = self.text.find(child.content, self.pos)
        if at >= 0:
            self.mask(at, at + len(child.content))
            self.pos = at + len(child.content)

    def autolink(self) -> None:
        at = self.text.find("<", self.pos)
        end = self.text.find(">", at + 1) if at >= 0 else -1
        if at >= 0 and end >= 0:
            self.mask(at, end + 1)
            self.pos = end + 1
        self.in_autolink = True

    def link_open(self, child: Token) -> None:
        at = self.text.find("[", self.pos)
        if at >= 0:
            self.pos = at + 1
            self.opened.append((self.pos, str(child.attrs.get("href", ""))))

    def link_close(self, child: Token) -> None:
        text = self.text
        at = text.find("]", self.pos)
        if at < 0:
            return
        if self.opened:
            begin, href = self.opened.pop()
            self.links.append((begin, at, href))
        self.pos = at + 1
        if text.startswith("(", self.pos):
            end = _close_paren(text, self.pos)
            self.mask(self.pos, end)
            self.pos = end
        elif text.startswith("[", self.pos):
            end = text.find("]", self.pos)
            if end >= 0:
                self.mask(self.pos, end + 1)
                self.pos = end + 1

    def image(self, child: Token) -> None:
        text = self.text
        at = text.find("![", self.pos)
        if at < 0:
            return
        close = text.find("]", at)
        end = close + 1
        if close >= 0 and text.startswith("(", close + 1):
            end = _close_paren(text, close + 1)
        elif close >= 0 and text.startswith("[", close + 1):
            end = text.find("]", close + 1) + 1 or end
        self.mask(at, end)
        self.pos = end

    def line_break(self, child: Token) -> None:
        at = self.text.find("\n", self.pos)
        if at >= 0:
            self.pos = at + 1

    HANDLERS: ClassVar[dict[str, Callable[[_Cursor, Token], None]]] = {
        "text": text_run,
        "code_inline": code_span,
        "html_inline": html,
        "link_open": link_open,
        "link_close": link_close,
        "image": image,
        "softbreak": line_break,
        "hardbreak": line_break,
    }


def mask_inline(text: str, children: list[Token]) -> Masked:
    """Which characters of ``text`` are not prose, and where the code spans' contents are.

    markdown-it's inline tokens carry no offsets, so the children are found in order with a
    cursor over the source; a construct that cannot be found masks nothing.
    """
    cursor = _Cursor(text)
    for child in children:
        cursor.step(child)
    for match in URL_RE.finditer(text):
        cursor.mask(match.start(), match.end())
    return cursor.masked, cursor.code, cursor.links
