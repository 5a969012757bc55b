"""What a document leaves open or points at wrongly, where a rule can see it: placeholder text
(TBD, TODO, "to be determined"), footnote references with no footnote, figures and tables
referred to by a number nothing carries, and one identifier spelled two ways. Part of the
comprehension reviewer (offline.comprehension); each rule reads the prose view once.
"""

from __future__ import annotations

import bisect
import re

from pipeline.formats.findings import Severity
from pipeline.formats.prose import Block, ProseView
from pipeline.offline.deadline import checkpoint
from pipeline.offline.report import Report

PLACEHOLDER_RE = re.compile(
    r"(?<![\w-])(?:TBD|TBA|TBC|TODO|FIXME|XXX)(?![\w-])"
    r"|(?<!\bhas\s)(?<!\bhave\s)(?<!\bhad\s)(?<!\bneeds\s)(?<!\bneed\s)(?<!\bneeded\s)"
    r"\bto\s+be\s+(?:determined|decided|defined|confirmed)\b"
    r"|\?{3,}+|\blorem\s+ipsum\b",
    re.IGNORECASE,
)
"""Text a writer meant to replace. Upper case only for the abbreviations ("todo" is a word);
"has to be defined" says what someone must do, not that the text is unfinished."""
ABBREVIATIONS = frozenset({"tbd", "tba", "tbc", "todo", "fixme", "xxx"})


def placeholders(view: ProseView, report: Report, seed: bool) -> None:
    """Each place the document says it is not finished. In a design in the seed's shape it is
    a should-fix (the author can always finish it, or take it to the research log as an open
    decision); in another project's document, a suggestion."""
    severity: Severity = "should-fix" if seed else "suggestion"
    for block in view.blocks:
        checkpoint()
        for match in PLACEHOLDER_RE.finditer(block.prose):
            said = match.group(0)
            if said.lower() in ABBREVIATIONS and not said.isupper():
                continue
            line = block.line_at(match.start())
            report.add(
                "cr-placeholder",
                f"{line}:{match.start()}",
                severity,
                line,
                block.quote(match.start(), match.end()),
                f"'{said}': the document says this is not decided or not written yet",
                "write what it stands for, or record the open question where it will be decided",
            )


FOOTNOTE_REF_RE = re.compile(r"\[\^(?P<label>[^\]\s]{1,40})\](?!:)")
FOOTNOTE_DEF_RE = re.compile(r"^ {0,3}\[\^(?P<label>[^\]\s]{1,40})\]:")


def footnotes(view: ProseView, report: Report) -> None:
    """A footnote reference (``[^2]``) with no footnote of that label anywhere in the document."""
    code = {n for region in view.code for n in range(region.start, region.end + 1)}
    defined = {
        m.group("label").lower()
        for number, line in enumerate(view.lines, start=1)
        if number not in code and (m := FOOTNOTE_DEF_RE.match(line))
    }
    for block in view.blocks:
        checkpoint()
        for match in FOOTNOTE_REF_RE.finditer(block.prose):
            label = match.group("label")
            if label.lower() in defined:
                continue
            line = block.line_at(match.start())
            report.add(
                "cr-dangling-footnote",
                label.lower(),
                "should-fix",
                line,
                block.quote(match.start(), match.end()),
                f"footnote [^{label}] is referred to but never written",
                f"add the footnote '[^{label}]: ...', or remove the reference",
            )


KINDS = {"figure": "figure", "fig.": "figure", "fig": "figure", "table": "table", "listing": "listing"}
NUMBERED_REF_RE = re.compile(
    r"(?<![\w-])(?P<kind>Figure|Fig\.?|Table|Listing)\s++(?P<number>\d{1,3})(?![\w.]\d)"
)
CAPTION_RE = re.compile(
    r"^\s*+(?:[>*_]++\s*+|<(?:figcaption|caption|p|div|b|strong|em|i)\b[^>]*+>\s*+|!\[)*+"
    r"(?P<kind>Figure|Fig\.?|Table|Listing)\s++(?P<number>\d{1,3})\b",
    re.IGNORECASE,
)
"""A caption: a line that opens (after quote, emphasis, HTML or image markup) with "Figure 3"."""
IMAGE_RE = re.compile(r"!\[|<img\b", re.IGNORECASE)
NEAR_LINK = 80
"""A number this close to a link is the linked document's ("Table 2 of [the spec](...)")."""


def _shown(view: ProseView) -> tuple[dict[str, set[int]], dict[str, int]]:
    """The numbers the document's captions give its figures, tables and listings, and how many
    of each it shows (images, tables, code blocks)."""
    numbered: dict[str, set[int]] = {kind: set() for kind in set(KINDS.values())}
    shown = {"figure": 0, "table": 0, "listing": len(view.code)}
    in_table = False
    for line in view.lines:
        caption = CAPTION_RE.match(line)
        if caption:
            numbered[KINDS[caption.group("kind").lower()]].add(int(caption.group("number")))
        shown["figure"] += len(IMAGE_RE.findall(line))
        row = line.lstrip().startswith("|")
        shown["table"] += row and not in_table
        in_table = row
    return numbered, shown


def _near_link(block: Block, start: int, end: int) -> bool:
    """A link's text within NEAR_LINK characters of ``start:end`` (links are in order and never
    overlap: the last one to start before the window's end is the one to look at)."""
    index = bisect.bisect_left(block.links, end + NEAR_LINK, key=lambda link: link[0]) - 1
    return index >= 0 and block.links[index][1] > start - NEAR_LINK


def numbered_refs(view: ProseView, report: Report) -> None:
    """ "Figure 3", "Table 2", "Listing 4" where the document shows no such number: no caption
    carries it, and it has fewer figures (tables, code listings) than the number. A number a
    caption gives, or one within the count of what the document shows, lands."""
    numbered, shown = _shown(view)
    for block in view.blocks:
        checkpoint()
        for match in NUMBERED_REF_RE.finditer(block.prose):
            kind = KINDS[match.group("kind").lower()]
            number = int(match.group("number"))
            if number in numbered[kind] or (not numbered[kind] and number <= shown[kind]):
                continue
            if _near_link(block, match.start(), match.end()):
                continue  # a link says where it is: another document's figure or table
            line = block.line_at(match.start())
            report.add(
                "cr-missing-figure",
                f"{kind} {number}",
                "should-fix",
                line,
                block.quote(match.start(), match.end()),
                f"'{match.group(0)}' is referred to, but the document has no {kind} {number}",
                f"number the {kind} it means, or point at it another way",
            )


LABELLED_RE = re.compile(r"^(?P<prefix>[a-z][a-z0-9-]{1,20}):(?P<rest>[^\s:]\S{0,80})$")
"""A code span of a labelled value: ``dns:example.org``, ``env:PROD``."""


def spellings(view: ProseView, report: Report) -> None:
    """One value written with two label prefixes (``dns:api.example.org`` here,
    ``fqdn:api.example.org`` there): a reader cannot tell whether they are one label or two."""
    seen: dict[str, dict[str, tuple[int, str]]] = {}
    for block in view.blocks:
        checkpoint()
        for start, end in block.code:
            match = LABELLED_RE.match(block.text[start:end].strip())
            if match is None:
                continue
            place = (block.line_at(start), block.text[start:end].strip())
            seen.setdefault(match.group("rest"), {}).setdefault(match.group("prefix"), place)
    for rest, prefixes in seen.items():
        if len(prefixes) < 2:
            continue
        (first, (line, quote)), *others = sorted(prefixes.items(), key=lambda item: item[1][0])
        also = ", ".join(f"'{prefix}:' on line {where[0]}" for prefix, where in others)
        report.add(
            "cr-identifier-spelling",
            rest,
            "suggestion",
            line,
            quote,
            f"'{rest}' is labelled '{first}:' here and {also}",
            "use one label prefix for one thing, or say how the two differ",
        )


def loose_ends(view: ProseView, report: Report, seed: bool) -> None:
    placeholders(view, report, seed)
    footnotes(view, report)
    numbered_refs(view, report)
    spellings(view, report)
