"""The offline readability auditor: the house-style rules over one slice, cold.

It reads its params, its slice of the design and the standing anchors, and nothing else.
The rules and their word lists come from the house style in its own instructions, so a
user's prompts/house-style.md override changes both a model's audit and this one. The
text it judges is the prose view (formats.prose): code, HTML comments, link targets, URLs
and front matter are never prose. Every finding carries its line and an exact quote; a rule
reports a subject (a term, an acronym) once, with the other lines it saw listed.
"""

from __future__ import annotations

import re
from typing import Any

from pipeline.checks.table import SEVERITIES
from pipeline.formats.prose import Block, ProseView, parse_prose, words_of
from pipeline.formats.slices import whole_doc_guard
from pipeline.offline import acronyms, prose_lint, wording
from pipeline.offline.observe import Observations
from pipeline.offline.pages import read_lines
from pipeline.offline.report import Report
from pipeline.offline.text import (
    HouseRule,
    keywords,
    known_acronyms,
    parse_house_style,
    review_finding,
    sentence_spans,
    verdict_of,
)

PASSIVE_RE = re.compile(r"\b(?:is|are|was|were|be|been|being)\s+(?:\w+ly\s+)?\w+(?:ed|en)\b", re.IGNORECASE)
DASH_RE = re.compile(r"—|(?<=\s)--(?=\s)")
ENUMERATION_RE = re.compile(r"\(\s*\d{1,2}\.?\s*\)|(?<![\w(])\d{1,2}\)")


def _severity(rule: HouseRule, measure: float | None = None) -> str:
    severity = rule.severity if rule.severity in SEVERITIES else "should-fix"
    if measure is not None and rule.hard_limit is not None and measure <= rule.hard_limit:
        return "suggestion"
    return severity


def _guard(params: dict[str, Any]) -> dict[str, Any] | None:
    """The agent-side whole-doc guard (docs/formats.md §8.5), shared with the orchestrator's code."""
    tripped = whole_doc_guard(params, str(params.get("target_path")))
    if tripped is None:
        return None
    return verdict_of(
        [review_finding(tripped.rule, tripped.message, tripped.suggested_fix, severity="blocker")]
    )


def _term_rules(view: ProseView, blocks: list[Block], rules: dict[str, HouseRule], report: Report) -> None:
    for rule in (r for r in rules.values() if r.terms):
        for block in blocks:
            for hit in wording.hits(block, rule):
                said = block.text[hit.start : hit.end]
                repl = rule.replace.get(hit.term.lower())
                if repl is None:
                    fix = f"rewrite without '{said}': {rule.advice}"
                else:
                    fix = f"replace '{said}' with '{repl}'" if repl else f"delete '{said}'"
                report.add(
                    rule.id,
                    hit.term.lower(),
                    _severity(rule),
                    hit.line,
                    hit.quote,
                    f"{rule.title.lower()}: '{said}'",
                    fix,
                )


def _sentence_rules(blocks: list[Block], rules: dict[str, HouseRule], report: Report) -> None:
    long_rule, passive_rule = rules.get("hs-sentence-length"), rules.get("hs-passive-stack")
    for block in blocks:
        if block.kind != "paragraph":
            continue
        for start, end in sentence_spans(block.prose):
            sentence = block.prose[start:end]
            # Link texts (a run of linked examples) are not words the reader must hold.
            inside = [(a, b) for a, b, _ in block.links if start <= a and b <= end]
            count = len(words_of(sentence)) - sum(len(words_of(block.prose[a:b])) for a, b in inside)
            line = block.line_at(start)
            if long_rule and long_rule.limit and count > long_rule.limit:
                # An inline enumeration, "(1) ... (2) ...", or a run of three or more linked
                # examples is a list written on one line, not a sentence the reader must hold.
                listed = len(ENUMERATION_RE.findall(sentence)) >= 2 or len(inside) >= 3
                report.add(
                    long_rule.id,
                    f"{line}:{start}",
                    "suggestion" if listed else _severity(long_rule, count),
                    line,
                    block.quote(start, end, 80),
                    f"sentence of {count} words (limit {long_rule.limit:g})",
                    "split it into two or three sentences at its joints",
                )
            if (
                passive_rule
                and passive_rule.limit
                and len(PASSIVE_RE.findall(sentence)) >= passive_rule.limit
            ):
                report.add(
                    passive_rule.id,
                    f"{line}:{start}",
                    _severity(passive_rule),
                    line,
                    block.quote(start, end, 80),
                    "several stacked passive constructions",
                    "name who does what, in the active voice",
                )


def _walls(blocks: list[Block], rule: HouseRule | None, report: Report) -> None:
    if rule is None or not rule.limit:
        return
    for block in blocks:
        count = len(block.words)
        if block.kind == "paragraph" and count > rule.limit:
            report.add(
                rule.id,
                str(block.start),
                _severity(rule, count),
                block.start,
                block.quote(0, len(block.text), 60),
                f"paragraph of {count} words (limit {rule.limit:g})",
                "break it into shorter paragraphs or a list of steps",
            )


def _dash_density(view: ProseView, blocks: list[Block], rule: HouseRule | None, report: Report) -> None:
    if rule is None or not rule.limit:
        return
    by_section: dict[str | None, list[Any]] = {}
    for block in blocks:
        entry = by_section.setdefault(view.section_at(block.start), [0, 0, None])
        dashes = list(DASH_RE.finditer(block.prose))
        entry[0] += len(dashes)
        entry[1] += len(block.words)
        if dashes and entry[2] is None:
            entry[2] = (
                block.line_at(dashes[0].start()),
                block.quote(dashes[0].start() - 20, dashes[0].end() + 20),
            )
    for section, (dashes, total, where) in by_section.items():
        density = dashes * 1000 / max(total, 250)
        if dashes and density > rule.limit and where is not None:
            report.add(
                rule.id,
                str(section),
                _severity(rule),
                where[0],
                where[1],
                f"{dashes} dashes in {total} words: {density:.1f} per 1,000 (limit {rule.limit:g})",
                "turn most dashes into full stops or commas",
            )


def _acronyms(
    view: ProseView,
    blocks: list[Block],
    rule: HouseRule | None,
    lexicon: acronyms.Lexicon,
    whole: bool,
    report: Report,
) -> None:
    """Acronyms not defined at or before first use in what this auditor can see.

    When the view holds every line before the use (the first slice), the finding is certain
    and takes the rule's severity; a later slice cannot see the lines between the anchors
    and its start, so there it is a suggestion.
    """
    if rule is None or not blocks:
        return
    seen: set[str] = set()
    title = next((h.text for h in view.headings if h.level == 1), "")
    defined: set[str] = acronyms.titled(title)
    previous: set[str] = set()
    for block in view.blocks:
        if block.start >= blocks[0].start:
            break
        previous = acronyms.long_forms(block.prose)
        defined |= acronyms.definitions(block.prose) | previous
    for block in blocks:
        spelled = acronyms.long_forms(block.prose)
        here = acronyms.definitions(block.prose) | spelled | previous
        previous = spelled
        for use in acronyms.uses(block, lexicon):
            if use.token in seen:
                report.also_at(rule.id, use.token, use.line)
                continue
            seen.add(use.token)
            if use.token in defined or use.token in here or use.linked:
                continue
            report.add(
                rule.id,
                use.token,
                _severity(rule) if whole else "suggestion",
                use.line,
                use.quote,
                f"acronym {use.token} is used before it is defined"
                + ("" if whole else " in this slice, the Overview or Core Concepts"),
                f"spell it out at first use, e.g. '<long form> ({use.token})'",
            )
        defined |= here


def audit(
    view: ProseView,
    start: int,
    end: int,
    rules: dict[str, HouseRule],
    known: frozenset[str],
    words: frozenset[str],
) -> list[dict[str, Any]]:
    report = Report(view.section_at)
    prose = view.paragraphs(start, end)
    _term_rules(view, prose, rules, report)
    _sentence_rules(prose, rules, report)
    _walls(prose, rules.get("hs-wall-of-text"), report)
    _dash_density(view, prose, rules.get("hs-em-dash"), report)
    lexicon = acronyms.Lexicon(view, known, words)
    _acronyms(view, prose, rules.get("hs-acronym"), lexicon, start == 1, report)
    found = report.findings()
    taken = {(f["line"], (f["quote"] or "").lower()) for f in found}
    for item in prose_lint.lint(view, prose):
        if (item["line"], (item["quote"] or "").lower()) not in taken:
            found.append(item)
    return found


def read_view(params: dict[str, Any], obs: Observations) -> tuple[ProseView, int, int]:
    """The whole target, parsed (the acronym rule needs what comes before the slice), and the
    slice's first and last line."""
    path = params["target_path"]
    slice_ = params.get("slice")
    lines = read_lines(obs, path)
    total = len(lines)
    start, end = (int(slice_[0]), int(slice_[1])) if slice_ else (1, total)
    return parse_prose("\n".join(lines) + "\n", lines), start, min(end, total)


def run(params: dict[str, Any], obs: Observations) -> dict[str, Any]:
    guarded = _guard(params)
    if guarded is not None:
        return guarded
    view, start, end = read_view(params, obs)
    rules = parse_house_style(obs.instructions)
    findings = audit(view, start, end, rules, known_acronyms(obs.instructions), keywords(obs.instructions))
    return verdict_of(findings)
