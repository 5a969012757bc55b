"""References in a design that must land: ``§`` references and "see the X section" that name
a heading, and "described below" and its kin, whose subject must come up after them. Part of
the comprehension reviewer (offline.comprehension); one pass over the blocks."""

from __future__ import annotations

import re
from typing import Any

from pipeline.formats.prose import Block, ProseView
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


SUBTITLE_RE = re.compile(r"\s*(?:\([^()]*\)|(?::|\s[-—–]+\s).*)$")
"""A heading's parenthetical or subtitle, after a colon or a spaced dash."""
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


def names_heading(name: str, names: set[str]) -> bool:
    """A name for a section lands on a heading: it is one of the heading's names, or the
    heading starts with it ("the Security section" for "Security Considerations")."""
    wanted = _norm(name)
    return bool(wanted) and (wanted in names or any(n.startswith(wanted + " ") for n in names))


def dangling_refs(view: ProseView, report: Report) -> None:
    names = {name for h in view.headings for name in heading_names(h.text)}
    anchors = view.anchors()

    def dangling(block: Block, start: int, end: int, subject: str, message: str, fix: str) -> None:
        line = block.line_at(start)
        report.add("cr-dangling-ref", subject, "should-fix", line, block.quote(start, end), message, fix)

    last = _last_seen(view)
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
        _pointers(view, block, index, last, dangling)


def _last_seen(view: ProseView) -> dict[str, int]:
    """The index of the last block each content word appears in (one pass)."""
    last: dict[str, int] = {}
    for index, block in enumerate(view.blocks):
        for word in content_words(block.prose):
            last[word] = index
    return last


CLAUSE_RE = re.compile(r"[,;:()\[\]—–]|\s-\s")


def _pointer_subject(prose: str, start: int, end: int, skip: frozenset[str]) -> tuple[set[str], str]:
    """What a pointer promises: the words of its own clause (an aside in parentheses, or the
    clause between commas), else of the clause before it, within its sentence; with the
    clause as written, for the message."""
    spans = sentence_spans(prose)
    first, last = next(((a, b) for a, b in spans if a <= start < b), (0, len(prose)))
    cuts = [first, *(m.start() for m in CLAUSE_RE.finditer(prose, first, last)), last]
    before = max((c for c in cuts if c <= start), default=first)
    after = min((c for c in cuts if c >= end), default=last)
    clause = prose[before:start] + " " + prose[end:after]
    subject = {w for w in content_words(clause) if w not in skip}
    if not subject:
        earlier = max((c for c in cuts if c < before), default=first)
        clause = prose[earlier:before]
        subject = {w for w in content_words(clause) if w not in skip}
    return subject, " ".join(clause.split()).strip(" ,;:().")


FIGURE_RE = re.compile(r"^\s*(?:[-*+]\s+)?!\[|<(?:img|figure|picture|svg)\b", re.IGNORECASE)
"""A line that shows a figure: a Markdown image, or an HTML image or figure."""


def _shown_in_section(view: ProseView, index: int, block: Block) -> bool:
    """Code, a table, a list or a figure follows the pointer's paragraph within its section
    (before the next heading of any level): "the event as shown below", then two more
    sentences of the paragraph, then the JSON of that event."""
    heading = next((b.start for b in view.blocks[index + 1 :] if b.kind == "heading"), len(view.lines) + 1)
    if any(block.end < region.start < heading for region in view.code):
        return True
    between = [b for b in view.blocks[index + 1 :] if b.start < heading]
    if any(b.kind == "cell" or (b.in_list and not block.in_list) for b in between):
        return True
    return any(FIGURE_RE.search(line) for line in view.lines[block.end : heading - 1])


def _introduces(view: ProseView, index: int, block: Block, match: re.Match[str]) -> bool:
    """A "below" or "following" pointer whose paragraph is followed, within its section, by
    code, a table, a list or a figure; or one in the last sentence of a paragraph that leads
    into its own subsections (or its sibling subsections): what follows is what it points at."""
    said = match.group(0).lower()
    if not ("below" in said or "following" in said) or block.kind != "paragraph":
        return False
    if _shown_in_section(view, index, block):
        return True
    spans = sentence_spans(block.prose)
    if block.in_list or not spans or match.start() < spans[-1][0]:
        return False
    following = next((b for b in view.blocks[index + 1 :] if not b.in_quote), None)
    if following is None:
        return False
    if following.kind == "heading":
        # It leads into its own subsections ("### ..." under the "## ..." it sits in), or
        # from one subsection into its siblings under the same part.
        above = view.heading_before(block.start)
        own = above.level if above is not None else 0
        return following.level > own or (own >= 3 and following.level == own)
    return following.kind == "cell" or following.in_list


NEXT_BLOCKS = 3


def _next_describes(view: ProseView, index: int, subject: set[str]) -> bool:
    """The blocks right after the pointer take up its subject: at least a third of its words,
    and two or more ("is explained below." followed by the explanation)."""
    near: set[str] = set()
    for block in view.blocks[index + 1 : index + 1 + NEXT_BLOCKS]:
        near |= content_words(block.prose)
    shared = len(subject & near)
    return shared >= 2 and shared * 3 >= len(subject)


def _pointers(view: ProseView, block: Block, index: int, last: dict[str, int], dangling: Any) -> None:
    """ "Described below" whose subject never comes up again after it, wherever it sits."""
    skip = lexicon().pointer_words
    for pattern in lexicon().forward_refs:
        for match in pattern.finditer(block.prose):
            if _introduces(view, index, block, match):
                continue
            subject, written = _pointer_subject(block.prose, match.start(), match.end(), skip)
            later = sum(1 for w in subject if last.get(w, -1) > index)
            if subject and later * 2 < len(subject) and not _next_describes(view, index, subject):
                dangling(
                    block,
                    match.start(),
                    match.end(),
                    f"{block.start}:{match.start()}",
                    f"'{match.group(0)}', but nothing after it describes what it promises: '{written[:80]}'",
                    "add what it promises, or remove the pointer",
                )
