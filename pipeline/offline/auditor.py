"""The offline readability auditor: the house-style rules over one slice, cold.

It reads its params, its slice of the design and the standing anchors, and nothing else.
The rules and their word lists come from the house style in its own instructions, so a
user's prompts/house-style.md override changes both a model's audit and this one.
"""

from __future__ import annotations

import re
from typing import Any

from pipeline.formats.design_doc import DesignDoc
from pipeline.formats.slices import whole_doc_guard
from pipeline.offline import prose_lint
from pipeline.offline.driver import Observations
from pipeline.offline.text import (
    HouseRule,
    Paragraph,
    acronym_base,
    acronyms_in,
    clean,
    defines_acronym,
    doc_from_text,
    find_terms,
    paragraphs,
    parse_house_style,
    quote_of,
    review_finding,
    sentences,
    verdict_of,
    words,
)

PASSIVE_RE = re.compile(r"\b(?:is|are|was|were|be|been|being)\s+(?:\w+ly\s+)?\w+(?:ed|en)\b", re.IGNORECASE)
DASH_RE = re.compile(r"—|(?<=\s)--(?=\s)")


def finding(
    rule: HouseRule, section: str | None, quote: str | None, message: str, fix: str
) -> dict[str, Any]:
    severity = rule.severity if rule.severity in ("blocker", "should-fix", "suggestion") else "should-fix"
    return review_finding(rule.id, message, fix, severity=severity, section=section, quote=quote)


def _guard(params: dict[str, Any]) -> dict[str, Any] | None:
    """The agent-side whole-doc guard (docs/formats.md §8.5), shared with the orchestrator's code."""
    tripped = whole_doc_guard(params, str(params.get("target_path")))
    if tripped is None:
        return None
    return verdict_of(
        [review_finding(tripped.rule, tripped.message, tripped.suggested_fix, severity="blocker")]
    )


def _term_rules(rules: dict[str, HouseRule]) -> list[HouseRule]:
    return [r for r in rules.values() if r.terms]


def audit(doc: DesignDoc, start: int, end: int, rules: dict[str, HouseRule]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    paras = paragraphs(doc, start, end)
    name = doc.section_name_at
    # Term rules, per prose line (inline code and link targets are not prose).
    for para in paras:
        for number, raw in para.lines:
            text = clean(raw)
            for rule in _term_rules(rules):
                for term, match in find_terms(text, rule.terms):
                    repl = rule.replace.get(term.lower())
                    fix = (
                        (
                            f"replace '{match.group(0)}' with '{repl}'"
                            if repl
                            else f"delete '{match.group(0)}'"
                        )
                        if repl is not None
                        else f"rewrite without '{match.group(0)}': {rule.advice}"
                    )
                    out.append(
                        finding(
                            rule,
                            name(number),
                            match.group(0),
                            f"{rule.title.lower()}: '{match.group(0)}' (line {number})",
                            fix,
                        )
                    )
    long_rule, wall_rule, passive_rule = (
        rules.get("hs-sentence-length"),
        rules.get("hs-wall-of-text"),
        rules.get("hs-passive-stack"),
    )
    for para in paras:
        _sentence_rules(para, name(para.start), long_rule, passive_rule, out)
        if wall_rule and wall_rule.limit and len(words(para.text)) > wall_rule.limit:
            count = len(words(para.text))
            out.append(
                finding(
                    wall_rule,
                    name(para.start),
                    quote_of(para.raw, 0, 60, 0),
                    f"paragraph of {count} words (limit {wall_rule.limit:g}) at line {para.start}",
                    "break it into shorter paragraphs or a list of steps",
                )
            )
    dash_rule = rules.get("hs-em-dash")
    if dash_rule and dash_rule.limit:
        _dash_density(doc, start, end, paras, dash_rule, out)
    acro_rule = rules.get("hs-acronym")
    if acro_rule:
        _acronyms(doc, start, end, paras, acro_rule, out)
    seen = {(f["rule"], f["section"], (f["quote"] or "").lower()) for f in out}
    for item in prose_lint.lint(doc, paras):
        if not any(item["quote"] and item["quote"].lower() == q and s == item["section"] for _, s, q in seen):
            out.append(item)
    return out


def _sentence_rules(
    para: Paragraph,
    section: str | None,
    long_rule: HouseRule | None,
    passive_rule: HouseRule | None,
    out: list[dict[str, Any]],
) -> None:
    for sentence in sentences(para.text):
        count = len(words(sentence))
        if long_rule and long_rule.limit and count > long_rule.limit:
            out.append(
                finding(
                    long_rule,
                    section,
                    sentence[:80],
                    f"sentence of {count} words (limit {long_rule.limit:g}) near line {para.start}",
                    "split it into two or three sentences at its joints",
                )
            )
        if passive_rule and passive_rule.limit and len(PASSIVE_RE.findall(sentence)) >= passive_rule.limit:
            out.append(
                finding(
                    passive_rule,
                    section,
                    sentence[:80],
                    "several stacked passive constructions",
                    "name who does what, in the active voice",
                )
            )


def _dash_density(
    doc: DesignDoc, start: int, end: int, paras: list[Paragraph], rule: HouseRule, out: list[dict[str, Any]]
) -> None:
    by_section: dict[str | None, tuple[int, int, str]] = {}
    for para in paras:
        section = doc.section_name_at(para.start)
        dashes = sum(len(DASH_RE.findall(raw)) for _, raw in para.lines)
        count, total, first = by_section.get(section, (0, 0, ""))
        quote = first or next((raw.strip() for _, raw in para.lines if DASH_RE.search(raw)), "")
        by_section[section] = (count + dashes, total + len(words(para.text)), quote)
    assert rule.limit is not None
    for section, (dashes, total, quote) in by_section.items():
        density = dashes * 1000 / max(total, 250)
        if dashes and density > rule.limit:
            out.append(
                finding(
                    rule,
                    section,
                    quote[:80],
                    f"{dashes} dashes in {total} words: {density:.1f} per 1,000 (limit {rule.limit:g})",
                    "turn most dashes into full stops or commas",
                )
            )


def _acronyms(
    doc: DesignDoc, start: int, end: int, paras: list[Paragraph], rule: HouseRule, out: list[dict[str, Any]]
) -> None:
    anchors = "\n".join(doc.text_of(a) for a in doc.anchors())
    seen: set[str] = set()
    earlier = anchors
    for para in paras:
        for number, raw in para.lines:
            text = clean(raw)
            for match in acronyms_in(text):
                token = acronym_base(match.group(0))
                if token in rule.known or match.group(0) in rule.known or token in seen or token == "CODE":
                    continue
                if len(token) < 2 or defines_acronym(earlier, token) or defines_acronym(raw, token):
                    seen.add(token)
                    continue
                seen.add(token)
                out.append(
                    finding(
                        rule,
                        doc.section_name_at(number),
                        token,
                        f"acronym {token} is used before it is defined (line {number})",
                        f"spell it out at first use, e.g. '<long form> ({token})'",
                    )
                )
            earlier += "\n" + raw


GREP_LINE_RE = re.compile(r"^(?P<path>.*?):(?P<line>\d+):(?P<text>.*)$")


def read_view(params: dict[str, Any], obs: Observations) -> tuple[DesignDoc, int, int]:
    """Read only the slice, the heading lines and the standing anchors; blank the rest."""
    path = params["target_path"]
    heads = obs.call("grep", pattern=r"^#{1,2} ", path=path)
    if heads.startswith(("refused:", "error:")):
        raise RuntimeError(f"cannot read the design: {heads}")
    headings: dict[int, str] = {}
    for line in heads.splitlines():
        match = GREP_LINE_RE.match(line)
        if match:
            headings[int(match.group("line"))] = match.group("text")
    slice_ = params.get("slice")
    start, end = (int(slice_[0]), int(slice_[1])) if slice_ else (1, None)
    ranges = [(start, None if end is None else end - start + 1)]
    ordered = sorted(headings)
    for number in ordered:
        if headings[number].strip() in ("## Overview", "## Core Concepts"):
            later = [n for n in ordered if n > number]
            ranges.append((number, (later[0] - number) if later else None))
    calls: list[tuple[str, dict[str, Any]]] = []
    for offset, limit in ranges:
        args: dict[str, Any] = {"path": path, "offset": offset}
        if limit is not None:
            args["limit"] = limit
        calls.append(("read", args))
    texts = obs.call_many(calls)
    lines: dict[int, str] = dict(headings)
    for (offset, _), text in zip(ranges, texts, strict=True):
        for i, line in enumerate(text.splitlines()):
            lines[offset + i] = line
    total = int(params.get("total_lines") or max(lines, default=0))
    end = end if end is not None else total
    body = "\n".join(lines.get(n, "") for n in range(1, max(total, max(lines, default=0)) + 1)) + "\n"
    return doc_from_text(body), start, end


def run(params: dict[str, Any], obs: Observations) -> dict[str, Any]:
    guarded = _guard(params)
    if guarded is not None:
        return guarded
    doc, start, end = read_view(params, obs)
    rules = parse_house_style(obs.instructions)
    findings = audit(doc, start, end, rules)
    return verdict_of(findings)
