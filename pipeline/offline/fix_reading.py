"""Fixes for the comprehension reviewer's findings: what the author does on its next round so
that each rule clears (tests/test_convergence.py). An acronym is defined at its first use, a
term is explained in passing there, a section whose body never discusses its TL;DR opens with
it, a reference that lands nowhere goes, a design without an Overview gets one."""

from __future__ import annotations

import re

from pipeline.formats.findings import Finding
from pipeline.offline import acronyms
from pipeline.offline.fixing import Context, flagged_block, replace
from pipeline.offline.text import sentence_spans

GLOSS_RE = re.compile(
    r"^\s*(?::|—|–|-|is|are|means|refers\s+to|denotes)\s+(?P<gloss>[^.;:()]{3,120})", re.IGNORECASE
)
GLOSS_WORDS = 12


def fix_term_order(ctx: Context, f: Finding) -> bool:
    """A term used before its definition: an acronym is defined at its first use; a bold term
    is explained in passing there, in the words of its definition ("lease (a time-limited
    claim a worker holds on a job)"), which is what the reader at that point lacks."""
    quote = (f.quote or "").strip()
    if re.fullmatch(r"[A-Z][A-Z]+s?", quote):
        return fix_acronym(ctx, f)
    from pipeline.offline.comprehension import definitions

    found = definitions(ctx.view).get(" ".join(quote.lower().split()))
    place = flagged_block(ctx, f)
    if found is None or place is None:
        return False
    line, block = found
    at = block.text.lower().find(quote.lower() + "**", block.starts[line - block.start])
    gloss = GLOSS_RE.match(block.text[at + len(quote) + 2 :]) if at >= 0 else None
    if gloss is None:
        return False
    words = gloss.group("gloss").split()
    text = " ".join(words[:GLOSS_WORDS]).rstrip(",") + (" ..." if len(words) > GLOSS_WORDS else "")
    used, start = place
    return replace(ctx, used, start + len(quote), start + len(quote), f" ({text})")


def fix_acronym(ctx: Context, f: Finding) -> bool:
    """An acronym the document defines only after its first use is defined at its first use,
    with the long form the later definition gives: "RDS" becomes "Relational Database
    Service (RDS)". The acronym itself is never altered; one the document never spells out
    is left for a person or a model (the long form is not the fixer's to invent)."""
    token = acronyms.base((f.quote or "").strip())
    if not re.fullmatch(r"[A-Z][A-Z]+", token):
        return False
    long = next(
        (d[token] for b in ctx.view.blocks if token in (d := acronyms.strong_definitions(b.prose))), None
    )
    if long is None:
        return False
    for block in ctx.view.blocks:
        for use in acronyms.uses(block, ctx.lexicon):
            if use.token == token:
                return replace(ctx, block, use.start, use.start, f"{long} (") and replace(
                    ctx, block, use.end, use.end, ")"
                )
    return False


def fix_tldr_mismatch(ctx: Context, f: Finding) -> bool:
    """A TL;DR its body never discusses: the body opens by saying what the TL;DR says, so
    the summary and the section agree and nothing anyone wrote is lost."""
    section = ctx.doc.find(f.section or "")
    if section is None or not section.is_body:
        return False
    paras = ctx.view.paragraphs(section.start + 1, section.end)
    if not paras or not paras[0].text.startswith("**TL;DR:**"):
        return False
    said = " ".join(paras[0].text.removeprefix("**TL;DR:**").split())
    return bool(said) and ctx.edits.insert(paras[0].end + 1, ["", said])


def fix_dangling(ctx: Context, f: Finding) -> bool:
    """A reference that lands nowhere goes: its parenthetical aside, its clause, or (when the
    sentence only makes the promise) its sentence."""
    found = flagged_block(ctx, f)
    if found is None:
        return False
    block, at = found
    span = next(((a, b) for a, b in sentence_spans(block.prose) if a <= at < b), None)
    if span is None:
        return False
    a, b = span
    quote = (f.quote or "").strip()
    for start, end in _enclosing_aside(block.text, at, at + len(quote)):
        if a <= start and end <= b:
            return replace(ctx, block, start, end, "")
    clauses = [m.span() for m in re.finditer(r"[^,;]+", block.text[a:b])]
    inside = [(a + x, a + y) for x, y in clauses if a + x <= at < a + y]
    if len(clauses) > 1 and inside:
        x, y = inside[0]
        start = x - 1 if x > a and block.text[x - 1] in ",;" else x
        if y >= b - 1:  # the last clause: keep the sentence's own mark
            return replace(ctx, block, start, b - 1 if block.text[b - 1] in ".!?" else b, "")
        return replace(ctx, block, x, y + 1 if block.text[y : y + 1] in ",;" else y, "")
    begin = a
    stop = b
    while stop < len(block.text) and block.text[stop] == " ":
        stop += 1
    return replace(ctx, block, begin, stop, "")


def _enclosing_aside(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The parenthetical holding ``text[start:end]``, with the space before it."""
    open_at = text.rfind("(", 0, start)
    close_at = text.find(")", end)
    if open_at < 0 or close_at < 0 or ")" in text[open_at:start] or "(" in text[end:close_at]:
        return []
    begin = open_at - 1 if open_at > 0 and text[open_at - 1] == " " else open_at
    return [(begin, close_at + 1)]


def fix_no_overview(ctx: Context, f: Finding) -> bool:
    """A design without an Overview gets one, made of its sections' own TL;DRs."""
    summaries = []
    for section in ctx.doc.body_sections():
        paras = ctx.view.paragraphs(section.start + 1, section.end)
        if paras and paras[0].text.startswith("**TL;DR:**"):
            summaries.append(" ".join(paras[0].text.removeprefix("**TL;DR:**").split()))
    first = next((s.start for s in ctx.doc.sections if s.level == 2), None)
    if not summaries or first is None:
        return False
    return ctx.edits.insert(first, ["## Overview", "", " ".join(summaries), ""])
