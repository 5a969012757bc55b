"""Deterministic fixes for flagged passages: what a rule can repair without judgement.

Used by the offline author on later rounds and by the offline inline editor. The document
is parsed once (its structure and its prose view); each fix turns a finding into edits
located by line and column (offline.edits), and the edits are applied together. A finding
whose fix needs judgement is left alone and reported as not fixed. A word that carries
meaning where it stands is never deleted (offline.wording).
"""

from __future__ import annotations

import itertools
import re

from pipeline.checks.engine import find_asides
from pipeline.formats.design_doc import STAMP_LIKE_RE
from pipeline.formats.findings import Finding
from pipeline.formats.prose import Block, parse_prose, words_of
from pipeline.offline import acronyms, wording
from pipeline.offline.deadline import checkpoint
from pipeline.offline.edits import EditSet
from pipeline.offline.fix_reading import (
    fix_acronym,
    fix_dangling,
    fix_no_overview,
    fix_term_order,
    fix_tldr_mismatch,
)
from pipeline.offline.fixing import Context, Fixer, flagged_block, may_capitalise, replace
from pipeline.offline.text import (
    HouseRule,
    doc_from_text,
    keywords,
    known_acronyms,
    parse_house_style,
    sentence_spans,
)

LINK_INTO_PLAN_RE = re.compile(
    r"\[([^\[\]]++)\]\(\s*+(?:\.{1,2}/)*+(?:plan/|implementation-plan\.md)[^)]*+\)"
)
"""A link into the plan. Its text holds no bracket, so each ``[`` is read up to the next bracket
only (a run of them was quadratic)."""
DASH_RE = re.compile(r"(?<!\s)\s*—\s*+|(?<=\s)—\s*+|(?<!\s)\s+--\s++")
"""A dash with the spaces around it, matched from the start of those spaces only (from every
space of a long run it was quadratic); a dash whose spaces the dash before it took stands alone."""
JOINT_RE = re.compile(r",\s+(?P<word>and|but|so|which|while|because)\s+|;\s+")
JOINT_LEAD = {
    "and": "",
    "while": "",
    "but": "But ",
    "so": "So ",
    "which": "This ",
    "because": "This is because ",
}
SENTENCE_START_RE = re.compile(r"(?:^|[.!?:]\s+|^\s*\*\*[^*]+\*\*\s*)$")


def _lines_of(ctx: Context, f: Finding) -> list[tuple[int, str]]:
    """The prose line a located finding names, else every prose line."""
    line = f.line
    if isinstance(line, int) and 1 <= line <= len(ctx.doc.lines):
        return ctx.doc.prose_lines(line, line)
    return ctx.doc.prose_lines()


def _blocks_in(ctx: Context, section: str | None) -> list[Block]:
    found = ctx.doc.find(section) if section else None
    if found is None:
        return [b for b in ctx.view.blocks if b.kind != "heading"]
    return [b for b in ctx.view.blocks if b.kind != "heading" and found.start <= b.start <= found.end]


def _delete_term(ctx: Context, block: Block, start: int, end: int) -> bool:
    """Delete a word, keeping the sentence well-formed (capital, spacing, commas)."""
    text = block.text
    head = text[:start]
    if SENTENCE_START_RE.search(head):
        stop = end
        while stop < len(text) and text[stop] in " ,":
            stop += 1
        if stop < len(text) and text[stop] != "\n" and may_capitalise(text, stop):
            return replace(ctx, block, start, stop + 1, text[stop].upper())
        return False
    begin = start
    while begin > 0 and text[begin - 1] == " ":
        begin -= 1
    if begin == start and end < len(text) and text[end] == " ":
        return replace(ctx, block, start, end + 1, "")
    return replace(ctx, block, begin, end, "")


def fix_term(ctx: Context, f: Finding) -> bool:
    rule = ctx.rules.get(f.rule)
    quote = (f.quote or "").strip()
    if rule is None or quote.lower() not in rule.replace:
        return False
    repl = rule.replace[quote.lower()]
    target = HouseRule(rule.id, rule.title, terms=(quote,), replace=rule.replace)
    changed = False
    for block in ctx.view.blocks:
        checkpoint()
        for hit in wording.hits(block, target):
            if repl:
                said = block.text[hit.start : hit.end]
                piece = repl[:1].upper() + repl[1:] if said[:1].isupper() else repl
                changed |= replace(ctx, block, hit.start, hit.end, piece)
            else:
                changed |= _delete_term(ctx, block, hit.start, hit.end)
    return changed


def fix_aside(ctx: Context, f: Finding) -> bool:
    changed = False
    for number, line in _lines_of(ctx, f):
        for start, text in find_asides(line):
            begin = start - 1 if start > 0 and line[start - 1] == " " else start
            changed |= ctx.edits.replace(number, begin, start + len(text), "")
    return changed


def fix_tldr(ctx: Context, f: Finding) -> bool:
    section = ctx.doc.find(f.section or "")
    if section is None or not section.is_body:
        return False
    body = [b for b in ctx.view.paragraphs(section.start + 1, section.end)]
    if not body or body[0].text.startswith("**TL;DR:**"):
        return False
    spans = sentence_spans(body[0].prose)
    summary = " ".join(body[0].text[spans[0][0] : spans[0][1]].split()) if spans else body[0].text
    return ctx.edits.insert(section.start + 1, ["", f"**TL;DR:** {summary}"])


def fix_stamp(ctx: Context, f: Finding) -> bool:
    line = f.line
    if (
        isinstance(line, int)
        and 1 < line <= len(ctx.doc.lines)
        and STAMP_LIKE_RE.search(ctx.doc.lines[line - 1])
    ):
        return ctx.edits.replace_line(line, "")
    return False


def fix_reverse_ref(ctx: Context, f: Finding) -> bool:
    changed = False
    for number, line in _lines_of(ctx, f):
        new = LINK_INTO_PLAN_RE.sub(r"\1", line)
        if new != line:
            changed |= ctx.edits.replace_line(number, new)
    return changed


def fix_long_sentence(ctx: Context, f: Finding) -> bool:
    """Split the sentence at its most central joints until each part is within the limit."""
    rule = ctx.rules.get("hs-sentence-length")
    found = flagged_block(ctx, f)
    if rule is None or found is None:
        return False
    block, at = found
    limit = rule.hard_limit or rule.limit or 40
    span = next(((a, b) for a, b in sentence_spans(block.prose) if a <= at < b), None)
    if span is None:
        return False
    pieces = [span]
    changed = False
    while True:
        long = [(a, b) for a, b in pieces if len(words_of(block.prose[a:b])) > limit]
        if not long:
            return changed
        a, b = long[0]
        joints = [m for m in JOINT_RE.finditer(block.prose, a, b) if "\n" not in m.group(0)]
        joints = [m for m in joints if len(words_of(block.prose[a : m.start()])) >= 6]
        # A joint whose next word would have to be capitalised must be followed by a plain
        # word: a name ("iOS", "gRPC", `code`) is never altered.
        joints = [
            m
            for m in joints
            if JOINT_LEAD.get(m.group("word") or "", "") or may_capitalise(block.text, m.end())
        ]
        if not joints:
            return changed
        middle = (a + b) / 2
        joint = min(joints, key=lambda m: abs(m.start() - middle))
        nxt = joint.end()
        lead = JOINT_LEAD.get(joint.group("word") or "", "")
        first = block.text[nxt : nxt + 1]
        tail = lead + (first if lead else first.upper())
        if not replace(ctx, block, joint.start(), nxt + 1, ". " + tail):
            return changed
        changed = True
        pieces.remove((a, b))
        pieces += [(a, joint.start()), (nxt, b)]


def fix_wall(ctx: Context, f: Finding) -> bool:
    """Split an over-long paragraph at sentence ends into parts within the limit."""
    rule = ctx.rules.get("hs-wall-of-text")
    found = flagged_block(ctx, f)
    if rule is None or found is None or found[0].in_quote:
        return False
    block = found[0]
    limit = rule.hard_limit or rule.limit or 120
    spans = sentence_spans(block.prose)
    target = len(block.words) / max(2, -(-len(block.words) // int(limit)))
    indent = " " * block.columns[-1] if block.in_list else ""
    since, changed = 0, False
    for (start, end), (after, _) in itertools.pairwise(spans):
        since += len(words_of(block.prose[start:end]))
        if since < target:
            continue
        line = block.line_at(after)
        if block.line_at(end) == line:
            done = replace(ctx, block, end, after, "\n\n" + indent)
        else:
            done = block.starts[line - block.start] == after and ctx.edits.insert(line, [""])
        if done:
            changed, since = True, 0
    return changed


def fix_dashes(ctx: Context, f: Finding) -> bool:
    changed = False
    for block in _blocks_in(ctx, f.section):
        for match in DASH_RE.finditer(block.prose):
            changed |= replace(ctx, block, match.start(), match.end(), ", ")
    return changed


FIXERS: dict[str, Fixer] = {
    "dsc-parenthetical-aside": fix_aside,
    "dsc-section-shape": fix_tldr,
    "dsc-stamp-position": fix_stamp,
    "dsc-reverse-ref": fix_reverse_ref,
    "hs-filler": fix_term,
    "hs-puffery": fix_term,
    "hs-ai-tell": fix_term,
    "hs-acronym": fix_acronym,
    "cr-term-order": fix_term_order,
    "cr-tldr-mismatch": fix_tldr_mismatch,
    "cr-dangling-ref": fix_dangling,
    "cr-no-overview": fix_no_overview,
    "hs-sentence-length": fix_long_sentence,
    "hs-wall-of-text": fix_wall,
    "hs-em-dash": fix_dashes,
}
EVERY_USE: frozenset[Fixer] = frozenset({fix_term, fix_acronym, fix_term_order})
"""Fixers that act on every use of the finding's term, wherever the finding sits."""


def apply(text: str, flagged: list[Finding], instructions: str) -> tuple[str, int, int]:
    """Apply every fixable finding; returns (new text, fixed count, left count)."""
    doc = doc_from_text(text)
    view = parse_prose(text, doc.lines)
    lexicon = acronyms.Lexicon(view, known_acronyms(instructions), keywords(instructions))
    records = doc.find("Decision Records")
    frozen = frozenset(range(records.start + 1, records.end + 1)) if records else frozenset()
    edits = EditSet(list(doc.lines), frozen=frozen)
    ctx = Context(doc, view, parse_house_style(instructions), lexicon, edits)
    fixed = left = 0
    for finding in flagged:
        checkpoint()
        rule = finding.rule
        fixer = FIXERS.get(rule)
        if fixer in EVERY_USE:
            key = (rule, (finding.quote or "").strip().lower())
            if key not in ctx.done:
                ctx.done[key] = fixer is not None and fixer(ctx, finding)
            done = ctx.done[key]
        else:
            done = fixer is not None and fixer(ctx, finding)
        if done:
            fixed += 1
        else:
            left += 1
    new = ctx.edits.apply()
    return new + ("\n" if text.endswith("\n") and not new.endswith("\n") else ""), fixed, left
