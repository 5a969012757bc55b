"""The offline comprehension gate: a cold structural reading of the whole design.

Terms and acronyms used before they are defined, references that do not land, TL;DRs
about something other than their section, and undecided decisions in the prose.
"""

from __future__ import annotations

import re
from typing import Any

from pipeline.formats.design_doc import CORE_CONCEPTS, OVERVIEW, DesignDoc
from pipeline.offline.driver import Observations
from pipeline.offline.logtext import records
from pipeline.offline.text import (
    acronym_base,
    acronyms_in,
    clean,
    containment,
    content_words,
    defines_acronym,
    doc_from_text,
    find_terms,
    known_acronyms,
    lexicon,
    paragraphs,
    review_finding,
    sentences,
    term_pattern,
    verdict_of,
)

BOLD_TERM_RE = re.compile(r"\*\*(?P<term>[^*:]{3,60}?)\*\*")
SECTION_REF_RE = re.compile(r'§\s*"(?P<q>[^"]+)"|§(?P<bare>[A-Za-z][\w\- ]*[\w])')
NAMED_SECTION_REF_RE = re.compile(r'\b(?:see|in) the "?(?P<name>[A-Z][\w\- ]{2,60}?)"? section\b')
TLDR_PREFIX = "**TL;DR:**"


def _finding(
    severity: str,
    rule: str,
    section: str | None,
    quote: str | None,
    message: str,
    fix: str,
    decision_shaped: bool = False,
) -> dict[str, Any]:
    return review_finding(
        rule, message, fix, severity=severity, section=section, quote=quote, decision_shaped=decision_shaped
    )


def _definitions(doc: DesignDoc) -> dict[str, int]:
    """Bold-defined terms (``- **Term**: ...`` or ``**Term** is``) and the line defining them."""
    found: dict[str, int] = {}
    for number, line in doc.prose_lines():
        stripped = line.strip()
        for match in BOLD_TERM_RE.finditer(stripped):
            term = match.group("term").strip()
            if term.endswith((".", ",", ";")) or len(term.split()) > 4:
                continue
            rest = stripped[match.end() : match.end() + 6]
            at_item = stripped.startswith(("- **", "* **")) and match.start() <= 2
            if (
                at_item or rest.lstrip().startswith(("is ", "are ", ":", "—", "-"))
            ) and term.lower() not in found:
                found[term.lower()] = number
    return found


def term_order(doc: DesignDoc, known: frozenset[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    defs = _definitions(doc)
    overview = doc.find(OVERVIEW)
    skip = set(range(overview.start, overview.end + 1)) if overview else set()
    for term, def_line in defs.items():
        pattern = term_pattern(term)
        for number, line in doc.prose_lines(1, def_line - 1):
            if number in skip or line.lstrip().startswith("#"):
                continue
            if pattern.search(clean(line)):
                out.append(
                    _finding(
                        "should-fix",
                        "cr-term-order",
                        doc.section_name_at(number),
                        term,
                        f"'{term}' is used on line {number} before it is defined on line {def_line}",
                        f"define '{term}' before its first use, or move the definition up",
                    )
                )
                break
    seen: set[str] = set()
    text_so_far = ""
    for number, line in doc.prose_lines():
        if line.lstrip().startswith("#"):
            text_so_far += "\n" + line
            continue
        for match in acronyms_in(clean(line)):
            token = acronym_base(match.group(0))
            if (
                token in known
                or match.group(0) in known
                or token in seen
                or token == "CODE"
                or len(token) < 2
            ):
                continue
            seen.add(token)
            if defines_acronym(text_so_far + "\n" + line, token):
                continue
            later = [n for n, t in doc.prose_lines(number + 1) if defines_acronym(t, token)]
            where = f"defined only later, on line {later[0]}" if later else "never defined"
            out.append(
                _finding(
                    "should-fix",
                    "cr-term-order",
                    doc.section_name_at(number),
                    token,
                    f"acronym {token} on line {number} is {where}",
                    f"spell it out at first use: '<long form> ({token})'",
                )
            )
        text_so_far += "\n" + line
    return out


def dangling_refs(doc: DesignDoc) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    names = {s.name.lower() for s in doc.sections}
    records = doc.find("Decision Records")
    body = [
        n
        for n, t in doc.prose_lines(1, records.start - 1 if records else None)
        if t.strip() and not t.lstrip().startswith("#")
    ]
    last_body_line = max(body, default=0)

    def dangling(number: int, quote: str, message: str, fix: str) -> None:
        out.append(
            _finding("should-fix", "cr-dangling-ref", doc.section_name_at(number), quote, message, fix)
        )

    for number, line in doc.prose_lines():
        text = clean(line, keep_code=True)
        for match in SECTION_REF_RE.finditer(line):
            target = (match.group("q") or match.group("bare") or "").strip()
            if target.lower() not in names:
                dangling(
                    number,
                    match.group(0),
                    f"reference {match.group(0)} on line {number} names no section",
                    "point it at an existing section heading, or remove it",
                )
        for match in NAMED_SECTION_REF_RE.finditer(text):
            target = match.group("name").strip()
            if target.lower() not in names:
                dangling(
                    number,
                    match.group(0),
                    f"'{match.group(0)}' on line {number}: there is no '{target}' section",
                    "name an existing section, or add the section",
                )
        for _, match in find_terms(text, lexicon().forward_refs):
            if number >= last_body_line:  # no body prose after it
                dangling(
                    number,
                    match.group(0),
                    f"'{match.group(0)}' on line {number}, but nothing follows it",
                    "add what it promises, or remove the pointer",
                )
    return out


def tldr_mismatch(doc: DesignDoc) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for section in doc.body_sections():
        paras = paragraphs(doc, section.start + 1, section.end)
        if not paras or not paras[0].raw.startswith(TLDR_PREFIX):
            continue
        tldr = content_words(paras[0].text.removeprefix("TL;DR:"))
        body = set().union(*(content_words(p.text) for p in paras[1:])) | content_words(section.name)
        if len(tldr) >= 3 and len(body) >= 8 and containment(tldr, body) < 0.1:
            out.append(
                _finding(
                    "should-fix",
                    "cr-tldr-mismatch",
                    section.name,
                    paras[0].raw[:80],
                    f'the TL;DR of "{section.name}" is about something its body never discusses',
                    "rewrite the TL;DR to summarise this section's body",
                )
            )
    return out


def decision_shaped(doc: DesignDoc) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    recs = records(doc)
    container = doc.find("Decision Records")
    phrases = lexicon().decision_phrases
    for section in doc.body_sections():
        if container and section.start >= container.start:
            continue
        for para in paragraphs(doc, section.start + 1, section.end):
            for sentence in sentences(para.text):
                if not any(True for _ in find_terms(sentence, phrases)):
                    continue
                words = content_words(sentence)
                if any(
                    containment(r.key_terms, words) >= 0.4
                    or containment(words, r.key_terms | content_words(r.alternatives)) >= 0.5
                    for r in recs
                ):
                    continue
                out.append(
                    _finding(
                        "should-fix",
                        "cr-decision-shaped",
                        section.name,
                        sentence[:100],
                        "this sentence makes a design decision that no decision record covers",
                        "take it to the research log's adversarial gate; then record it",
                        decision_shaped=True,
                    )
                )
    return out


def review(doc: DesignDoc, known: frozenset[str]) -> list[dict[str, Any]]:
    findings = term_order(doc, known) + dangling_refs(doc) + tldr_mismatch(doc) + decision_shaped(doc)
    if doc.find(CORE_CONCEPTS) is None and doc.find(OVERVIEW) is None:
        findings.append(
            _finding(
                "blocker",
                "cr-no-overview",
                None,
                None,
                "the design has no Overview",
                "add a concept-first ## Overview",
            )
        )
    return findings


def run(params: dict[str, Any], obs: Observations) -> dict[str, Any]:
    text = obs.call("read", path=params["design_path"])
    if text.startswith(("refused:", "error:")):
        raise RuntimeError(text)
    findings = review(doc_from_text(text), known_acronyms(obs.instructions))
    return verdict_of(findings)
