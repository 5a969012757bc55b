"""References in a design that must land: ``§`` references and "see the X section" that name
a heading, and "described below" and its kin, whose subject must come up after them. Part of
the comprehension reviewer (offline.comprehension); one pass over the blocks."""

from __future__ import annotations

import bisect
import re
from typing import Any

from pipeline.formats.prose import Block, ProseView
from pipeline.offline.deadline import checkpoint
from pipeline.offline.report import Report
from pipeline.offline.text import content_words, lexicon, sentence_spans

HEADING_NORM_RE = re.compile(r"[`*_\"'“”]")


def _singular(word: str) -> str:
    """A word's singular for matching a name to a heading: "Caveats" is "the Caveat section"."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _norm(name: str) -> str:
    """A heading or a name for one, compared: case, markup and number aside."""
    return " ".join(_singular(w) for w in HEADING_NORM_RE.sub("", name).lower().split())


NAMED_SECTION_REF_RE = re.compile(r'\b(?:see|in) the "?(?P<name>[A-Z][\w\- ]{2,60}?)"? section\b')
SECTION_REF_RE = re.compile(r'§\s*"(?P<q>[^"]+)"|§(?P<bare>[A-Za-z][\w\- ]*[\w])')


def _external_link_before(block: Block, offset: int) -> bool:
    """The sentence names an outside page before the reference (its section is there)."""
    return any(end <= offset and not href.startswith("#") for _, end, href in block.links)


SUBTITLE_RE = re.compile(r"(?<!\s)\s*(?:\([^()]*+\)|(?::|\s[-—–]+\s).*)$")
"""A heading's parenthetical or subtitle, after a colon or a spaced dash (matched from the start
of the spaces before it only: from every space of a long run it was quadratic)."""
SECTION_NUMBER_RE = re.compile(r"^\s*(?:\d+(?:\.\d+)*\.?|[A-Z]\.|[IVX]+\.)\s+(?=\S)")
"""A heading's section number: "5 Goals", "2.1 Design", "3. Risks", "B. Appendix", "IV. Plan"."""


def heading_names(text: str) -> set[str]:
    """The names a reference may call a heading by: the whole heading, and the heading
    without its parenthetical or subtitle ("SDK Impact (a preview of SwiftUI interaction)"
    is "the SDK Impact section"; "Part 2: Detailed design" is also "Part 2"; "Summary -
    Serve gRPC Proxy" is a Summary), each in the singular ("Caveats" is "the Caveat section"),
    and each without the heading's section number ("5 Goals" is Goals)."""
    names: set[str] = set()
    for form in (text, SECTION_NUMBER_RE.sub("", text)):
        names.add(_norm(form))
        names.add(_norm(SUBTITLE_RE.sub("", form)))
    return names - {""} or {_norm(text)}


class HeadingNames:
    """Every name the document's headings may be called by, sorted, so a heading that starts
    with a name is found by bisection (a scan of the names per reference was quadratic)."""

    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.ordered = sorted(names)

    def starts_with(self, prefix: str) -> bool:
        index = bisect.bisect_left(self.ordered, prefix)
        return index < len(self.ordered) and self.ordered[index].startswith(prefix)


def names_heading(name: str, names: HeadingNames) -> bool:
    """A name for a section lands on a heading: it is one of the heading's names, or the
    heading starts with it ("the Security section" for "Security Considerations")."""
    wanted = _norm(name)
    return bool(wanted) and (wanted in names.names or names.starts_with(wanted + " "))


def dangling_refs(view: ProseView, report: Report) -> None:
    names = HeadingNames({name for h in view.headings for name in heading_names(h.text)})
    anchors = view.anchors()

    def dangling(block: Block, start: int, end: int, subject: str, message: str, fix: str) -> None:
        line = block.line_at(start)
        report.add("cr-dangling-ref", subject, "should-fix", line, block.quote(start, end), message, fix)

    last = _last_seen(view)
    after = Following(view)
    for index, block in enumerate(view.blocks):
        for match in SECTION_REF_RE.finditer(block.prose):
            target = (match.group("q") or match.group("bare") or "").strip()
            if not names_heading(target, names):
                dangling(
                    block,
                    match.start(),
                    match.end(),
                    match.group(0),
                    f"reference {match.group(0)} names no section",
                    "point it at an existing section heading, or remove it",
                )
        for match in NAMED_SECTION_REF_RE.finditer(block.prose):
            href = block.link_at(match.start("name"))
            if href is not None and (not href.startswith("#") or href[1:] in anchors):
                continue
            if _external_link_before(block, match.start()) or names_heading(match.group("name"), names):
                continue
            dangling(
                block,
                match.start(),
                match.end(),
                match.group(0),
                f"'{match.group(0)}': there is no '{match.group('name').strip()}' section",
                "name an existing section, or add the section",
            )
        _pointers(after, block, index, last, dangling)


def _last_seen(view: ProseView) -> dict[str, int]:
    """The index of the last block each content word appears in (one pass)."""
    last: dict[str, int] = {}
    for index, block in enumerate(view.blocks):
        for word in content_words(block.prose):
            last[word] = index
    return last


CLAUSE_RE = re.compile(r"[,;:()\[\]—–]|\s-\s")
FIGURE_RE = re.compile(r"^\s*(?:[-*+]\s+)?!\[|<(?:img|figure|picture|svg)\b", re.IGNORECASE)
"""A line that shows a figure: a Markdown image, or an HTML image or figure."""
NEXT_BLOCKS = 3


class Following:
    """What follows each block, computed once for the document, so that a pointer's checks
    cost the same however many pointers there are (scanning the blocks after each pointer was
    quadratic): the next heading, the next block outside a quote, the next table cell and the
    next list item after each block; where the code blocks and the figures are; and, per
    block, its sentences, its clause joints and its content words."""

    def __init__(self, view: ProseView) -> None:
        self.view = view
        blocks = view.blocks
        end = len(blocks)
        self.heading, self.unquoted, self.cell, self.item = [end] * end, [end] * end, [end] * end, [end] * end
        heading = unquoted = cell = item = end
        for index in range(end - 1, -1, -1):
            self.heading[index], self.unquoted[index], self.cell[index], self.item[index] = (
                heading,
                unquoted,
                cell,
                item,
            )
            block = blocks[index]
            heading = index if block.kind == "heading" else heading
            unquoted = index if not block.in_quote else unquoted
            cell = index if block.kind == "cell" else cell
            item = index if block.kind == "cell" or block.in_list else item
        self.code_starts = sorted(region.start for region in view.code)
        self.figures = [n for n, line in enumerate(view.lines, start=1) if FIGURE_RE.search(line)]
        self._spans: dict[int, list[tuple[int, int]]] = {}
        self._cuts: dict[int, list[int]] = {}
        self._words: dict[int, set[str]] = {}

    def spans(self, index: int) -> list[tuple[int, int]]:
        if index not in self._spans:
            self._spans[index] = sentence_spans(self.view.blocks[index].prose)
        return self._spans[index]

    def cuts(self, index: int) -> list[int]:
        if index not in self._cuts:
            self._cuts[index] = [m.start() for m in CLAUSE_RE.finditer(self.view.blocks[index].prose)]
        return self._cuts[index]

    def words(self, index: int) -> set[str]:
        if index not in self._words:
            self._words[index] = content_words(self.view.blocks[index].prose)
        return self._words[index]

    def heading_line(self, index: int) -> int:
        at = self.heading[index]
        return self.view.blocks[at].start if at < len(self.view.blocks) else len(self.view.lines) + 1

    def shown_in_section(self, index: int) -> bool:
        """Code, a table, a list or a figure follows the pointer's paragraph within its section
        (before the next heading of any level): "the event as shown below", then two more
        sentences of the paragraph, then the JSON of that event."""
        block = self.view.blocks[index]
        heading = self.heading_line(index)
        code = bisect.bisect_right(self.code_starts, block.end)
        if code < len(self.code_starts) and self.code_starts[code] < heading:
            return True
        nearest = self.cell[index] if block.in_list else self.item[index]
        if nearest < self.heading[index]:
            return True
        figure = bisect.bisect_right(self.figures, block.end)
        return figure < len(self.figures) and self.figures[figure] < heading

    def subject(self, index: int, start: int, end: int, skip: frozenset[str]) -> tuple[set[str], str]:
        """What a pointer promises: the words of its own clause (an aside in parentheses, or the
        clause between commas), else of the clause before it, within its sentence; with the
        clause as written, for the message."""
        prose = self.view.blocks[index].prose
        spans = self.spans(index)
        at = bisect.bisect_right(spans, start, key=lambda span: span[0]) - 1
        first, last = spans[at] if at >= 0 and start < spans[at][1] else (0, len(prose))
        cuts = self.cuts(index)
        inside = cuts[bisect.bisect_left(cuts, first) : bisect.bisect_left(cuts, last)]
        upto = inside[: bisect.bisect_right(inside, start)]
        before = upto[-1] if upto else first
        later = inside[bisect.bisect_left(inside, end) :]
        after = later[0] if later else last
        clause = prose[before:start] + " " + prose[end:after]
        subject = {w for w in content_words(clause) if w not in skip}
        if not subject:
            earlier = inside[: bisect.bisect_left(inside, before)]
            clause = prose[earlier[-1] if earlier else first : before]
            subject = {w for w in content_words(clause) if w not in skip}
        return subject, " ".join(clause.split()).strip(" ,;:().")

    def introduces(self, index: int, match: re.Match[str]) -> bool:
        """A "below" or "following" pointer whose paragraph is followed, within its section, by
        code, a table, a list or a figure; or one in the last sentence of a paragraph that leads
        into its own subsections (or its sibling subsections): what follows is what it points at."""
        view, block = self.view, self.view.blocks[index]
        said = match.group(0).lower()
        if not ("below" in said or "following" in said) or block.kind != "paragraph":
            return False
        if self.shown_in_section(index):
            return True
        spans = self.spans(index)
        if block.in_list or not spans or match.start() < spans[-1][0]:
            return False
        if self.unquoted[index] >= len(view.blocks):
            return False
        following = view.blocks[self.unquoted[index]]
        if following.kind == "heading":
            # It leads into its own subsections ("### ..." under the "## ..." it sits in), or
            # from one subsection into its siblings under the same part.
            above = view.heading_before(block.start)
            own = above.level if above is not None else 0
            return following.level > own or (own >= 3 and following.level == own)
        return following.kind == "cell" or following.in_list

    def next_describes(self, index: int, subject: set[str]) -> bool:
        """The blocks right after the pointer take up its subject: at least a third of its
        words, and two or more ("is explained below." followed by the explanation)."""
        near: set[str] = set()
        for after in range(index + 1, min(index + 1 + NEXT_BLOCKS, len(self.view.blocks))):
            near |= self.words(after)
        shared = len(subject & near)
        return shared >= 2 and shared * 3 >= len(subject)


def _pointers(after: Following, block: Block, index: int, last: dict[str, int], dangling: Any) -> None:
    """ "Described below" whose subject never comes up again after it, wherever it sits."""
    skip = lexicon().pointer_words
    for pattern in lexicon().forward_refs:
        for match in pattern.finditer(block.prose):
            checkpoint()
            if after.introduces(index, match):
                continue
            subject, written = after.subject(index, match.start(), match.end(), skip)
            later = sum(1 for w in subject if last.get(w, -1) > index)
            if subject and later * 2 < len(subject) and not after.next_describes(index, subject):
                dangling(
                    block,
                    match.start(),
                    match.end(),
                    f"{block.start}:{match.start()}",
                    f"'{match.group(0)}', but nothing after it describes what it promises: '{written[:80]}'",
                    "add what it promises, or remove the pointer",
                )
