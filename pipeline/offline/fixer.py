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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pipeline.checks.engine import find_asides
from pipeline.formats.design_doc import STAMP_LIKE_RE, DesignDoc
from pipeline.formats.prose import Block, ProseView, parse_prose, words_of
from pipeline.offline import acronyms, wording
from pipeline.offline.edits import EditSet
from pipeline.offline.text import (
    HouseRule,
    doc_from_text,
    keywords,
    known_acronyms,
    parse_house_style,
    sentence_spans,
)

LINK_INTO_PLAN_RE = re.compile(r"\[([^\]]+)\]\(\s*(?:\.{1,2}/)*(?:plan/|implementation-plan\.md)[^)]*\)")
DASH_RE = re.compile(r"\s*—\s*|\s+--\s+")
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
PLAIN_WORD_RE = re.compile(r"[a-z]+(?:[-'’][a-z]+)*(?=[\s,;:.!?)]|$)")
"""A plain lower-case word: the only kind a fix may capitalise (never "iOS", "gRPC", `code`)."""


@dataclass(slots=True)
class Context:
    doc: DesignDoc
    view: ProseView
    rules: dict[str, HouseRule]
    lexicon: acronyms.Lexicon
    edits: EditSet
    done: dict[tuple[str, str], bool] = field(default_factory=dict)
    """Fixes that act on every use of a term, by (rule, term): the first finding fixes them
    all, so many findings of one term cost one pass over the document."""


def _lines_of(ctx: Context, f: dict[str, Any]) -> list[tuple[int, str]]:
    """The prose line a located finding names, else every prose line."""
    line = f.get("line")
    if isinstance(line, int) and 1 <= line <= len(ctx.doc.lines):
        return ctx.doc.prose_lines(line, line)
    return ctx.doc.prose_lines()


Fixer = Callable[[Context, dict[str, Any]], bool]


def _blocks_in(ctx: Context, section: str | None) -> list[Block]:
    found = ctx.doc.find(section) if section else None
    if found is None:
        return [b for b in ctx.view.blocks if b.kind != "heading"]
    return [b for b in ctx.view.blocks if b.kind != "heading" and found.start <= b.start <= found.end]


def _replace(ctx: Context, block: Block, start: int, end: int, text: str) -> bool:
    """Replace ``block.text[start:end]``, which must lie on one source line."""
    if "\n" in block.text[start:end]:
        return False
    line, col = block.locate(start)
    return ctx.edits.replace(line, col, col + end - start, text)


def _may_capitalise(text: str, at: int) -> bool:
    """Whether the word at ``at`` may open a sentence as it is or with a capital: a plain word
    or one that already starts with a capital; never "iOS", "gRPC" or "kOps"."""
    first = text[at : at + 1]
    return first == first.upper() or bool(PLAIN_WORD_RE.match(text, at))


def _delete_term(ctx: Context, block: Block, start: int, end: int) -> bool:
    """Delete a word, keeping the sentence well-formed (capital, spacing, commas)."""
    text = block.text
    head = text[:start]
    if SENTENCE_START_RE.search(head):
        stop = end
        while stop < len(text) and text[stop] in " ,":
            stop += 1
        if stop < len(text) and text[stop] != "\n" and _may_capitalise(text, stop):
            return _replace(ctx, block, start, stop + 1, text[stop].upper())
        return False
    begin = start
    while begin > 0 and text[begin - 1] == " ":
        begin -= 1
    if begin == start and end < len(text) and text[end] == " ":
        return _replace(ctx, block, start, end + 1, "")
    return _replace(ctx, block, begin, end, "")


def fix_term(ctx: Context, f: dict[str, Any]) -> bool:
    rule = ctx.rules.get(f.get("rule", ""))
    quote = (f.get("quote") or "").strip()
    if rule is None or quote.lower() not in rule.replace:
        return False
    repl = rule.replace[quote.lower()]
    target = HouseRule(rule.id, rule.title, terms=(quote,), replace=rule.replace)
    changed = False
    for block in ctx.view.blocks:
        for hit in wording.hits(block, target):
            if repl:
                said = block.text[hit.start : hit.end]
                piece = repl[:1].upper() + repl[1:] if said[:1].isupper() else repl
                changed |= _replace(ctx, block, hit.start, hit.end, piece)
            else:
                changed |= _delete_term(ctx, block, hit.start, hit.end)
    return changed


GLOSS_RE = re.compile(
    r"^\s*(?::|—|–|-|is|are|means|refers\s+to|denotes)\s+(?P<gloss>[^.;:()]{3,120})", re.IGNORECASE
)
GLOSS_WORDS = 12


def fix_term_order(ctx: Context, f: dict[str, Any]) -> bool:
    """A term used before its definition: an acronym is defined at its first use; a bold term
    is explained in passing there, in the words of its definition ("lease (a time-limited
    claim a worker holds on a job)"), which is what the reader at that point lacks."""
    quote = (f.get("quote") or "").strip()
    if re.fullmatch(r"[A-Z][A-Z]+s?", quote):
        return fix_acronym(ctx, f)
    from pipeline.offline.comprehension import definitions

    found = definitions(ctx.view).get(" ".join(quote.lower().split()))
    place = _flagged_block(ctx, f)
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
    return _replace(ctx, used, start + len(quote), start + len(quote), f" ({text})")


def fix_acronym(ctx: Context, f: dict[str, Any]) -> bool:
    """An acronym the document defines only after its first use is defined at its first use,
    with the long form the later definition gives: "RDS" becomes "Relational Database
    Service (RDS)". The acronym itself is never altered; one the document never spells out
    is left for a person or a model (the long form is not the fixer's to invent)."""
    token = acronyms.base((f.get("quote") or "").strip())
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
                return _replace(ctx, block, use.start, use.start, f"{long} (") and _replace(
                    ctx, block, use.end, use.end, ")"
                )
    return False


def fix_aside(ctx: Context, f: dict[str, Any]) -> bool:
    changed = False
    for number, line in _lines_of(ctx, f):
        for start, text in find_asides(line):
            begin = start - 1 if start > 0 and line[start - 1] == " " else start
            changed |= ctx.edits.replace(number, begin, start + len(text), "")
    return changed


def fix_tldr(ctx: Context, f: dict[str, Any]) -> bool:
    section = ctx.doc.find(f.get("section") or "")
    if section is None or not section.is_body:
        return False
    body = [b for b in ctx.view.paragraphs(section.start + 1, section.end)]
    if not body or body[0].text.startswith("**TL;DR:**"):
        return False
    spans = sentence_spans(body[0].prose)
    summary = " ".join(body[0].text[spans[0][0] : spans[0][1]].split()) if spans else body[0].text
    return ctx.edits.insert(section.start + 1, ["", f"**TL;DR:** {summary}"])


def fix_tldr_mismatch(ctx: Context, f: dict[str, Any]) -> bool:
    """A TL;DR its body never discusses: the body opens by saying what the TL;DR says, so
    the summary and the section agree and nothing anyone wrote is lost."""
    section = ctx.doc.find(f.get("section") or "")
    if section is None or not section.is_body:
        return False
    paras = ctx.view.paragraphs(section.start + 1, section.end)
    if not paras or not paras[0].text.startswith("**TL;DR:**"):
        return False
    said = " ".join(paras[0].text.removeprefix("**TL;DR:**").split())
    return bool(said) and ctx.edits.insert(paras[0].end + 1, ["", said])


POINTER_CLAUSE_RE = re.compile(r"\s*\([^()]*\)|,[^,;]*$|^[^,;]*,\s*")


def fix_dangling(ctx: Context, f: dict[str, Any]) -> bool:
    """A reference that lands nowhere goes: its parenthetical aside, its clause, or (when the
    sentence only makes the promise) its sentence."""
    found = _flagged_block(ctx, f)
    if found is None:
        return False
    block, at = found
    span = next(((a, b) for a, b in sentence_spans(block.prose) if a <= at < b), None)
    if span is None:
        return False
    a, b = span
    quote = (f.get("quote") or "").strip()
    for start, end in _enclosing_aside(block.text, at, at + len(quote)):
        if a <= start and end <= b:
            return _replace(ctx, block, start, end, "")
    clauses = [m.span() for m in re.finditer(r"[^,;]+", block.text[a:b])]
    inside = [(a + x, a + y) for x, y in clauses if a + x <= at < a + y]
    if len(clauses) > 1 and inside:
        x, y = inside[0]
        start = x - 1 if x > a and block.text[x - 1] in ",;" else x
        if y >= b - 1:  # the last clause: keep the sentence's own mark
            return _replace(ctx, block, start, b - 1 if block.text[b - 1] in ".!?" else b, "")
        return _replace(ctx, block, x, y + 1 if block.text[y : y + 1] in ",;" else y, "")
    begin = a
    stop = b
    while stop < len(block.text) and block.text[stop] == " ":
        stop += 1
    return _replace(ctx, block, begin, stop, "")


def _enclosing_aside(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The parenthetical holding ``text[start:end]``, with the space before it."""
    open_at = text.rfind("(", 0, start)
    close_at = text.find(")", end)
    if open_at < 0 or close_at < 0 or ")" in text[open_at:start] or "(" in text[end:close_at]:
        return []
    begin = open_at - 1 if open_at > 0 and text[open_at - 1] == " " else open_at
    return [(begin, close_at + 1)]


def fix_no_overview(ctx: Context, f: dict[str, Any]) -> bool:
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


def fix_stamp(ctx: Context, f: dict[str, Any]) -> bool:
    line = f.get("line")
    if (
        isinstance(line, int)
        and 1 < line <= len(ctx.doc.lines)
        and STAMP_LIKE_RE.search(ctx.doc.lines[line - 1])
    ):
        return ctx.edits.replace_line(line, "")
    return False


def fix_reverse_ref(ctx: Context, f: dict[str, Any]) -> bool:
    changed = False
    for number, line in _lines_of(ctx, f):
        new = LINK_INTO_PLAN_RE.sub(r"\1", line)
        if new != line:
            changed |= ctx.edits.replace_line(number, new)
    return changed


def _flagged_block(ctx: Context, f: dict[str, Any]) -> tuple[Block, int] | None:
    """The block and offset where a finding's quote sits on its line."""
    line, quote = f.get("line"), (f.get("quote") or "").strip()
    if not isinstance(line, int) or not quote:
        return None
    for block in ctx.view.blocks:
        if block.start <= line <= block.end:
            index = line - block.start
            at = block.text.find(quote, block.starts[index])
            if at >= 0:
                return block, at
    return None


def fix_long_sentence(ctx: Context, f: dict[str, Any]) -> bool:
    """Split the sentence at its most central joints until each part is within the limit."""
    rule = ctx.rules.get("hs-sentence-length")
    found = _flagged_block(ctx, f)
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
            if JOINT_LEAD.get(m.group("word") or "", "") or _may_capitalise(block.text, m.end())
        ]
        if not joints:
            return changed
        middle = (a + b) / 2
        joint = min(joints, key=lambda m: abs(m.start() - middle))
        nxt = joint.end()
        lead = JOINT_LEAD.get(joint.group("word") or "", "")
        first = block.text[nxt : nxt + 1]
        tail = lead + (first if lead else first.upper())
        if not _replace(ctx, block, joint.start(), nxt + 1, ". " + tail):
            return changed
        changed = True
        pieces.remove((a, b))
        pieces += [(a, joint.start()), (nxt, b)]


def fix_wall(ctx: Context, f: dict[str, Any]) -> bool:
    """Split an over-long paragraph at sentence ends into parts within the limit."""
    rule = ctx.rules.get("hs-wall-of-text")
    found = _flagged_block(ctx, f)
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
            done = _replace(ctx, block, end, after, "\n\n" + indent)
        else:
            done = block.starts[line - block.start] == after and ctx.edits.insert(line, [""])
        if done:
            changed, since = True, 0
    return changed


def fix_dashes(ctx: Context, f: dict[str, Any]) -> bool:
    changed = False
    for block in _blocks_in(ctx, f.get("section")):
        for match in DASH_RE.finditer(block.prose):
            changed |= _replace(ctx, block, match.start(), match.end(), ", ")
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


def apply(text: str, flagged: list[dict[str, Any]], instructions: str) -> tuple[str, int, int]:
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
        rule = finding.get("rule", "")
        fixer = FIXERS.get(rule)
        if fixer in EVERY_USE:
            key = (rule, (finding.get("quote") or "").strip().lower())
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


def edits(old: str, new: str) -> list[tuple[str, str]]:
    """Unique (old_string, new_string) replacements turning ``old`` into ``new``, last first."""
    import difflib

    a, b = old.split("\n"), new.split("\n")
    out: list[tuple[str, str]] = []
    opcodes = [
        op for op in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes() if op[0] != "equal"
    ]
    for _, i1, i2, j1, j2 in reversed(opcodes):
        lo, hi = i1, i2
        while True:
            chunk = "\n".join(a[lo:hi])
            if chunk and old.count(chunk) == 1:
                break
            if lo == 0 and hi == len(a):
                break
            lo, hi = max(0, lo - 1), min(len(a), hi + 1)
        replacement = "\n".join(a[lo:i1] + b[j1:j2] + a[i2:hi])
        out.append(("\n".join(a[lo:hi]), replacement))
    return out
