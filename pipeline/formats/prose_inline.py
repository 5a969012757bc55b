"""Where the non-prose parts of a Markdown inline run are: code spans, inline HTML,
autolinks and bare URLs, link destinations and reference labels, images; and where each
link's text is. markdown-it's inline tokens carry no offsets, so the children are found in
order with a cursor over the source.
"""

from __future__ import annotations

import re

from markdown_it.token import Token

URL_RE = re.compile(r"(?:https?|ftp)://[^\s<>\"'`)\]]+|www\.[\w-]+\.[^\s<>\"'`)\]]+")


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


def mask_inline(text: str, children: list[Token]) -> Masked:
    """Which characters of ``text`` are not prose, and where the code spans' contents are.

    markdown-it's inline tokens carry no offsets, so the children are found in order with a
    cursor over the source; a construct that cannot be found masks nothing.
    """
    masked = [False] * len(text)
    code: list[tuple[int, int]] = []
    links: list[tuple[int, int, str]] = []
    opened: list[tuple[int, str]] = []
    pos = 0
    skip_autolink = False

    def mask(a: int, b: int) -> None:
        for index in range(max(0, a), min(b, len(text))):
            masked[index] = True

    for child in children:
        kind = child.type
        if skip_autolink:
            if kind == "link_close":
                skip_autolink = False
            continue
        if kind == "text":
            at = text.find(child.content, pos) if child.content else -1
            if at >= 0:
                pos = at + len(child.content)
        elif kind == "code_inline":
            fence = re.escape(child.markup)
            match = re.compile(rf"(?<!`){fence}(?!`)(.*?)(?<!`){fence}(?!`)", re.DOTALL).search(text, pos)
            if match:
                mask(match.start(), match.end())
                code.append(match.span(1))
                pos = match.end()
        elif kind == "html_inline":
            at = text.find(child.content, pos)
            if at >= 0:
                mask(at, at + len(child.content))
                pos = at + len(child.content)
        elif kind == "link_open" and child.markup == "autolink":
            at = text.find("<", pos)
            end = text.find(">", at + 1) if at >= 0 else -1
            if at >= 0 and end >= 0:
                mask(at, end + 1)
                pos = end + 1
            skip_autolink = True
        elif kind == "link_open":
            at = text.find("[", pos)
            if at >= 0:
                pos = at + 1
                opened.append((pos, str(child.attrs.get("href", ""))))
        elif kind == "link_close":
            at = text.find("]", pos)
            if at < 0:
                continue
            if opened:
                begin, href = opened.pop()
                links.append((begin, at, href))
            pos = at + 1
            if text.startswith("(", pos):
                end = _close_paren(text, pos)
                mask(pos, end)
                pos = end
            elif text.startswith("[", pos):
                end = text.find("]", pos)
                if end >= 0:
                    mask(pos, end + 1)
                    pos = end + 1
        elif kind == "image":
            at = text.find("![", pos)
            if at >= 0:
                close = text.find("]", at)
                end = close + 1
                if close >= 0 and text.startswith("(", close + 1):
                    end = _close_paren(text, close + 1)
                elif close >= 0 and text.startswith("[", close + 1):
                    end = text.find("]", close + 1) + 1 or end
                mask(at, end)
                pos = end
        elif kind in ("softbreak", "hardbreak"):
            at = text.find("\n", pos)
            if at >= 0:
                pos = at + 1
    for match in URL_RE.finditer(text):
        mask(match.start(), match.end())
    return masked, code, links
