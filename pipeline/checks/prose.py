"""The prose-level rules: references into the plan, cross-reference asides, section and
document length."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

from pipeline.checks.context import CheckContext, rule
from pipeline.formats.findings import Fix
from pipeline.formats.prose_inline import code_span_runs


def _code(line: str) -> list[tuple[int, int]]:
    return [(start, end) for start, end, _ in code_span_runs(line)]


CODE = r"[A-Z]{1,3}\d+(?:\.\d+)*[a-z]?"
PREFIX = r"(?:per|see(?:\s+also)?|cf\.?|also|ref\.?|via)\s+"
# A section name's words are taken possessively (giving words back to try "and D1" as a
# separator made "§x and D1 and D1 ..." quadratic). The one place a word must be left to the
# separator is "and" before the next section reference: "§x and §y", "§x and see §y".
NAME_WORD = rf"(?!and\s*(?:{PREFIX})?§)[\w.\-]+"
SECTION_REF = rf'§\s*(?:"[^"]+"|[\w.\-]+(?:\s+{NAME_WORD})*+)'
ITEM = rf"(?:{PREFIX})?(?:{CODE}|{SECTION_REF})"
ASIDE_RE = re.compile(rf"^\s*{ITEM}(?:\s*(?:,|;|/|&|\band\b)\s*{ITEM})*+\s*$")
PAREN_RE = re.compile(r"\(([^()\n]*)\)")
REVERSE_RE = re.compile(
    r"(?:implementation-plan\.md|(?<![\w-])track-\d+\.md|\]\(\s*(?:\.{1,2}/)*plan/)", re.IGNORECASE
)


@rule("dsc-reverse-ref")
def reverse_ref(ctx: CheckContext) -> None:
    for doc in ctx.targets():
        for number, line in doc.prose_lines():
            spans = _code(line)
            for match in REVERSE_RE.finditer(line):
                if any(a <= match.start() < b for a, b in spans):
                    continue
                ctx.add(
                    "dsc-reverse-ref",
                    doc.path,
                    number,
                    doc.section_name_at(number),
                    f"the design links into the plan ({match.group(0).strip()})",
                    "remove the link; references run from the plan to the design, never back",
                )
                break


def find_asides(line: str) -> Iterator[tuple[int, str]]:
    """(0-based start, text to delete) for each cross-reference-only parenthetical."""
    spans = _code(line)
    for match in PAREN_RE.finditer(line):
        start, end = match.span()
        if any(a <= start < b for a, b in spans):
            continue
        if start > 0 and (line[start - 1] == "]" or line[start - 1].isalnum()):
            continue
        if not ASIDE_RE.match(match.group(1)):
            continue
        if start > 0 and line[start - 1] == " ":
            start -= 1
        elif end < len(line) and line[end] == " ":
            end += 1
        yield start, line[start:end]


@rule("dsc-parenthetical-aside")
def parenthetical_aside(ctx: CheckContext) -> None:
    for doc in ctx.targets():
        for number, line in doc.prose_lines():
            if "(" not in line:
                continue
            for start, text in find_asides(line):
                aside = text.strip()
                ctx.add(
                    "dsc-parenthetical-aside",
                    doc.path,
                    number,
                    doc.section_name_at(number),
                    f"parenthetical {aside} holds only cross-reference codes",
                    f"drop '{aside}': say what the reference means in words, or leave it out",
                    Fix(line=number, column=start + 1, expect=text, insert=""),
                )


@rule("dsc-section-length")
def section_length(ctx: CheckContext) -> None:
    if not ctx.design_targeted():
        return
    cap = ctx.limits.section_length_cap
    for section in ctx.design.body_sections():
        last = ctx.design.last_text_line(section)
        length = (last[0] if last else section.start) - section.start + 1
        if length > cap:
            ctx.add(
                "dsc-section-length",
                ctx.design.path,
                section.start,
                section.name,
                f'section "{section.name}" is {length} lines long (cap {cap})',
                "move long-form mechanism detail into the mechanics companion, keeping the TL;DR here",
            )


@rule("dsc-top-level-cap")
def top_level_cap(ctx: CheckContext) -> None:
    if not ctx.design_targeted() or ctx.mechanics is not None:
        return
    limits, doc = ctx.limits, ctx.design
    lines = len(doc.lines)
    tokens = math.ceil(len(doc.file.text) / limits.chars_per_token)
    if lines > limits.top_level_line_cap or tokens > limits.top_level_token_cap:
        ctx.add(
            "dsc-top-level-cap",
            doc.path,
            None,
            None,
            f"design.md has {lines} lines and about {tokens} tokens without a mechanics companion "
            f"(caps {limits.top_level_line_cap} lines / {limits.top_level_token_cap} tokens)",
            "split it into design.md and design-mechanics.md (length-trigger-crossing)",
        )
