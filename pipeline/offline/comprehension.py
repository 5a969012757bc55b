"""The offline comprehension gate: a cold structural reading of the whole design.

Terms and acronyms used before they are defined, references that do not land, TL;DRs
about something other than their section, and undecided decisions in the prose. It reads
the prose view (formats.prose), so code, comments, link targets and front matter are never
taken for prose; each rule reports a subject once per document, at its first place, with
the line and the document's own words. One pass over the blocks per rule: linear in the
document's size.
"""

from __future__ import annotations

import re

from pipeline.formats.contracts import ReviewOutput
from pipeline.formats.design_doc import DesignDoc
from pipeline.formats.findings import Finding
from pipeline.formats.prose import Block, ProseView, parse_prose
from pipeline.formats.spawn_params import SpawnParams
from pipeline.offline import acronyms
from pipeline.offline.deadline import checkpoint
from pipeline.offline.logtext import records
from pipeline.offline.loose_ends import loose_ends
from pipeline.offline.observe import Observations, required
from pipeline.offline.pages import read_whole
from pipeline.offline.references import dangling_refs, heading_names
from pipeline.offline.report import Report
from pipeline.offline.text import (
    TLDR,
    alternation,
    containment,
    content_words,
    doc_from_text,
    find_terms,
    keywords,
    known_acronyms,
    lexicon,
    review_finding,
    seed_shaped,
    sentence_spans,
)

BOLD_TERM_RE = re.compile(r"\*\*(?P<term>[^*:]{2,60}?)(?P<colon>:?)\*\*")
"""A bold span, wrapped over lines or not."""
DEFINES_RE = re.compile(r"^\s*(?::|—|–|-\s)|^\s+(?:is|are|means|refers\s+to|denotes)\s", re.IGNORECASE)
DEFINING_SENTENCE_RE = re.compile(
    r"^\s+(?:(?:is|are)\s+(?:an?|the|one|any|each|every|some|what|when|where|how|whatever|used|defined|"
    r"called|known|our|its|their|this|that|these|those)\b|are\s+(?![a-z]+ly\b)[a-z]+s\b|means\s|"
    r"refers\s+to\s|denotes\s|stands\s+for\s)",
    re.IGNORECASE,
)
"""What a sentence that defines a term says next: what the term is ("**Lease** is a claim",
"**Inference tensors** are tensors"), never how it is ("**Adaptive Logging** is quite useful")."""


def _glossary(view: ProseView, block: Block) -> bool:
    names = {n.lower() for n in lexicon().glossary_names}
    section = (view.section_at(block.start) or "").lower().rstrip(":")
    heading = view.heading_before(block.start)
    return section in names or (heading is not None and heading.text.lower().rstrip(":") in names)


def definitions(view: ProseView) -> dict[str, tuple[int, Block]]:
    """Bold terms the document defines, and where: a bold item of a glossary-like section
    (Core Concepts, Glossary, Terminology ...), or ``**Term** is/means ...`` in any prose.
    A bold label ("**Rationale**:" at the start of a paragraph) defines nothing."""
    found: dict[str, tuple[int, Block]] = {}
    plain = {w for b in view.blocks for w in re.findall(r"(?<![A-Za-z])[a-z][a-z-]+(?![A-Za-z])", b.prose)}
    for block in view.paragraphs():
        checkpoint()
        for match in BOLD_TERM_RE.finditer(block.text):
            term = " ".join(match.group("term").split())
            if not term or term.endswith((".", ",", ";", "!", "?")) or len(term.split()) > 4:
                continue
            after = block.text[match.end() : match.end() + 20]
            at_start = not block.text[: match.start()].strip()
            glossary = (
                at_start
                and block.in_list
                and _glossary(view, block)
                and (match.group("colon") or DEFINES_RE.match(after))
            )
            sentence = DEFINING_SENTENCE_RE.match(block.text[match.end() : match.end() + 40])
            if glossary and not sentence and len(term.split()) == 1 and term.lower() in plain:
                continue  # a glossary entry for a plain word the text already uses in lower case
            if (glossary or sentence) and term.lower() not in found:
                found[term.lower()] = (block.line_at(match.start()), block)
    return found


PLAIN_DEFINITION_RE = (
    r"(?:(?:an?|the)\s+)?(?P<term>{terms})s?\s+(?:is|are|means|refers\s+to|denotes)\s+(?:an?|the|one|any)\s"
)


def plain_definitions(view: ProseView, terms: list[str]) -> dict[str, int]:
    """Where a sentence first defines a term in plain words, "A preload realm is an isolated
    context ...": a term so defined is defined there, whatever bold restates it later."""
    if not terms:
        return {}
    pattern = re.compile(PLAIN_DEFINITION_RE.format(terms=alternation(terms)), re.IGNORECASE)
    found: dict[str, int] = {}
    for block in view.paragraphs():
        checkpoint()
        for start, _ in sentence_spans(block.prose):
            match = pattern.match(block.prose, start)
            if match:
                found.setdefault(" ".join(match.group("term").lower().split()), block.line_at(start))
    return found


EXPLAINED_RE = re.compile(
    r"^[*_]*\s*(?:\(|[—–-]+\s*(?:i\.?e\.?|that is|meaning)\b|,\s*(?:i\.e\.|that is)\b)", re.I
)


GLOSS_RE = (
    r"(?:(?:so[ -])?called|known\s+as|termed|dubbed)\s+[\"“‘'*_]*(?P<term>{terms})s?(?![A-Za-z])"
    r"|(?<=[A-Za-z])\s+\([\"“‘'*_]*(?P<named>{terms})s?[\"”’'*_]*\)"
)
"""A gloss that names a term where the text first describes it: (so) called "X", known as X,
or the name in brackets after what it names ("sign a statement (publish attestation)")."""


def _code_name(term: str) -> str:
    """A term's spelling as a code name: "inference mode" -> InferenceMode."""
    return "".join(w[:1].upper() + w[1:] for w in term.split())


def first_definitions(view: ProseView, terms: list[str]) -> dict[str, int]:
    """Where the text first defines each term, whatever more formal definition follows: a
    plain sentence ("A preload realm is an isolated ..."), the term set in bold in a sentence
    that introduces it ("are marked as **inference tensors**"), a gloss (so called "X"), or
    its code name defined ("`InferenceMode` is an RAII guard ..." for inference mode)."""
    found = plain_definitions(view, terms)
    if not terms:
        return found
    alternatives = alternation(terms)
    gloss = re.compile(GLOSS_RE.format(terms=alternatives), re.IGNORECASE)
    bold = re.compile(rf"\*\*\s*(?P<term>{alternatives})s?\s*\*\*", re.IGNORECASE)
    names = {_code_name(t): t for t in terms if len(t.split()) > 1}
    coded = (
        re.compile(
            r"`(?P<name>" + alternation(names, fold=False) + r")`\s+(?:is|are|means)\s+(?:an?|the|one)\s"
        )
        if names
        else None
    )

    def note(term: str, line: int) -> None:
        term = " ".join(term.lower().split())
        if term in terms and line < found.get(term, line + 1):
            found[term] = line

    for block in view.paragraphs():
        checkpoint()
        for pattern in (gloss, bold):
            for match in pattern.finditer(block.text):
                note(match.group("term") or match.group("named"), block.line_at(match.start()))
        for match in coded.finditer(block.text) if coded else ():
            note(names[match.group("name")], block.line_at(match.start()))
    return found


SENTENCE_END_RE = re.compile(r"[.!?]\s")
NEAR_LINES = 5
"""A definition this close after a use, in the same section, is the use's gloss."""
LONG_BEFORE = 100
"""A use this many lines or more before the definition is reported on any document, as a
suggestion on another project's (a reader cannot carry a word that far on trust)."""


def _marked(block: Block, match: re.Match[str] | None) -> tuple[bool, bool]:
    """How the definition marks the term (its first bold form in the defining block, if any): as
    the document's own (not one plain lower-case word), and as a coined name (capitalised where
    its sentence does not ask for it: "The **Controller** is ..."); a term found only by a plain
    definition counts as its own."""
    if match is None:
        return True, False
    written = " ".join(match.group("term").split())
    # The text since the last sentence end before the term (a bounded look back: its sentence's
    # opening words, not the whole block before it).
    before = SENTENCE_END_RE.split(block.text[max(0, match.start() - 200) : match.start()])[-1]
    opens = not before.strip(" \t\n*_-+>#0123456789.")
    coined = (written[:1].isupper() and not opens) or any(c.isupper() for c in written[1:])
    # One word is plain in lower case, or capitalised only because it opens its sentence
    # ("***Implement** means code, benchmark, test and document.*").
    plain = (
        " " not in written and written.isalpha() and (written.islower() or (opens and written[1:].islower()))
    )
    return not plain or coined, coined


def _marks(defs: dict[str, tuple[int, Block]]) -> dict[str, tuple[bool, bool]]:
    """Each term's marks, from its first bold form in its defining block: one reading of each
    defining block, whatever the number of terms it defines."""
    bold: dict[int, dict[str, re.Match[str]]] = {}
    for _, block in defs.values():
        if id(block) not in bold:
            first: dict[str, re.Match[str]] = {}
            for match in BOLD_TERM_RE.finditer(block.text):
                first.setdefault(" ".join(match.group("term").lower().split()), match)
            bold[id(block)] = first
    return {term: _marked(block, bold[id(block)].get(term)) for term, (_, block) in defs.items()}


def _links_to(view: ProseView, block: Block, line: int) -> bool:
    """The use's paragraph links to the section that holds the definition (or one around it):
    a use that points at its definition is not undefined."""
    wanted = {h.anchor for h in view.enclosing(line)}
    return any(href.startswith("#") and href[1:] in wanted for _, _, href in block.links)


def _glossary_pointer(view: ProseView) -> int | None:
    """The line where the text first points its reader at its glossary ("Check out the
    [glossary](#glossary) for an overview of the terms ..."): from there on, a term the
    glossary defines is one the reader knows where to find."""
    names = {n.lower() for n in lexicon().glossary_names}
    anchors = {h.anchor for h in view.headings if h.text.strip().lower().rstrip(":") in names}
    for block in view.paragraphs():
        checkpoint()
        for start, _, href in block.links:
            if href.startswith("#") and href[1:] in anchors:
                return block.line_at(start)
    return None


def _foreign_use_defined(
    view: ProseView, block: Block, match: re.Match[str], mark: tuple[bool, bool] | None, use: int, line: int
) -> bool:
    """In a document designloop did not write, an early use the reader needs no definition
    for: of a term the document does not mark as its own, a coined name's plain word, a use
    that links to its definition, or one the definition follows within its section."""
    own, coined = mark if mark is not None else (True, False)
    if not own or (coined and match.group(0).islower()) or _links_to(view, block, line):
        return True
    return line - use <= NEAR_LINES and view.heading_before(use) == view.heading_before(line)


def term_order(view: ProseView, report: Report, seed: bool = True) -> None:
    """Bold-defined terms used before their definition (outside the overview): one pass with
    one pattern for every term. A term's first definition is its definition, the first place
    the text defines it in any way (first_definitions); a later, more formal one restates it.
    In a document not in the seed's shape (``seed`` false; docs/offline.md, "Severity
    policy"), a term's order is a suggestion (whether the context carries a term is the
    reader's judgement), and only a term the document marks as its own is reported: one plain
    word (in lower case, or capitalised only where it opens its sentence) is the reader's word,
    a coined name used in lower case is the plain word, and a use
    that links to its definition, or that the definition follows within a few lines of its
    section, is defined. A design in the seed's shape is held to the seed: every bold term
    before its definition."""
    defs = definitions(view)
    if not defs:
        return
    marks = _marks(defs)
    for term, line in first_definitions(view, list(defs)).items():
        found = view.block_at(line)
        if line < defs[term][0] and found is not None:
            defs[term] = (line, found)
    overview = {n.lower() for n in lexicon().overview_names}
    # Every term at once, each character read once (an alternation of the terms was quadratic
    # in a document that defines many).
    pattern = re.compile(r"(?<![\w-])(?:" + alternation(defs) + r")(?![\w-])", re.IGNORECASE)
    last_def = max(line for line, _ in defs.values())
    pointer = _glossary_pointer(view)
    preface = min((h.line for h in view.headings if h.level == 2), default=len(view.lines) + 1)
    explained: set[str] = set()
    for block in view.paragraphs(1, last_def):
        checkpoint()
        # The text before the first section opens the document, as an overview does.
        in_overview = (view.section_at(block.start) or "").lower() in overview or block.start < preface
        for match in pattern.finditer(block.prose):
            if block.link_at(match.start()) is not None:
                continue  # a table-of-contents entry, or a link to the page that defines it
            term = " ".join(match.group(0).lower().split())
            # A use that explains itself ("X — i.e. ...", "X (...)"), the overview's included,
            # lets the reader on: what follows is a suggestion to define it properly.
            if EXPLAINED_RE.match(block.prose[match.end() : match.end() + 12]):
                explained.add(term)
            line, defining = defs.get(term, (0, block))
            use = block.line_at(match.start())
            if in_overview or defining is block or use >= line or ("cr-term-order", term) in report:
                continue
            if _glossary(view, block) and view.section_at(block.start) == view.section_at(defining.start):
                continue  # a glossary entry naming another entry of the same glossary
            if pointer is not None and pointer <= use and _glossary(view, defining):
                continue  # the reader was pointed at the glossary that defines it
            far = line - use >= LONG_BEFORE and not _links_to(view, block, line)
            if not seed and not far and _foreign_use_defined(view, block, match, marks.get(term), use, line):
                continue
            report.add(
                "cr-term-order",
                term,
                "should-fix" if seed and term not in explained else "suggestion",
                use,
                block.quote(match.start(), match.end()),
                f"'{term}' is used on line {use} before it is defined on line {line}",
                f"define '{term}' before its first use, or move the definition up",
            )


FRONT_TITLE_RE = re.compile(r"^title:\s*(.+)$")
META_TITLE_RE = re.compile(
    r"^\s*(?:[-*+]\s+)?[*_]*(?:Feature\s+)?(?:Name|Title)[*_]*\s*:\s*[*_]*\s*(?P<title>\S.*)$", re.I
)
"""The name field of a metadata block ("- Name: The new CEL Generating Policies", "- Feature Name:
try_trait_v2"): the document's title where its template keeps it there."""
META_HEADINGS = frozenset({"meta", "metadata"})


def _meta_lines(view: ProseView) -> list[str]:
    """The document's opening metadata: its lines before the first heading that is not a
    metadata section's ("# Meta")."""
    end = next(
        (h.line for h in view.headings if h.text.strip().lower() not in META_HEADINGS), len(view.lines) + 1
    )
    return view.lines[: end - 1]


def _title(view: ProseView) -> str:
    """The document's title: its first-level heading, the ``title:`` of its front matter (an
    EIP carries its title there) and the name field of an opening metadata block (a Kyverno
    proposal's "- Name: ...", a Rust RFC's "- Feature Name: ...")."""
    heading = next((h.text for h in view.headings if h.level == 1), "")
    front = view.front_matter
    lines = view.lines[front.start - 1 : front.end] if front is not None else []
    found = [m.group(1) for m in map(FRONT_TITLE_RE.match, lines) if m]
    found += [m.group("title") for m in map(META_TITLE_RE.match, _meta_lines(view)) if m]
    return "\n".join([heading, *found])


def _heading_uses(
    block: Block,
    here: set[str],
    known: set[str],
    defined_at: dict[str, int],
    seen: set[str],
    never: dict[str, list[acronyms.Use]],
    lexicon_: acronyms.Lexicon,
) -> None:
    """An acronym a heading uses is used there: one the document never defines is reported
    at the heading. One it defines later is not "defined only later" on the heading's
    account (a heading names what its section goes on to define); its first prose use is."""
    for use in acronyms.uses(block, lexicon_):
        if use.token in never:
            never[use.token].append(use)
        if use.token in seen or use.token in known or use.token in here or use.linked:
            continue
        if use.token not in defined_at:
            seen.add(use.token)
            never[use.token] = [use]


def acronym_order(view: ProseView, report: Report, lexicon_: acronyms.Lexicon, seed: bool = True) -> None:
    """Each acronym at its first use: defined there or earlier, later only, or never. One
    defined only later is a should-fix of its own (an order the author can fix); in a design
    in the seed's shape, the ones never defined are one suggestion for the document, listing
    each one it uses only in passing (``acronym_passing_uses`` in params/offline.toml; the
    rest are the audience's own vocabulary, docs/offline.md). Another project's document
    writes for its own readers, whose vocabulary a rule cannot know: no list."""
    defined_at: dict[str, int] = {}
    per_block: list[set[str]] = []
    previous: set[str] = set()
    for block in view.blocks:
        checkpoint()
        explicit = acronyms.definitions(block.prose)
        spelled = acronyms.long_forms(block.prose)
        per_block.append(explicit | spelled | previous)
        previous = spelled
        for token in acronyms.strong_definitions(block.prose):
            # "Defined only later" points at an outright definition, never at a run of
            # capitalised words that happens to spell the acronym.
            defined_at.setdefault(token, block.start)
    seen: set[str] = set()
    never: dict[str, list[acronyms.Use]] = {}
    title = _title(view)
    known_so_far: set[str] = acronyms.titled(title + "\n" + "\n".join(b.prose for b in view.blocks))
    # The title names the document's subject: whoever opens it knows the title's acronyms.
    known_so_far |= {acronyms.base(t) for t in acronyms.ACRONYM_RE.findall(title)}
    for block, here in zip(view.blocks, per_block, strict=True):
        checkpoint()
        if block.kind == "heading":
            _heading_uses(block, here, known_so_far, defined_at, seen, never, lexicon_)
            known_so_far |= here
            continue
        for use in acronyms.uses(block, lexicon_):
            if use.token in never:
                never[use.token].append(use)
            if use.token in seen:
                report.also_at("cr-term-order", use.token, use.line)
                continue
            seen.add(use.token)
            if use.token in known_so_far or use.token in here or use.linked:
                continue
            later = defined_at.get(use.token)
            if later is None:
                never[use.token] = [use]
                continue
            report.add(
                "cr-term-order",
                use.token,
                "should-fix",
                use.line,
                use.quote,
                f"acronym {use.token} is defined only later, on line {later}",
                f"spell it out at first use: '<long form> ({use.token})'",
            )
        known_so_far |= here
    # An acronym the document uses again and again without defining it is its working
    # vocabulary, which the writer expects every reader to hold (CRD in a KEP, JNI in a JVM
    # build tool's design); one used once in passing is where a reader from outside the
    # field stops (and where a typo hides: "Unary PRC", "CLU argument").
    # And a document that spells out none of its acronyms writes for readers who know them:
    # the list is worth its author's time where the document's own convention is to define
    # them (it defines others) and it leaves some undefined. Another project's document gets
    # the same list, a suggestion as everywhere: softened, never muted.
    most = lexicon().acronym_passing_uses
    never = {token: found for token, found in never.items() if len({u.line for u in found}) <= most}
    # A design in the seed's shape answers to the house style, which defines every acronym:
    # its list does not wait for the document to have spelled out another one.
    if never and (defined_at or seed):
        first = next(iter(never.values()))[0]
        listed = ", ".join(
            f"{token} (line{'s' if len({u.line for u in uses}) > 1 else ''} "
            f"{', '.join(str(n) for n in sorted({u.line for u in uses})[:4])})"
            for token, uses in never.items()
        )
        report.add(
            "cr-term-order",
            "acronyms never defined",
            "suggestion",
            first.line,
            first.quote,
            f"{len(never)} acronym{'s are' if len(never) > 1 else ' is'} never defined: {listed}",
            "spell out at first use the ones your readers may not know: '<long form> (ACR)'",
        )


def tldr_mismatch(doc: DesignDoc, view: ProseView, report: Report) -> None:
    for section in doc.body_sections():
        paras = view.paragraphs(section.start + 1, section.end)
        if not paras or not paras[0].text.startswith(TLDR):
            continue
        tldr = content_words(paras[0].prose.removeprefix(TLDR))
        body = set().union(*(content_words(p.prose) for p in paras[1:])) | content_words(section.name)
        if len(tldr) >= 3 and len(body) >= 8 and containment(tldr, body) < 0.1:
            report.add(
                "cr-tldr-mismatch",
                section.name,
                "should-fix",
                paras[0].start,
                paras[0].quote(0, len(paras[0].text), 80),
                f'the TL;DR of "{section.name}" is about something its body never discusses',
                "rewrite the TL;DR to summarise this section's body",
            )


def decision_shaped(doc: DesignDoc, view: ProseView, report: Report) -> None:
    """Decisions stated in the prose of a design that keeps Decision Records, but no record
    covers (a document without Decision Records keeps its decisions in its prose)."""
    container = doc.find("Decision Records")
    if container is None:
        return
    recs = records(doc)
    phrases = lexicon().decision_phrases
    for section in doc.body_sections():
        if section.start >= container.start:
            continue
        for block in view.paragraphs(section.start + 1, section.end):
            checkpoint()
            for start, end in sentence_spans(block.prose):
                sentence = block.prose[start:end]
                if sentence.rstrip().endswith("?") or not any(True for _ in find_terms(sentence, phrases)):
                    continue
                words = content_words(sentence)
                if any(
                    containment(r.key_terms, words) >= 0.4
                    or containment(words, r.key_terms | content_words(r.alternatives)) >= 0.5
                    for r in recs
                ):
                    continue
                report.add(
                    "cr-decision-shaped",
                    f"{block.start}:{start}",
                    "should-fix",
                    block.line_at(start),
                    block.quote(start, end),
                    "this sentence makes a design decision that no decision record covers",
                    "take it to the research log's adversarial gate; then record it",
                    decision_shaped=True,
                )


SCOPE_RE = re.compile(
    r"^\s*This\s+(?:document|section|page|proposal|RFC|specification|spec|design|chapter)\s+"
    r"(?:describes|covers|defines|proposes|specifies|outlines|explains|presents|lists|collects|introduces)\b"
)
"""An opening sentence that says what the text covers."""


def has_overview(doc: DesignDoc, view: ProseView) -> bool:
    """An Overview (or one of its kin) at any heading level, a preface before the first
    section, or an opening paragraph, straight under the first heading, that says what the
    document covers ("This section describes a collection of use cases ...")."""
    names = {name for n in lexicon().overview_names for name in heading_names(n)}
    if any(heading_names(h.text) & names for h in view.headings):
        return True
    first = next((s.start for s in doc.sections if s.level == 2), len(view.lines) + 1)
    if any(b.kind == "paragraph" and b.start < first for b in view.blocks):
        return True
    opening = next((b for b in view.blocks if b.kind != "heading" and b.start > first), None)
    between = [h for h in view.headings if first < h.line < (opening.start if opening else 0)]
    return (
        opening is not None
        and opening.kind == "paragraph"
        and not between
        and bool(SCOPE_RE.match(opening.prose))
    )


def review(
    doc: DesignDoc, view: ProseView, known: frozenset[str], words: frozenset[str], seed: bool | None = None
) -> list[Finding]:
    """The comprehension reviewer's findings on a design; ``seed`` holds the document to the
    seed's rules or not (by default: whether it is in the seed's shape, seed_shaped)."""
    report = Report(view.section_at)
    seed = seed_shaped(view) if seed is None else seed
    term_order(view, report, seed)
    acronym_order(view, report, acronyms.Lexicon(view, known, words), seed)
    dangling_refs(view, report)
    loose_ends(view, report, seed)
    tldr_mismatch(doc, view, report)
    decision_shaped(doc, view, report)
    findings = report.findings()
    if not has_overview(doc, view):
        title = doc.title
        findings.append(
            review_finding(
                "cr-no-overview",
                "the design has no Overview (nor a Summary, Abstract or Introduction)",
                "add a concept-first ## Overview",
                severity="should-fix",
                line=title[0] if title else None,
                quote=view.lines[title[0] - 1] if title else None,
            )
        )
    return findings


def run(params: SpawnParams, obs: Observations) -> ReviewOutput:
    text = read_whole(obs, required(params.design_path, "design_path"))
    doc = doc_from_text(text)
    view = parse_prose(text, doc.lines)
    return ReviewOutput.of(review(doc, view, known_acronyms(obs.instructions), keywords(obs.instructions)))
