"""The offline readability auditor: the house-style rules over one slice, cold.

It reads its params, its slice of the design and the standing anchors, and nothing else.
The rules and their word lists come from the house style in its own instructions, so a
user's prompts/house-style.md override changes both a model's audit and this one. The
text it judges is the prose view (formats.prose): code, HTML comments, link targets, URLs
and front matter are never prose. Every finding carries its line and an exact quote; a rule
reports a subject (a term, an acronym) once, with the other lines it saw listed.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pipeline.checks.table import SEVERITIES
from pipeline.formats.contracts import ReviewOutput
from pipeline.formats.findings import Finding, Severity
from pipeline.formats.prose import MASK, Block, ProseView, parse_prose, words_of
from pipeline.formats.slices import whole_doc_guard
from pipeline.formats.spawn_params import SpawnParams
from pipeline.offline import prose_lint, wording
from pipeline.offline.deadline import checkpoint
from pipeline.offline.observe import Observations, required
from pipeline.offline.pages import read_lines
from pipeline.offline.report import Report
from pipeline.offline.text import (
    HouseRule,
    keywords,
    known_acronyms,
    lexicon,
    parse_house_style,
    review_finding,
    seed_shaped,
    sentence_spans,
    term_pattern,
)
from pipeline.settings import Limits

PASSIVE_RE = re.compile(r"\b(?:is|are|was|were|be|been|being)\s+(?:\w+ly\s+)?\w+(?:ed|en)\b", re.IGNORECASE)
DASH_RE = re.compile(r"—|(?<=[ \t])--(?=\s)")
"""An em dash, or a spaced double hyphen inside a line (one opening a line marks a list item)."""
DEFAULT_FLOOR = Limits().whole_doc_floor
"""The whole-doc guard's floor when no setting is given (a run passes its ``[partition]``'s)."""
ENUMERATION_RE = re.compile(r"\(\s*\d{1,2}\.?\s*\)|(?<![\w(])\d{1,2}\)")
LETTERED_RE = re.compile(r"(?<![\w(])\(\s*[a-z]\s*\)")
"""An item of a lettered list written in a sentence: "(a) ... (b) ... (c) ..."."""


def _severity(rule: HouseRule, measure: float | None = None) -> Severity:
    severity = rule.severity if rule.severity in SEVERITIES else "should-fix"
    if measure is not None and rule.hard_limit is not None and measure <= rule.hard_limit:
        return "suggestion"
    return severity


def _guard(params: SpawnParams, floor: int) -> ReviewOutput | None:
    """The agent-side whole-doc guard (docs/formats.md §8.5), shared with the orchestrator's code."""
    tripped = whole_doc_guard(params.slice_count, params.total_lines, str(params.target_path), floor)
    if tripped is None:
        return None
    return ReviewOutput.of(
        [review_finding(tripped.rule, tripped.message, tripped.suggested_fix, severity="blocker")]
    )


@dataclass(frozen=True, slots=True)
class Place:
    line: int
    quote: str
    what: str
    """The term, or the measure ("52 words")."""
    paragraph: int = 0
    """The first line of the paragraph it is in (word rules: a habit is a padded paragraph)."""


@dataclass(slots=True)
class Size:
    words: int = 0
    sentences: int = 0
    paragraphs: int = 0


@dataclass(slots=True)
class Groups:
    """A rule of taste's places per section, reported as one finding per section when they
    are a habit of the section, not an accident: at least ``group_min`` places, and for
    long sentences and paragraphs at least ``group_share`` of the section's, for stacked
    passives at least ``group_density`` per 1,000 words of the section. A word rule (hedges,
    filler, puffery, AI-tell words, contrastive formulas) slows a reader where it pads a
    paragraph: its habit is a paragraph carrying at least ``group_paragraph_min`` of its
    words, and the finding lists the places in such paragraphs (params/offline.toml)."""

    places: dict[tuple[str, str | None], list[Place]] = field(default_factory=dict)
    sizes: dict[str | None, Size] = field(default_factory=dict)
    word_rules: set[str] = field(default_factory=set)

    def add(self, rule: str, section: str | None, place: Place) -> None:
        self.places.setdefault((rule, section), []).append(place)

    def measure(self, view: ProseView, blocks: list[Block]) -> None:
        for block in blocks:
            size = self.sizes.setdefault(view.section_at(block.start), Size())
            size.words += len(block.words)
            size.sentences += len(sentence_spans(block.prose))
            size.paragraphs += 1

    def padded(self, places: list[Place]) -> list[Place]:
        """The places in paragraphs that carry at least ``group_paragraph_min`` of them, in at
        least two different words (one word said three times is the writer's register, such
        as a "might" describing what a client may do, not padding)."""
        per = Counter(p.paragraph for p in places)
        words: dict[int, set[str]] = {}
        for p in places:
            words.setdefault(p.paragraph, set()).add(p.what)
        return [
            p
            for p in places
            if per[p.paragraph] >= lexicon().group_paragraph_min and len(words[p.paragraph]) >= 2
        ]

    def habit(self, rule: str, section: str | None, count: int) -> bool:
        lex, size = lexicon(), self.sizes.get(section, Size())
        if count < lex.group_min:
            return False
        if rule in self.word_rules:
            return True  # counted over padded paragraphs only (report)
        if rule == "hs-sentence-length":
            return count >= lex.group_share * max(size.sentences, 1)
        if rule == "hs-wall-of-text":
            return count >= lex.group_share * max(size.paragraphs, 1)
        return count * 1000 >= lex.group_density_by_rule.get(rule, lex.group_density) * max(size.words, 1)

    def report(self, rules: dict[str, HouseRule], report: Report) -> None:
        """One suggestion per section for each habit."""
        for (rule_id, section), found in self.places.items():
            rule = rules[rule_id]
            places = self.padded(found) if rule_id in self.word_rules else found
            if not places or not self.habit(rule_id, section, len(places)):
                continue
            first = places[0]
            listed = "; ".join(
                f"'{what}' ({_lines([p.line for p in places if p.what == what])})"
                for what in dict.fromkeys(p.what for p in places)
            )
            report.add(
                rule_id,
                f"section:{section}",
                "suggestion",
                first.line,
                first.quote,
                f"{rule.title} in this section ({len(places)}): {listed}",
                rule.advice or "rewrite these places",
            )


def _lines(numbers: list[int]) -> str:
    unique = sorted(set(numbers))
    return ("line " if len(unique) == 1 else "lines ") + ", ".join(str(n) for n in unique)


def _subject_words(view: ProseView) -> str:
    """The document's headings, lower case: a term that names the subject ("Preload Realm")
    is the document's own word, not AI vocabulary."""
    return "\n".join(h.text.lower() for h in view.headings)


def _tentative(section: str | None) -> bool:
    """A section about open matters (questions, alternatives, drawbacks ...): hedging there is
    the honest register (params/offline.toml, ``tentative_sections``)."""
    return bool(section) and bool(
        set(re.findall(r"[a-z]+", (section or "").lower())) & lexicon().tentative_sections
    )


ITALIC_NOTE_RE = re.compile(r"^\s*(?P<m>[*_])(?!\s)[^*_]+(?<!\s)(?P=m)\s*$", re.DOTALL)


def _future_notes(view: ProseView) -> set[int]:
    """The headings (by line) whose first paragraph is an italic note that marks what follows
    as future or unscheduled ("*This would not be available with the 1.17 release, but
    perhaps in a later version ...*", params/offline.toml ``future_note_words``): hedges under
    such a heading are the uncertainty the note declares. One pass over the blocks."""
    found: set[int] = set()
    starts = [b.start for b in view.blocks]
    for heading in view.headings:
        index = bisect.bisect_right(starts, heading.line)
        first = view.blocks[index] if index < len(view.blocks) else None
        if first is None or first.kind != "paragraph" or view.heading_before(first.start) != heading:
            continue
        note = " ".join(first.text.lower().split())
        if ITALIC_NOTE_RE.match(first.text) and any(word in note for word in lexicon().future_note_words):
            found.add(heading.line)
    return found


def _noted(view: ProseView, block: Block, future: set[int]) -> bool:
    heading = view.heading_before(block.start)
    return heading is not None and heading.line in future


def _term_rules(blocks: list[Block], rules: dict[str, HouseRule], groups: Groups, view: ProseView) -> None:
    headings = _subject_words(view)
    future = _future_notes(view)
    for rule in (r for r in rules.values() if r.terms):
        groups.word_rules.add(rule.id)
        # Decided once per term, not per place (the headings can be long).
        subject = {term for term in rule.terms if term_pattern(term).search(headings)}
        for block in blocks:
            checkpoint()
            if rule.id == "hs-hedge" and (
                _tentative(view.section_at(block.start)) or _noted(view, block, future)
            ):
                continue
            for hit in wording.hits(block, rule):
                if hit.term in subject:
                    continue
                said = block.text[hit.start : hit.end]
                place = Place(hit.line, hit.quote, said.lower(), block.start)
                groups.add(rule.id, view.section_at(block.start), place)


@dataclass(slots=True)
class Pass:
    """One audit: the view, where findings go, and which blocks start in the slice."""

    view: ProseView
    report: Report
    groups: Groups
    mine: set[int]
    """Blocks that start in the slice: each reported on its own."""
    sectioned: set[int]
    """Blocks of the sections whose heading is in the slice: each counted in its section."""
    seed: bool = True
    """The design is in the seed's shape: held to the house style's hard limits."""


def _length_severity(run: Pass, rule: HouseRule, count: float, severity: Severity) -> tuple[Severity, bool]:
    """A length past the hard limit blocks a design in the seed's shape; in another project's
    document only far past it (``hard_limit_far_past``), and short of that it is a suggestion
    of its own, not counted with the section's habits (docs/offline.md, "Severity policy").
    Returns the severity and whether the finding stands alone."""
    if severity == "suggestion" or run.seed or _far_past(rule, count) != "suggestion":
        return severity, False
    return "suggestion", True


def _one_sentence_wall(block: Block, wall: HouseRule | None, seed: bool = True) -> bool:
    """A paragraph that is one sentence, long enough that the wall-of-text rule blocks it:
    the wall's finding says it, once."""
    count = len(block.words)
    if wall is None or not wall.limit or count <= wall.limit:
        return False
    blocks = _severity(wall, count) if seed else _far_past(wall, count)
    return blocks != "suggestion" and len(sentence_spans(block.prose)) == 1


def _sentence_rules(run: Pass, blocks: list[Block], rules: dict[str, HouseRule]) -> None:
    """Sentences past the hard limit are reported one by one (blocks starting in the slice);
    those between the limit and the hard limit, and inline lists, are counted per section."""
    long_rule, passive_rule = rules.get("hs-sentence-length"), rules.get("hs-passive-stack")
    view, report, groups, owned = run.view, run.report, run.groups, run.mine
    for block in blocks:
        checkpoint()
        if block.kind != "paragraph":
            continue
        section = view.section_at(block.start)
        for start, end in sentence_spans(block.prose):
            sentence = block.prose[start:end]
            # Link texts (a run of linked examples) are not words the reader must hold.
            inside = [(a, b) for a, b, _ in block.links if start <= a and b <= end]
            count = len(words_of(sentence)) - sum(len(words_of(block.prose[a:b])) for a, b in inside)
            count -= sum(len(words_of(m.group(0))) for m in QUOTED_LIST_RE.finditer(sentence))
            line = block.line_at(start)
            quote = block.quote(start, end, 80)
            if long_rule and long_rule.limit and count > long_rule.limit:
                # An inline enumeration, "(1) ... (2) ...", or a run of three or more linked
                # examples is a list written on one line, not a sentence the reader must hold.
                listed = (
                    len(ENUMERATION_RE.findall(sentence)) >= 2
                    or len(LETTERED_RE.findall(sentence)) >= 3  # "(a) and (b)" is an argument's two halves
                    or len(inside) >= 3
                )
                severity = "suggestion" if listed else _severity(long_rule, count)
                parts = severity != "suggestion" and _parses_in_parts(block, start, end, long_rule.limit)
                if parts:
                    severity = _far_past(long_rule, count)
                severity, alone = _length_severity(run, long_rule, count, severity)
                applied = _applied(long_rule, count, severity, far=parts or not run.seed)
                if severity == "suggestion" and not alone:
                    if id(block) in run.sectioned:
                        groups.add(long_rule.id, section, Place(line, quote, f"{count} words"))
                elif id(block) in owned and not (
                    severity != "suggestion"
                    and _one_sentence_wall(block, rules.get("hs-wall-of-text"), run.seed)
                ):
                    report.add(
                        long_rule.id,
                        f"{line}:{start}",
                        severity,
                        line,
                        quote,
                        f"sentence of {count} words (limit {applied:g})",
                        "split it into two or three sentences at its joints",
                    )
            if (
                passive_rule
                and passive_rule.limit
                and len(PASSIVE_RE.findall(sentence)) >= passive_rule.limit
            ):
                groups.add(passive_rule.id, section, Place(line, quote, "stacked passives"))


CLAUSE_BREAK_RE = re.compile(r";|—|\s(?:--|–|-)\s")
"""A semicolon or a dash: a joint that splits a long sentence into clauses a reader takes in turn."""


ASIDE_RE = re.compile(r"\([^()]*\)")
"""A bracketed aside: the reader sets it apart and follows the sentence around it."""
ITEM = r"(?:[\"“‘'][^\"”’'\n]{1,40}[\"”’']|(?<!" + MASK + ")" + MASK + "++)"
QUOTED_LIST_RE = re.compile(rf"{ITEM}(?:\s*+,\s*+{ITEM}){{2,}}+\s*,?")
"""A run of three or more quoted items or code spans separated by commas: an enumeration,
not words of a sentence. A run of masked characters (a code span) is an item from its start
only, taken whole: trying it from every character of a long run was quadratic."""


def _parses_in_parts(block: Block, start: int, end: int, limit: float | None = None) -> bool:
    """A long sentence a reader takes in parts: a semicolon or a dash splits it into
    clauses, a bold lead-in ("**Needless delays for users**: because ...") labels it, or
    bracketed asides do: what is left with the asides set apart, and each aside, reads as a
    sentence within the limit (an aside as long as a sentence is no aside)."""
    if CLAUSE_BREAK_RE.search(block.prose, start, end) or block.text[start:end].lstrip().startswith(
        ("**", "__")
    ):
        return True
    sentence = block.prose[start:end]
    for a, b, _ in block.links:
        if start <= a and b <= end:  # link texts are not words the reader must hold
            sentence = sentence[: a - start] + " " * (b - a) + sentence[b - start :]
    asides = ASIDE_RE.findall(sentence)
    main = len(words_of(ASIDE_RE.sub(" ", sentence)))
    return (
        bool(asides)
        and limit is not None
        and main <= limit
        and all(len(words_of(aside)) <= limit for aside in asides)
    )


def _applied(rule: HouseRule, measure: float, severity: Severity, far: bool) -> float:
    """The limit that decided the finding, as its message quotes it: for one that blocks, the
    hard limit, or the point far past it where blocking starts for this text (another project's
    document, a sentence that reads in parts); for a suggestion, the hard limit when the text
    is past it, else the limit."""
    hard, limit = rule.hard_limit, rule.limit or 0.0
    if severity != "suggestion" and hard is not None:
        factor = lexicon().far_past.get(rule.id)
        return factor * hard if far and factor is not None and measure >= factor * hard else hard
    return hard if hard is not None and measure > hard else limit


def _far_past(rule: HouseRule, measure: float) -> Severity:
    """The rule's severity when the measure is far past its hard limit (``hard_limit_far_past``
    in params/offline.toml), else a suggestion."""
    factor = lexicon().far_past.get(rule.id)
    if factor is None or rule.hard_limit is None or measure >= factor * rule.hard_limit:
        return _severity(rule, measure)
    return "suggestion"


def _reads_in_steps(block: Block, sentence_limit: float | None) -> bool:
    """A paragraph whose sentences are each within the sentence limit, or each on a line of
    its own: a reader takes it a sentence at a time."""
    spans = sentence_spans(block.prose)
    if sentence_limit is not None and all(
        len(words_of(block.prose[a:b])) <= sentence_limit for a, b in spans
    ):
        return True
    starts = set(block.starts)
    return len(spans) > 1 and all(a in starts for a, _ in spans)


def _walls(
    run: Pass, blocks: list[Block], rule: HouseRule | None, sentence_limit: float | None = None
) -> None:
    if rule is None or not rule.limit:
        return
    view, report, groups, owned = run.view, run.report, run.groups, run.mine
    for block in blocks:
        checkpoint()
        count = len(block.words)
        if block.kind != "paragraph" or count <= rule.limit:
            continue
        severity = _severity(rule, count)
        steps = severity != "suggestion" and _reads_in_steps(block, sentence_limit)
        if steps:
            severity = _far_past(rule, count)
        severity, alone = _length_severity(run, rule, count, severity)
        applied = _applied(rule, count, severity, far=steps or not run.seed)
        if alone and len(sentence_spans(block.prose)) == 1:
            continue  # one sentence: the long sentence's finding says it
        quote = block.quote(0, len(block.text), 60)
        if severity == "suggestion" and not alone:
            if id(block) in run.sectioned:
                groups.add(rule.id, view.section_at(block.start), Place(block.start, quote, f"{count} words"))
        elif id(block) in owned:
            report.add(
                rule.id,
                str(block.start),
                severity,
                block.start,
                quote,
                f"paragraph of {count} words (limit {applied:g})",
                "break it into shorter paragraphs or a list of steps",
            )


LABEL_WORDS = 6
"""At most this many words before a list item's first dash make it a label's separator."""


def _label_dash(block: Block, offset: int) -> bool:
    """A list item's first dash after a short label ("`types.go` — `MCPServer`, `Auth`"):
    it separates a label from what it holds, as a colon would; it is no prose dash."""
    if not block.in_list:
        return False
    before = block.prose[:offset]
    return not DASH_RE.search(before) and "\n" not in before.strip() and len(before.split()) <= LABEL_WORDS


def _dash_density(view: ProseView, blocks: list[Block], rule: HouseRule | None, report: Report) -> None:
    if rule is None or not rule.limit:
        return
    by_section: dict[str | None, list[Any]] = {}
    for block in blocks:
        entry = by_section.setdefault(view.section_at(block.start), [0, 0, None])
        dashes = [m for m in DASH_RE.finditer(block.prose) if not _label_dash(block, m.start())]
        entry[0] += len(dashes)
        entry[1] += len(block.words)
        if dashes and entry[2] is None:
            entry[2] = (
                block.line_at(dashes[0].start()),
                block.quote(dashes[0].start() - 20, dashes[0].end() + 20),
            )
    least = max(rule.limit, lexicon().group_density_by_rule.get(rule.id, rule.limit))
    for section, (dashes, total, where) in by_section.items():
        density = dashes * 1000 / max(total, 250)
        if dashes >= lexicon().group_min and density > least and where is not None:
            report.add(
                rule.id,
                str(section),
                _severity(rule),
                where[0],
                where[1],
                f"{dashes} dashes in {total} words: {density:.1f} per 1,000 (limit {rule.limit:g})",
                "turn most dashes into full stops or commas",
            )


def owned_blocks(view: ProseView, start: int, end: int) -> list[Block]:
    """The paragraphs of the sections whose heading lies in the slice (and of the text before
    the first heading, for the slice that starts the document): each section's measures are
    taken by exactly one slice, over the whole section, wherever its slice boundaries fell."""
    heads = [h.line for h in view.headings if h.level <= 2 and view.section_at(h.line) == h.text]
    mine = {line for line in heads if start <= line <= end}
    out = []
    for block in view.paragraphs():
        at = bisect.bisect_right(heads, block.start) - 1  # the section heading above it
        if (at < 0 and start == 1) or (at >= 0 and heads[at] in mine):
            out.append(block)
    return out


def quotations(view: ProseView) -> set[int]:
    """The blocks of a block quote that a lead-in ending in a colon introduces ("Rejected per
    @lornajane, with concurrence by @ralfhandl:"): someone else's words, which the document
    quotes and its author does not rewrite (ids of the blocks)."""
    quoted: set[int] = set()
    lead_in = False
    previous: Block | None = None
    for block in view.blocks:
        if block.in_quote:
            opens = previous is None or not previous.in_quote
            if opens:
                lead_in = (
                    previous is not None
                    and previous.kind == "paragraph"
                    and previous.text.rstrip().endswith(":")
                )
            if lead_in:
                quoted.add(id(block))
        previous = block
    return quoted


def audit(
    view: ProseView,
    start: int,
    end: int,
    rules: dict[str, HouseRule],
    known: frozenset[str],
    words: frozenset[str],
    seed: bool = True,
) -> list[Finding]:
    """The house-style rules over a slice: every measure that spans a section is taken over
    its whole section by the slice holding its heading (the auditor's view holds every
    section its slice touches, whole); rules that need the whole document (acronyms) are the
    comprehension reviewer's (params/offline.toml, ``whole_document_rules``). ``seed``: the
    design is in the seed's shape, and is told of the house style's habits too."""
    report = Report(view.section_at)
    quoted = quotations(view)
    mine = [b for b in view.paragraphs(start, end) if id(b) not in quoted]
    sections = [b for b in owned_blocks(view, start, end) if id(b) not in quoted]
    both = list({id(b): b for b in [*mine, *sections]}.values())
    groups = Groups()
    groups.measure(view, sections)
    active = {k: r for k, r in rules.items() if k not in lexicon().whole_document_rules}
    _term_rules(sections, active, groups, view)
    run = Pass(view, report, groups, {id(b) for b in mine}, {id(b) for b in sections}, seed)
    _sentence_rules(run, both, active)
    sentence_rule = active.get("hs-sentence-length")
    _walls(run, both, active.get("hs-wall-of-text"), sentence_rule.limit if sentence_rule else None)
    # Another project's document is told of the house style's habits too, as suggestions (they
    # are suggestions everywhere): softened where its author answers to other rules, never muted.
    _dash_density(view, sections, active.get("hs-em-dash"), report)
    groups.report(active, report)
    found = report.findings()
    taken = {(f.line, (f.quote or "").lower()) for f in found}
    for item in prose_lint.lint(view, mine):
        if (item.line, (item.quote or "").lower()) not in taken:
            found.append(item)
    return found


def read_view(params: SpawnParams, obs: Observations) -> tuple[ProseView, int, int]:
    """The whole target, parsed (the acronym rule needs what comes before the slice), and the
    slice's first and last line."""
    lines = read_lines(obs, required(params.target_path, "target_path"))
    total = len(lines)
    start, end = params.slice or (1, total)
    return parse_prose("\n".join(lines) + "\n", lines), start, min(end, total)


def run(params: SpawnParams, obs: Observations, floor: int = DEFAULT_FLOOR) -> ReviewOutput:
    """The audit of one slice; a slice that should have been several (one slice over ``floor``
    lines, ``[partition] whole_doc_floor``) is a wiring error instead."""
    guarded = _guard(params, floor)
    if guarded is not None:
        return guarded
    view, start, end = read_view(params, obs)
    rules = parse_house_style(obs.instructions)
    known, words = known_acronyms(obs.instructions), keywords(obs.instructions)
    findings = audit(view, start, end, rules, known, words, seed_shaped(view))
    return ReviewOutput.of(findings)
