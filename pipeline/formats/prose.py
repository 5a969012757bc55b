"""The Markdown-aware prose view every offline role reads: what is prose, and exactly where.

A document is parsed once with markdown-it-py (CommonMark, tables, YAML front matter). Each
paragraph, heading and table cell becomes a :class:`Block` whose ``text`` is the block's
source, line by line, with container prefixes (list markers, block-quote markers, indents)
left out; every character of ``text`` is the character at a known line and column of the
source. ``prose`` is the same string with every character that is not prose replaced by
:data:`MASK`: inline code, inline HTML, autolinks and bare URLs, link destinations and
reference labels, images. Offsets line up, so a match in ``prose`` is quoted from ``text``
and located with :meth:`Block.locate`.

What is not prose stays visible to the rules that need it: fenced and indented code, HTML
blocks (template comments), link reference definitions and the front matter are listed on
the view with their lines, and the inline code spans on each block.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from functools import cache

from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.front_matter import front_matter_plugin

from pipeline.formats.markdown import MAX_NESTING, checked
from pipeline.formats.prose_inline import mask_inline
from pipeline.formats.textio import split_lines

MASK = "\ue000"
"""Stands in for each character that is not prose (a private-use character: no word, no space)."""

REF_DEF_RE = re.compile(r"^ {0,3}\[(?P<label>[^\]]+)\]:\s*(?P<url>\S+)")
FULL_REFERENCE_RE = re.compile(r"\]\[(?P<label>[^\[\]\n]{1,80})\]")
"""The label of a full reference link, ``[text][label]``."""
ALERT_RE = re.compile(r"^\[!(?:NOTE|TIP|IMPORTANT|WARNING|CAUTION)\]", re.IGNORECASE)
"""GitHub's alert marker opening a block quote (``> [!NOTE]``): markup, not prose."""


@dataclass(frozen=True, slots=True)
class Block:
    """One paragraph, heading or table cell, with its exact place in the source."""

    kind: str
    """``paragraph``, ``heading`` or ``cell``."""
    start: int
    end: int
    text: str
    prose: str
    starts: tuple[int, ...]
    """Offset in ``text`` where each source line of the block begins."""
    columns: tuple[int, ...]
    """0-based source column of each of those offsets."""
    level: int = 0
    """The heading level (headings only)."""
    in_list: bool = False
    in_quote: bool = False
    code: tuple[tuple[int, int], ...] = ()
    """Offsets of each inline code span's content in ``text``."""
    links: tuple[tuple[int, int, str], ...] = ()
    """Each link's text (start and end offsets in ``text``) and its destination."""

    def locate(self, offset: int) -> tuple[int, int]:
        """The 1-based source line and 0-based column of ``text[offset]``."""
        index = max(0, bisect.bisect_right(self.starts, offset) - 1)
        return self.start + index, self.columns[index] + offset - self.starts[index]

    def line_at(self, offset: int) -> int:
        return self.locate(offset)[0]

    def quote(self, start: int, end: int, limit: int = 100) -> str:
        """An exact excerpt of one source line: ``text[start:end]`` cut at the line's end."""
        start = max(0, start)
        while start < end - 1 and self.text[start].isspace():
            start += 1
        piece = self.text[start:end].split("\n", 1)[0][:limit]
        return piece.strip() or self.text[start : start + 1]

    def link_at(self, offset: int) -> str | None:
        """The destination of the link whose text holds ``offset``, if any (the links are in
        the order of the text and never nest: a bisection)."""
        index = bisect.bisect_right(self.links, offset, key=lambda link: link[0]) - 1
        if index >= 0 and offset < self.links[index][1]:
            return self.links[index][2]
        return None

    def code_spans(self) -> list[str]:
        return [self.text[a:b] for a, b in self.code]

    @property
    def words(self) -> list[str]:
        return words_of(self.prose)


def words_of(prose: str) -> list[str]:
    """Words of a masked prose string; each run of non-prose counts as one word."""
    return WORD_OR_MASK_RE.findall(prose)


WORD_OR_MASK_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’\-]*|" + MASK + "+")


@dataclass(frozen=True, slots=True)
class Region:
    start: int
    end: int
    info: str = ""


@dataclass(frozen=True, slots=True)
class HeadingRef:
    level: int
    text: str
    line: int
    anchor: str


@dataclass(slots=True)
class ProseView:
    lines: list[str]
    blocks: list[Block] = field(default_factory=list)
    code: list[Region] = field(default_factory=list)
    """Fenced (``info`` is the fence's info string) and indented code blocks."""
    html: list[Region] = field(default_factory=list)
    references: dict[str, tuple[int, str]] = field(default_factory=dict)
    """Link reference definitions: normalised label -> (line, destination)."""
    front_matter: Region | None = None
    headings: list[HeadingRef] = field(default_factory=list)
    _section_lines: list[int] = field(default_factory=list)
    _starts: list[int] = field(default_factory=list)
    _heads: list[int] = field(default_factory=list)
    _section_names: list[str] = field(default_factory=list)
    _parents: list[int] = field(default_factory=list)
    """For each heading, the index of the nearest heading before it of a higher level (-1)."""

    def prose_blocks(self, start: int = 1, end: int | None = None) -> list[Block]:
        """Blocks starting between two lines (a bisection over the block starts)."""
        stop = len(self.lines) if end is None else end
        starts = self._starts  # filled by parse_prose; nothing changes a view afterwards
        return self.blocks[bisect.bisect_left(starts, start) : bisect.bisect_right(starts, stop)]

    def paragraphs(self, start: int = 1, end: int | None = None) -> list[Block]:
        return [b for b in self.prose_blocks(start, end) if b.kind != "heading"]

    def heading_before(self, line: int) -> HeadingRef | None:
        """The last heading (any level) above ``line``."""
        index = bisect.bisect_left(self._heads, line)
        return self.headings[index - 1] if index > 0 else None

    def non_prose_lines(self) -> set[int]:
        """Lines of code, HTML blocks, link definitions and front matter."""
        out: set[int] = set()
        for region in [*self.code, *self.html]:
            out.update(range(region.start, region.end + 1))
        if self.front_matter is not None:
            out.update(range(self.front_matter.start, self.front_matter.end + 1))
        out.update(line for line, _ in self.references.values())
        return out

    def block_at(self, line: int) -> Block | None:
        """The first block holding ``line`` (blocks are in the order of the text; the cells of
        one table row share a line)."""
        index = bisect.bisect_right(self._starts, line) - 1
        if index < 0:
            return None
        first = self.blocks[bisect.bisect_left(self._starts, self._starts[index])]
        return first if first.end >= line else None

    def enclosing(self, line: int) -> list[HeadingRef]:
        """The headings ``line`` lies under: the last heading at or above it, and each heading
        of a higher level that holds that one (a walk up precomputed parents)."""
        index = bisect.bisect_right(self._heads, line) - 1
        out: list[HeadingRef] = []
        while index >= 0:
            out.append(self.headings[index])
            index = self._parents[index]
        return out

    def section_at(self, line: int) -> str | None:
        """The ``#``/``##`` heading the line falls under (a bisection, not a scan)."""
        index = bisect.bisect_right(self._section_lines, line) - 1
        return self._section_names[index] if index >= 0 else None

    def anchors(self) -> set[str]:
        return {h.anchor for h in self.headings}

    def code_text(self) -> str:
        """Every code block's lines and every inline code span, for rules that ask what is code."""
        parts = ["\n".join(self.lines[r.start - 1 : r.end]) for r in self.code]
        parts += [span for b in self.blocks for span in b.code_spans()]
        return "\n".join(parts)


@cache
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"maxNesting": MAX_NESTING}).enable("table").use(front_matter_plugin)


def slug(text: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def _column(source: str, piece: str) -> int | None:
    """Where ``piece`` (a line of a block's content) sits in its source line."""
    if not piece:
        return len(source.rstrip())
    for at in (len(source) - len(piece), len(source.rstrip()) - len(piece)):
        if at >= 0 and source[at : at + len(piece)] == piece:
            return at
    found = source.find(piece)
    return found if found >= 0 else None


def _block(
    lines: list[str],
    kind: str,
    first: int,
    content: str,
    inline: Token,
    **extra: object,
) -> Block | None:
    """A block from its inline content and the 1-based line it starts on."""
    pieces = content.split("\n")
    texts: list[str] = []
    starts: list[int] = []
    columns: list[int] = []
    bad_lines: list[int] = []
    offset = 0
    for index, piece in enumerate(pieces):
        number = first + index
        source = lines[number - 1] if number - 1 < len(lines) else ""
        column = _column(source, piece)
        if column is None:
            bad_lines.append(index)
            column = 0
            piece = " " * len(piece)
        texts.append(piece)
        starts.append(offset)
        columns.append(column)
        offset += len(piece) + 1
    text = "\n".join(texts)
    masked, code, links = mask_inline(text, inline.children or [])
    for index in bad_lines:  # a line that cannot be located exactly is not prose
        for at in range(starts[index], starts[index] + len(texts[index])):
            masked[at] = True
    alert = ALERT_RE.match(text) if extra.get("in_quote") else None
    if alert:
        masked[: alert.end()] = [True] * alert.end()
    prose = "".join(MASK if m else c for c, m in zip(text, masked, strict=True))
    if not prose.strip(" \n" + MASK):
        return None
    return Block(
        kind=kind,
        start=first,
        end=first + len(pieces) - 1,
        text=text,
        prose=prose,
        starts=tuple(starts),
        columns=tuple(columns),
        code=tuple(code),
        links=tuple(links),
        **extra,  # type: ignore[arg-type]
    )


def _cell_block(lines: list[str], line: int, inline: Token, cursor: int) -> tuple[Block | None, int]:
    """A table cell: its content found on the row's line, left to right."""
    source = lines[line - 1] if line - 1 < len(lines) else ""
    content = inline.content
    at = source.find(content, cursor) if content else -1
    if at < 0:
        return None, cursor
    text = content
    masked, code, links = mask_inline(text, inline.children or [])
    prose = "".join(MASK if m else c for c, m in zip(text, masked, strict=True))
    end = at + len(content)
    if not prose.strip(" " + MASK):
        return None, end
    block = Block("cell", line, line, text, prose, (0,), (at,), code=tuple(code), links=tuple(links))
    return block, end


def _non_prose(view: ProseView, token: Token) -> bool:
    """Front matter, code and HTML blocks go on the view's lists; True when ``token`` was one."""
    assert token.map is not None
    first, last = token.map[0] + 1, token.map[1]
    if token.type == "front_matter":
        view.front_matter = Region(first, last)
    elif token.type == "fence":
        view.code.append(Region(first, last, token.info.strip()))
    elif token.type == "code_block":
        view.code.append(Region(first, last))
    elif token.type == "html_block":
        view.html.append(Region(first, last))
    else:
        return False
    return True


def _heading(view: ProseView, lines: list[str], token: Token, inline: Token, in_list: bool) -> None:
    assert token.map is not None
    level = int(token.tag[1])
    line = token.map[0] + 1
    view.headings.append(HeadingRef(level, inline.content.strip(), line, slug(inline.content)))
    if token.level == 0 and level <= 2:
        view._section_lines.append(line)
        view._section_names.append(inline.content.strip())
    source = lines[line - 1] if line - 1 < len(lines) else ""
    column = source.find(inline.content) if inline.content else -1
    if column >= 0:
        block = _block(lines, "heading", line, inline.content, inline, level=level, in_list=in_list)
        if block is not None:
            view.blocks.append(block)


def _paragraph(view: ProseView, lines: list[str], token: Token, inline: Token, containers: list[str]) -> None:
    assert token.map is not None
    block = _block(
        lines,
        "paragraph",
        token.map[0] + 1,
        inline.content,
        inline,
        in_list=any(c != "blockquote_open" for c in containers),
        in_quote="blockquote_open" in containers,
    )
    if block is not None:
        view.blocks.append(block)


def _cell(
    view: ProseView, lines: list[str], tokens: list[Token], index: int, row_cursor: dict[int, int]
) -> None:
    row = next((t for t in reversed(tokens[:index]) if t.type == "tr_open"), None)
    if row is None or row.map is None:
        return
    line = row.map[0] + 1
    block, row_cursor[line] = _cell_block(lines, line, tokens[index], row_cursor.get(line, 0))
    if block is not None:
        view.blocks.append(block)


OPENS = ("bullet_list_open", "ordered_list_open", "blockquote_open")
CLOSES = ("bullet_list_close", "ordered_list_close", "blockquote_close")


def parse_prose(text: str, lines: list[str] | None = None) -> ProseView:
    """The prose view of a Markdown document (``lines`` default to ``text`` split on newlines)."""
    if lines is None:
        lines = split_lines(text)
    env: dict[str, object] = {"references": _unseen_references(text)}
    tokens = checked(_parser().parse(text, env))
    view = ProseView(lines=lines)
    containers: list[str] = []
    row_cursor: dict[int, int] = {}
    for index, token in enumerate(tokens):
        kind = token.type
        if kind in OPENS:
            containers.append(kind)
        elif kind in CLOSES and containers:
            containers.pop()
        if kind == "inline" and tokens[index - 1].type in ("th_open", "td_open"):
            _cell(view, lines, tokens, index, row_cursor)
        elif token.map is None or _non_prose(view, token):
            continue
        elif kind == "heading_open":
            _heading(view, lines, token, tokens[index + 1], bool(containers))
        elif kind == "paragraph_open":
            _paragraph(view, lines, token, tokens[index + 1], containers)
    _references(view, env)
    view._starts = [b.start for b in view.blocks]
    view._heads = [h.line for h in view.headings]
    view._parents = _parents(view.headings)
    return view


def _parents(headings: list[HeadingRef]) -> list[int]:
    """Each heading's nearest preceding heading of a higher level (-1 for none), in one pass."""
    parents: list[int] = []
    stack: list[int] = []
    for index, heading in enumerate(headings):
        while stack and headings[stack[-1]].level >= heading.level:
            stack.pop()
        parents.append(stack[-1] if stack else -1)
        stack.append(index)
    return parents


def _unseen_references(text: str) -> dict[str, dict[str, str]]:
    """Full reference links whose definition is not in the text (a reviewer that reads one
    slice of a design does not see the definitions at its end) are still links: their text is
    link text wherever the definition sits."""
    from markdown_it.common.utils import normalizeReference

    labels = {normalizeReference(m.group("label")) for m in FULL_REFERENCE_RE.finditer(text)}
    defined = {
        normalizeReference(m.group("label")) for line in text.split("\n") if (m := REF_DEF_RE.match(line))
    }
    return {label: {"title": "", "href": ""} for label in labels - defined if label.strip()}


def _references(view: ProseView, env: dict[str, object]) -> None:
    """Link reference definitions with their lines (markdown-it keeps only their labels)."""
    known = env.get("references")
    labels = {str(k).lower() for k in known} if isinstance(known, dict) else set()
    covered = view.non_prose_lines() | {line for b in view.blocks for line in range(b.start, b.end + 1)}
    for number, line in enumerate(view.lines, start=1):
        if number in covered:
            continue
        match = REF_DEF_RE.match(line)
        if match and " ".join(match.group("label").split()).lower() in labels:
            view.references[" ".join(match.group("label").split()).lower()] = (number, match.group("url"))
