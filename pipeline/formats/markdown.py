"""Markdown block structure from markdown-it-py: headings and code regions with line numbers.

Only top-level ATX headings (``#`` .. ``######`` at block level 0) count as headings;
headings inside fenced or indented code, block quotes or lists do not. Line numbers are
1-based and come from markdown-it's token maps. An unterminated fence runs to the end of
the document, as CommonMark specifies.

Nothing is skipped in silence. markdown-it stops reading a document where its containers
(lists, list items, block quotes) nest ``maxNesting`` deep and drops everything after that
point; designloop raises that limit to ``MAX_NESTING``, far past any real document (a list
nested 128 levels), and refuses a document that reaches it (:class:`TooDeep`, exit 2, naming
the file and the line) instead of reading part of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token

from pipeline.errors import InputError

MAX_NESTING = 256
"""Containers (a list and each of its items, a block quote) nested this deep stop markdown-it:
a list 128 levels deep, 256 block quotes. No document anyone writes comes near it; a bound is
kept so that a hostile one costs nothing (and never exhausts the stack)."""
CONTAINERS = {"bullet_list_open": "list", "ordered_list_open": "list", "blockquote_open": "block quote"}


class TooDeep(InputError):
    """A document nested past ``MAX_NESTING``: read in part it would lose every block after the
    point, so it is not read at all."""


def checked(tokens: list[Token], path: Path | str | None = None) -> list[Token]:
    """``tokens`` when markdown-it read the whole document; :class:`TooDeep` (naming ``path``
    and the line where reading stopped) when it reached ``MAX_NESTING`` and skipped the rest."""
    open_kinds: list[str] = []
    for token in tokens:
        if token.nesting == -1 and open_kinds:
            open_kinds.pop()
        elif token.nesting == 1:
            open_kinds.append(CONTAINERS.get(token.type, ""))
            if token.level + 1 >= MAX_NESTING:
                line = token.map[0] + 1 if token.map else None
                lists = sum(1 for kind in open_kinds if kind == "list")
                quotes = sum(1 for kind in open_kinds if kind == "block quote")
                if quotes == 0:
                    what = f"list nested deeper than {(MAX_NESTING - 1) // 2} levels"
                elif lists == 0:
                    what = f"block quotes nested deeper than {MAX_NESTING - 1} levels"
                else:
                    what = f"lists ({lists}) and block quotes ({quotes}) nested deeper than designloop reads"
                raise TooDeep(
                    f"{what} ({MAX_NESTING} levels of lists, list items and block quotes at most): "
                    "reading on would skip the rest of the document, so none of it is read",
                    file=path,
                    line=line,
                    hint="flatten the nesting at this line (no real document needs it this deep)",
                )
    return tokens


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
    md = MarkdownIt("commonmark", {"maxNesting": MAX_NESTING})
    return md.disable(["inline", "text_join", "lheading", "reference"])


def parse_structure(text: str, lines: list[str], path: Path | str | None = None) -> Structure:
    """The document's headings and code lines; :class:`TooDeep` (naming ``path``) when it nests
    past what is read whole."""
    tokens = checked(_parser().parse(text), path)
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


def top_blocks(lines: list[str], path: Path | str | None = None) -> list[Block]:
    """The top-level blocks of ``lines`` (line numbers relative to the first line, 1-based)."""
    kinds = {"paragraph_open": "paragraph", "html_block": "html", "fence": "code", "code_block": "code"}
    out: list[Block] = []
    for token in checked(_parser().parse("\n".join(lines)), path):
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
        for token in checked(_parser().parse(text))
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
