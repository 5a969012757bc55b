"""Deterministic fixes for flagged passages: what a rule can repair without judgement.

Used by the offline author on later rounds and by the offline inline editor. A finding
whose fix needs judgement is left alone and reported as not fixed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pipeline.checks.engine import find_asides
from pipeline.formats.design_doc import STAMP_LIKE_RE, DesignDoc
from pipeline.offline.text import HouseRule, doc_from_text, sentences, term_pattern, words

Fixer = Callable[[list[str], DesignDoc, dict[str, Any], dict[str, HouseRule]], bool]
LINK_INTO_PLAN_RE = re.compile(r"\[([^\]]+)\]\(\s*(?:\.{1,2}/)*(?:plan/|implementation-plan\.md)[^)]*\)")


def _section_range(doc: DesignDoc, name: str | None) -> tuple[int, int]:
    section = doc.find(name) if name else None
    return (section.start, section.end) if section else (1, len(doc.lines))


def _prose_numbers(doc: DesignDoc, start: int, end: int) -> list[int]:
    return [n for n, t in doc.prose_lines(start, end) if t.strip() and not t.lstrip().startswith("#")]


def _case_like(original: str, replacement: str) -> str:
    if replacement and original[:1].isupper():
        return replacement[:1].upper() + replacement[1:]
    return replacement


SENTENCE_START_RE = re.compile(r"(?:^\s*(?:[-*+]\s+)?(?:\*\*[^*]+\*\*\s*)?|[.!?:]\s+)$")


def replace_term(line: str, pattern: re.Pattern[str], repl: str) -> str:
    """Replace every match outside code spans, keeping sentences well-formed."""
    pos = 0
    while True:
        code = [m.span() for m in re.finditer(r"`[^`]*`", line)]
        match = next(
            (m for m in pattern.finditer(line, pos) if not any(a <= m.start() < b for a, b in code)), None
        )
        if match is None:
            break
        head, tail = line[: match.start()], line[match.end() :]
        if repl:
            piece = _case_like(match.group(0), repl)
            line, pos = head + piece + tail, len(head) + len(piece)
            continue
        if SENTENCE_START_RE.search(head):
            tail = tail.lstrip(" ,")
            tail = tail[:1].upper() + tail[1:]
            line, pos = head + tail, len(head)
        else:
            head = head.rstrip(" ")
            line, pos = head + (tail if tail[:1] in ",.;:!?)" else " " + tail.lstrip(" ")), len(head)
    return line


def fix_term(lines: list[str], doc: DesignDoc, f: dict[str, Any], rules: dict[str, HouseRule]) -> bool:
    rule = rules.get(f["rule"])
    quote = f.get("quote")
    if rule is None or not quote or quote.lower() not in rule.replace:
        return False
    repl = rule.replace[quote.lower()]
    start, end = _section_range(doc, f.get("section"))
    pattern = term_pattern(quote)
    changed = False
    for n in _prose_numbers(doc, start, end):
        new = replace_term(lines[n - 1], pattern, repl)
        if new != lines[n - 1]:
            lines[n - 1], changed = new, True
    return changed


def fix_acronym(lines: list[str], doc: DesignDoc, f: dict[str, Any], rules: dict[str, HouseRule]) -> bool:
    token = f.get("quote")
    if not token:
        return False
    start, end = _section_range(doc, f.get("section"))
    pattern = re.compile(rf"(?<![\w`-]){re.escape(token)}(?![\w`-])")
    changed = False
    for n in _prose_numbers(doc, start, end):
        new = pattern.sub(f"`{token}`", lines[n - 1])
        if new != lines[n - 1]:
            lines[n - 1], changed = new, True
    return changed


def fix_aside(lines: list[str], doc: DesignDoc, f: dict[str, Any], rules: dict[str, HouseRule]) -> bool:
    changed = False
    for n in _prose_numbers(doc, 1, len(doc.lines)):
        line = lines[n - 1]
        for start, text in sorted(find_asides(line), reverse=True):
            line = line[:start] + line[start + len(text) :]
        if line != lines[n - 1]:
            lines[n - 1], changed = line, True
    return changed


def fix_tldr(lines: list[str], doc: DesignDoc, f: dict[str, Any], rules: dict[str, HouseRule]) -> bool:
    section = doc.find(f.get("section") or "")
    if section is None or not section.is_body:
        return False
    body = _prose_numbers(doc, section.start + 1, section.end)
    if not body:
        return False
    first = lines[body[0] - 1].strip()
    if first.startswith("**TL;DR:**"):
        return False
    summary = sentences(first)[0] if sentences(first) else first
    lines.insert(section.start, "")
    lines.insert(section.start + 1, f"**TL;DR:** {summary}")
    return True


def fix_stamp(lines: list[str], doc: DesignDoc, f: dict[str, Any], rules: dict[str, HouseRule]) -> bool:
    line = f.get("line")
    if isinstance(line, int) and line > 1 and STAMP_LIKE_RE.search(lines[line - 1]):
        lines[line - 1] = ""
        return True
    return False


def fix_reverse_ref(lines: list[str], doc: DesignDoc, f: dict[str, Any], rules: dict[str, HouseRule]) -> bool:
    changed = False
    for n in _prose_numbers(doc, 1, len(doc.lines)):
        new = LINK_INTO_PLAN_RE.sub(r"\1", lines[n - 1])
        if new != lines[n - 1]:
            lines[n - 1], changed = new, True
    return changed


def _split_at_joint(sentence: str) -> str | None:
    joints = [m.start() for m in re.finditer(r",\s+(?:and|but|so|which|while|because)\s|;\s", sentence)]
    if not joints:
        return None
    middle = len(sentence) / 2
    at = min(joints, key=lambda j: abs(j - middle))
    head = sentence[:at].rstrip(",; ")
    tail = re.sub(r"^[,;]\s+(?:and|but|so|which|while|because)?\s*", "", sentence[at:])
    if not tail:
        return None
    return f"{head}. {tail[:1].upper()}{tail[1:]}"


def fix_long_sentence(
    lines: list[str], doc: DesignDoc, f: dict[str, Any], rules: dict[str, HouseRule]
) -> bool:
    quote = (f.get("quote") or "")[:40]
    start, end = _section_range(doc, f.get("section"))
    for n in _prose_numbers(doc, start, end):
        line = lines[n - 1]
        for sentence in sentences(line):
            if quote and sentence.startswith(quote[:20]) and len(words(sentence)) > 20:
                split = _split_at_joint(sentence)
                if split:
                    lines[n - 1] = line.replace(sentence, split, 1)
                    return True
    return False


def fix_wall(lines: list[str], doc: DesignDoc, f: dict[str, Any], rules: dict[str, HouseRule]) -> bool:
    start, end = _section_range(doc, f.get("section"))
    for n in _prose_numbers(doc, start, end):
        line = lines[n - 1]
        parts = sentences(line)
        if len(words(line)) > 80 and len(parts) >= 2:
            half = len(parts) // 2
            lines[n - 1] = " ".join(parts[:half]) + "\n\n" + " ".join(parts[half:])
            return True
    return False


def fix_dashes(lines: list[str], doc: DesignDoc, f: dict[str, Any], rules: dict[str, HouseRule]) -> bool:
    start, end = _section_range(doc, f.get("section"))
    changed = False
    for n in _prose_numbers(doc, start, end):
        new = re.sub(r"\s*—\s*|\s+--\s+", ", ", lines[n - 1])
        if new != lines[n - 1]:
            lines[n - 1], changed = new, True
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
    "hs-sentence-length": fix_long_sentence,
    "hs-wall-of-text": fix_wall,
    "hs-em-dash": fix_dashes,
}


def apply(text: str, flagged: list[dict[str, Any]], rules: dict[str, HouseRule]) -> tuple[str, int, int]:
    """Apply every fixable finding; returns (new text, fixed count, left count)."""
    lines = text.split("\n")
    fixed = left = 0
    for finding in flagged:
        fixer = FIXERS.get(finding.get("rule", ""))
        doc = doc_from_text("\n".join(lines))
        if fixer is not None and fixer(lines, doc, finding, rules):
            fixed += 1
        else:
            left += 1
    return "\n".join("\n".join(lines).split("\n")), fixed, left


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
