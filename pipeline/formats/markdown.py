"""Markdown block structure from markdown-it-py: headings and code regions with line numbers.

Only top-level ATX headings (``#`` .. ``######`` at block level 0) count as headings;
headings inside fenced or indented code, block quotes or lists do not. Line numbers are
1-based and come from markdown-it's token maps. An unterminated fence runs to the end of
the document, as CommonMark specifies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from markdown_it import MarkdownIt


@dataclass(frozen=True, slots=True)
class Heading:
    level: int
    text: str
    line: int


@dataclass(frozen=True, slots=True)
class Structure:
    lines: list[str]
    headings: list[Heading]
    code_lines: frozenset[int]
    """1-based numbers of lines inside fenced or indented code, fence markers included."""

    def in_code(self, line: int) -> bool:
        return line in self.code_lines


@cache
def _parser() -> MarkdownIt:
    # Inline parsing is not needed (heading text is the inline token's raw content), and
    # setext headings and link reference definitions play no part in the contracts.
    return MarkdownIt("commonmark").disable(["inline", "text_join", "lheading", "reference"])


def parse_structure(text: str, lines: list[str]) -> Structure:
    tokens = _parser().parse(text)
    headings: list[Heading] = []
    code: set[int] = set()
    for index, token in enumerate(tokens):
        if token.type in ("fence", "code_block") and token.map is not None:
            start, end = token.map
            code.update(range(start + 1, end + 1))
        elif (
            token.type == "heading_open"
            and token.level == 0
            and token.markup.startswith("#")
            and token.map is not None
        ):
            inline = tokens[index + 1]
            headings.append(
                Heading(level=int(token.tag[1]), text=inline.content.strip(), line=token.map[0] + 1)
            )
    return Structure(lines=lines, headings=headings, code_lines=frozenset(code))


@dataclass(frozen=True, slots=True)
class Block:
    """A top-level block of a run of lines: ``item`` (a top-level list item, nested lists
    included), ``paragraph``, ``html``, ``code`` or ``other``; lines 1-based, inclusive."""

    kind: str
    start: int
    end: int


def top_blocks(lines: list[str]) -> list[Block]:
    """The top-level blocks of ``lines`` (line numbers relative to the first line, 1-based)."""
    kinds = {"paragraph_open": "paragraph", "html_block": "html", "fence": "code", "code_block": "code"}
    out: list[Block] = []
    for token in _parser().parse("\n".join(lines)):
        if token.map is None:
            continue
        start, end = token.map[0] + 1, token.map[1]
        if token.type == "list_item_open" and token.level == 1:
            out.append(Block("item", start, end))
        elif token.level == 0 and token.type in kinds:
            out.append(Block(kinds[token.type], start, end))
        elif token.level == 0 and token.type in ("blockquote_open", "hr", "heading_open"):
            out.append(Block("other", start, end))
    return out


def code_blocks(text: str) -> list[tuple[int, int]]:
    """Each fenced or indented code block's first and last line (1-based, inclusive; a
    fence's markers included, an unterminated fence running to the end)."""
    return [
        (token.map[0] + 1, token.map[1])
        for token in _parser().parse(text)
        if token.type in ("fence", "code_block") and token.map is not None
    ]


FIELD_RE = re.compile(r"^\*\*(?P<name>[A-Za-z][^*:\n]*?):\*\*\s*(?P<value>.*)$")


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    value: str
    line: int


def parse_fields(structure: Structure, start: int, end: int) -> dict[str, Field]:
    """Bold ``**Name:** value`` fields between lines ``start`` and ``end`` (inclusive).

    A field's value runs on over the following lines until the next field; unknown
    fields are kept. Lines inside code are skipped.
    """
    fields: dict[str, Field] = {}
    current: str | None = None
    values: dict[str, list[str]] = {}
    for number in range(start, end + 1):
        if structure.in_code(number):
            continue
        raw = structure.lines[number - 1]
        match = FIELD_RE.match(raw.strip())
        if match:
            current = match.group("name").strip()
            values[current] = [match.group("value").strip()]
            fields[current] = Field(current, "", number)
        elif current is not None:
            values[current].append(raw.strip())
    return {name: Field(name, "\n".join(values[name]).strip(), field.line) for name, field in fields.items()}
