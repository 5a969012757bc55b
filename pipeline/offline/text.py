"""Text utilities the offline roles share: prose extraction, sentences, terms, overlap."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from pipeline.formats.design_doc import STAMP_RE, DesignDoc, parse_design
from pipeline.formats.findings import Finding, Severity
from pipeline.formats.prose import ProseView
from pipeline.formats.prose_inline import code_span_runs
from pipeline.formats.textio import decode
from pipeline.settings import data_dir, load_toml

LINK_TARGET_RE = re.compile(r"\]\([^)]*\)")
MARKUP_RE = re.compile(r"\*\*|__|(?<!\w)[*_](?=\S)|(?<=\S)[*_](?!\w)")
LIST_MARKER_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
WORD_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’\-]*")
FOOTNOTE = r"(?:\[\^?[\w-]{1,12}\]|\ue000)*+"
"""A footnote reference (``[^1]``, ``[2]``) or masked markup (``<sup>1</sup>``, a link's target)
between a sentence's last mark and the next sentence. One masked character per repetition,
and possessive: a run of masked characters is taken once, never split two ways (a run after a
full stop and before a lower-case word, "namespace.`publishConnectionDetailsTo.configRef` will",
once cost time exponential in its length)."""
SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?])[\"”’)]?" + FOOTNOTE + r"\s++(?=[A-Z0-9\"“(\[`*])")
ABBREVIATIONS = ("e.g.", "i.e.", "vs.", "cf.", "approx.", "Fig.", "No.")
"""Abbreviations that never end a sentence. "etc." is not one: before a capital it ends one."""


@dataclass(frozen=True, slots=True)
class Lexicon:
    stopwords: frozenset[str]
    antonyms: tuple[tuple[str, str], ...]
    fork_words: tuple[str, ...]
    decision_phrases: tuple[str, ...]
    empty_values: frozenset[str]
    forward_refs: tuple[re.Pattern[str], ...]
    pointer_words: frozenset[str]
    overview_names: tuple[str, ...]
    glossary_names: tuple[str, ...]
    proselint_checks: tuple[str, ...]
    group_min: int
    group_paragraph_min: int
    group_density: float
    group_share: float
    group_density_by_rule: dict[str, float]
    tentative_sections: frozenset[str]
    future_note_words: tuple[str, ...]
    whole_document_rules: frozenset[str]
    file_extensions: frozenset[str]
    host_suffixes: frozenset[str]
    acronym_passing_uses: int
    far_past: dict[str, float]
    not_judged: tuple[str, ...]


@cache
def lexicon() -> Lexicon:
    data: dict[str, Any] = load_toml(data_dir("params") / "offline.toml")
    return Lexicon(
        stopwords=frozenset(data["stopwords"].split()),
        antonyms=tuple((a, b) for a, b in data["antonyms"]),
        fork_words=tuple(data["fork_words"]),
        decision_phrases=tuple(data["decision_phrases"]),
        empty_values=frozenset(data["empty_values"]),
        forward_refs=tuple(re.compile(p, re.IGNORECASE) for p in data["forward_refs"]),
        pointer_words=frozenset(data["pointer_words"].split()),
        overview_names=tuple(data["overview_names"]),
        glossary_names=tuple(data["glossary_names"]),
        proselint_checks=tuple(data["proselint_checks"]),
        group_min=int(data["suggestion_group_min"]),
        group_paragraph_min=int(data["suggestion_group_paragraph_min"]),
        group_density=float(data["suggestion_group_density"]),
        group_share=float(data["suggestion_group_share"]),
        group_density_by_rule={k: float(v) for k, v in data["suggestion_group_density_by_rule"].items()},
        tentative_sections=frozenset(data["tentative_sections"]),
        future_note_words=tuple(data["future_note_words"]),
        whole_document_rules=frozenset(data["whole_document_rules"]),
        file_extensions=frozenset(data["file_extensions"]),
        host_suffixes=frozenset(data["host_suffixes"]),
        acronym_passing_uses=int(data["acronym_passing_uses"]),
        far_past={k: float(v) for k, v in data["hard_limit_far_past"].items()},
        not_judged=tuple(data["not_judged"]),
    )


@cache
def widely_known() -> frozenset[str]:
    """Acronyms every reader of a software design is expected to know (params/acronyms.toml):
    added to the known vocabulary by the offline engine, which has no knowledge of its own."""
    data: dict[str, Any] = load_toml(data_dir("params") / "acronyms.toml")
    return frozenset(data["widely_known"].split())


def review_finding(
    rule: str,
    message: str,
    fix: str,
    *,
    severity: Severity = "should-fix",
    section: str | None = None,
    quote: str | None = None,
    decision_shaped: bool = False,
    line: int | None = None,
) -> Finding:
    """One finding in the review output contract (docs/formats.md §9)."""
    return Finding(
        severity=severity,
        section=section,
        line=line,
        quote=quote,
        rule=rule,
        message=message,
        suggested_fix=fix,
        decision_shaped=decision_shaped,
    )


def doc_from_text(text: str, name: str = "design.md") -> DesignDoc:
    from pathlib import Path

    return parse_design(decode(text.encode("utf-8"), Path(name)))


def code_spans(line: str) -> list[str]:
    return [line[start + fence : end - fence].strip() for start, end, fence in code_span_runs(line)]


def _without_code(line: str, keep_code: bool) -> str:
    """The line with each code span replaced by its content (``keep_code``) or by "CODE"."""
    parts: list[str] = []
    at = 0
    for start, end, fence in code_span_runs(line):
        parts += [line[at:start], line[start + fence : end - fence] if keep_code else "CODE"]
        at = end
    return "".join([*parts, line[at:]])


def clean(line: str, keep_code: bool = False) -> str:
    """A prose line without inline code, link targets, emphasis markers or list markers."""
    text = _without_code(line, keep_code)
    text = LINK_TARGET_RE.sub("]", text).replace("[", "").replace("]", "")
    text = LIST_MARKER_RE.sub("", text)
    return MARKUP_RE.sub("", text).strip()


SPAN_SPLIT_RE = re.compile(
    r"(?<=[.!?])(?:[\"”’)]|~~|[*_]{1,3})?+" + FOOTNOTE + r"\s++(?=[A-Z0-9\"“(\[`*_~\ue000])"
    # A line that ends without a mark, followed by a line that opens a new sentence, is two
    # sentences whose full stop is missing ("... with overflow\nThere are some tricks").
    r"|(?P<unmarked>(?<=[\w\ue000`)])[ \t]*\n"
    r"(?=(?:The|This|These|There|It|We|They|If|When|Note|Once|However)\s))"
)
OPEN_CLAUSE = frozenset(
    {
        *("the", "a", "an", "of", "to", "in", "on", "for", "with", "and", "or", "but", "nor"),
        *("by", "from", "as", "at", "is", "are", "be", "was", "were", "that", "which", "than"),
    }
)
"""Words that leave a line's clause open: the next line continues the sentence."""
LABEL_LINE_RE = re.compile(r"^\*\*[^*\n]{1,60}\*\*:?[ \t]*\n(?=\S)")
"""A bold label on a line of its own ("**Calculate new bounds:**") heading the sentence under it."""
LAST_WORD_RE = re.compile(r"(\w+)\W*$")


def _continues(text: str, at: int) -> bool:
    """A line break at ``at`` that a word before it leaves open ("... with the\nThe")."""
    word = LAST_WORD_RE.search(text[max(0, at - 30) : at])
    return word is not None and word.group(1).lower() in OPEN_CLAUSE


def sentence_spans(prose: str) -> list[tuple[int, int]]:
    """(start, end) offsets of each sentence of a masked prose string (formats.prose)."""
    protected = prose
    for abbr in ABBREVIATIONS:
        protected = protected.replace(abbr, abbr.replace(".", "\x00"))
    spans: list[tuple[int, int]] = []
    start = 0
    label = LABEL_LINE_RE.match(protected)
    if label:
        spans.append((0, label.end()))
        start = label.end()
    for match in SPAN_SPLIT_RE.finditer(protected, start):
        if match.group("unmarked") and _continues(protected, match.start()):
            continue
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(prose)))
    out = []
    for a, b in spans:
        while a < b and prose[a].isspace():
            a += 1
        while b > a and prose[b - 1].isspace():
            b -= 1
        if a < b:
            out.append((a, b))
    return out


def sentences(text: str) -> list[str]:
    protected = text
    for abbr in ABBREVIATIONS:
        protected = protected.replace(abbr, abbr.replace(".", "\x00"))
    parts = SENTENCE_SPLIT_RE.split(protected)
    return [p.replace("\x00", ".").strip() for p in parts if p.strip()]


def words(text: str) -> list[str]:
    return WORD_RE.findall(text)


_LOCAL = threading.local()


def stemmer() -> Any:
    """This thread's English Snowball stemmer: one keeps the word it works on in the instance,
    and offline spawns run in threads (several at once in a batch), so none is shared."""
    found = getattr(_LOCAL, "stemmer", None)
    if found is None:
        import snowballstemmer

        found = _LOCAL.stemmer = snowballstemmer.stemmer("english")
    return found


@cache
def stem(word: str) -> str:
    """The word's Porter2 stem ("allowed", "allows", "allowing" -> "allow")."""
    word = word.lower().strip("'’-").removesuffix("'s").removesuffix("’s")
    return str(stemmer().stemWord(word))


HYPHEN_RE = re.compile(r"[-\u2010\u2011\u2012\u2013]")


def content_words(text: str) -> set[str]:
    """Stems of the text's meaningful words; a hyphenated compound counts as its parts, so
    "fail-open", "fail open" and "fails open" say the same."""
    stop = lexicon().stopwords
    out: set[str] = set()
    for word in words(text):
        for part in HYPHEN_RE.split(word):
            if part and part.lower() not in stop and len(part) > 2 and not part.isdigit():
                out.add(stem(part))
    return out


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def containment(part: set[str], whole: set[str]) -> float:
    """How much of ``part`` appears in ``whole``."""
    return len(part & whole) / len(part) if part else 0.0


@cache
def term_pattern(term: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w-])" + re.escape(term).replace(r"\ ", r"\s+") + r"(?![\w-])", re.IGNORECASE)


Trie = dict[str, "Trie"]


def alternation(terms: Iterable[str], fold: bool = True) -> str:
    """A pattern matching any of ``terms`` (a space in a term matches any run of spaces), as a
    trie: at each position it reads each character once however many terms there are, where an
    alternation of the terms tries every one of them there; of terms sharing a start, the
    longest is tried first, as in an alternation sorted longest first. ``fold``: the terms are
    matched with ``re.IGNORECASE`` (each is stored in lower case)."""
    trie: Trie = {}
    for term in terms:
        node = trie
        for char in " ".join(term.split()).lower() if fold else term:
            node = node.setdefault(char, {})
        node[""] = {}

    def emit(node: Trie) -> str:
        branches = [
            (r"\s+" if char == " " else re.escape(char)) + emit(child) for char, child in node.items() if char
        ]
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")" if branches else ""
        return f"(?:{body})?" if "" in node and body else body

    return emit(trie)


def find_terms(text: str, terms: tuple[str, ...]) -> Iterator[tuple[str, re.Match[str]]]:
    for term in terms:
        for match in term_pattern(term).finditer(text):
            yield term, match


def antonym_conflict(a: str, b: str) -> tuple[str, str] | None:
    """A word pair where one text says X and the other says its opposite, counted as multisets."""
    from collections import Counter

    ca = Counter(w.lower() for w in words(a))
    cb = Counter(w.lower() for w in words(b))
    only_a, only_b = ca - cb, cb - ca
    for x, y in lexicon().antonyms:
        if only_a[x] and only_b[y]:
            return x, y
        if only_a[y] and only_b[x]:
            return y, x
    return None


def numbers(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])", text))


# --- house style, parsed from the role's own instructions -------------------------------

RULE_HEAD_RE = re.compile(r"^##\s+(?P<id>[a-z][a-z0-9-]*):\s*(?P<title>.+)$")


@dataclass(slots=True)
class HouseRule:
    id: str
    title: str
    severity: str = "should-fix"
    terms: tuple[str, ...] = ()
    known: frozenset[str] = frozenset()
    limit: float | None = None
    hard_limit: float | None = None
    replace: dict[str, str] = field(default_factory=dict)
    advice: str = ""


def _split_list(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def parse_house_style(instructions: str) -> dict[str, HouseRule]:
    rules: dict[str, HouseRule] = {}
    current: HouseRule | None = None
    for raw in instructions.splitlines():
        head = RULE_HEAD_RE.match(raw.strip())
        if head:
            current = HouseRule(head.group("id"), head.group("title").strip())
            rules[current.id] = current
            continue
        if raw.startswith("#"):
            current = None  # another heading ends the rule (a shared prompt follows)
        if current is None:
            continue
        key, sep, value = raw.partition(":")
        key = key.strip()
        if not sep:
            continue
        if key == "Severity":
            current.severity = value.strip()
        elif key == "Terms":
            current.terms = tuple(_split_list(value))
        elif key == "Known":
            current.known = frozenset(_split_list(value))
        elif key in ("Limit", "Hard limit"):
            match = re.search(r"\d+(?:\.\d+)?", value)
            number = float(match.group(0)) if match else None
            if key == "Limit":
                current.limit = number
            else:
                current.hard_limit = number
        elif key == "Replace":
            for item in _split_list(value):
                word, _, repl = item.partition("=")
                current.replace[word.strip().lower()] = repl.strip()
        elif not current.advice and raw.strip() and not raw.startswith(("#", "-")):
            current.advice = raw.strip()
    return rules


def _listed(instructions: str, key: str) -> frozenset[str]:
    found: set[str] = set()
    for line in instructions.splitlines():
        if line.startswith(key + ":"):
            found.update(_split_list(line.partition(":")[2]))
    return frozenset(found)


def known_acronyms(instructions: str) -> frozenset[str]:
    """The ``Known:`` lines of the role's instructions (known-terms.md, shared by every role)."""
    return _listed(instructions, "Known")


def keywords(instructions: str) -> frozenset[str]:
    """Requirement keywords in capitals (``Keywords:``), never acronyms."""
    return frozenset(w for item in _listed(instructions, "Keywords") for w in item.split())


_TOKEN = r"[A-Z][A-Z0-9_]*[A-Z0-9]"
_DEFINITIONS = (  # each match consumes only the token, so definitions may nest or overlap
    re.compile(rf"(?<=\()\s*({_TOKEN})(?=s?\s*\))"),
    re.compile(rf"(?<![\w-])({_TOKEN})(?=\s*\([a-z][^)]*\))"),
    re.compile(rf"(?<=\*\*)({_TOKEN})(?=\*\*)"),
    re.compile(rf"(?<![\w-])({_TOKEN})(?=s?\s*:\s)"),
)


def defined_acronyms(text: str) -> frozenset[str]:
    """Every capitalised token the text defines, in one pass: ``long form (ACR)``,
    ``ACR (long form)``, ``**ACR**`` or ``ACR:``."""
    return frozenset(m.group(1) for pattern in _DEFINITIONS for m in pattern.finditer(text))


TLDR = "**TL;DR:**"


def seed_shaped(view: ProseView) -> bool:
    """A design in the seed's shape: stamped by designloop, or with a section that opens
    with the seed's ``**TL;DR:**`` line. Its author answers to the seed's rules in full. Read
    off the prose view alone (no second parse of the document)."""
    if view.lines and STAMP_RE.match(view.lines[0]):
        return True
    return any(
        block.kind == "paragraph" and block.text.startswith(TLDR) and previous.kind == "heading"
        for previous, block in zip(view.blocks, view.blocks[1:], strict=False)
    )
