"""Which capitalised words are acronyms a reader must be given, and where they are defined.

Shared by the readability auditor and the comprehension reviewer, so both read one
vocabulary (``known-terms.md``) the same way. Not every word in capitals is an acronym:
requirement keywords, words the document also writes in lower case (protocol verbs such as
WATCH or LIST, NONE), names that appear in the document's code (constants, signal names,
environment variables), placeholders and identifiers with digits are not.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from pipeline.formats.prose import Block, ProseView
from pipeline.offline.text import stem, widely_known

ACRONYM_RE = re.compile(r"(?<![\w\-$%{<@/\\.=&#*:])[A-Z][A-Z]+s?(?![\w\-}>(/\\=#]|\.\w|:\w)")
CAPS_WORD_RE = re.compile(r"[A-Z]{2,}")
LONGEST = 6
"""A run of more than six capitals is a shouted word or a keyword, not an acronym."""
SMALL_WORDS = frozenset({"of", "and", "for", "the", "a", "an", "to", "in", "on", "by", "with", "&", "as"})
DEFINING_VERB_RE = r"\s+(?:stands\s+for|is\s+short\s+for|means|refers\s+to|is\s+an?\s+abbreviation)"


@dataclass(frozen=True, slots=True)
class Use:
    token: str
    """The acronym without a plural ``s``."""
    block: Block
    start: int
    end: int
    linked: bool = False
    """The acronym is the text of a link to an outside page: one click defines it."""

    @property
    def line(self) -> int:
        return self.block.line_at(self.start)

    @property
    def quote(self) -> str:
        return self.block.text[self.start : self.end]


def base(token: str) -> str:
    return token[:-1] if token.endswith("s") and len(token) > 2 else token


CODE_WORD_RE = re.compile(r"[A-Za-z0-9_]++")


VALUE_NOUNS = (
    "frame|frames|state|states|status|bit|bits|flag|flags|opcode|opcodes|signal|signals|mode|modes|"
    "event|events|verb|verbs|constant|constants|enum|value|values"
)
NAMED_VALUE_AFTER_RE = re.compile(rf"^[`*_]*\s+(?:{VALUE_NOUNS})\b")
NAMED_VALUE_BEFORE_RE = re.compile(
    rf"\b(?:(?:{VALUE_NOUNS})|(?:sends?|sent|sending|receives?|received|receiving|emits?|emitted)"
    r"\s+(?:an?|the|its)\b)\s+[`*_]*$",
    re.IGNORECASE,
)
"""A value's noun before the word ("state READY"), or a protocol verb and an article ("the
backend sends a GOAWAY"): what is sent or received is a message, named as an identifier."""


class Lexicon:
    """What a document says about its capitalised words, computed once per document."""

    def __init__(self, view: ProseView, known: frozenset[str], keywords: frozenset[str]) -> None:
        self.known = known | widely_known()
        self.keywords = keywords
        self.lower_words = {
            w for b in view.blocks for w in re.findall(r"(?<![A-Za-z])[a-z][a-z]+(?![A-Za-z])", b.prose)
        }
        self.lower_stems = {stem(w) for w in self.lower_words}
        self.code_words = set(CODE_WORD_RE.findall(view.code_text()))
        """The words of the document's code, read once (a search of the code per token was
        quadratic in a document with much code and many capitalised words)."""

    def in_code(self, token: str) -> bool:
        """The token stands as a whole word of the code (a token is letters only)."""
        return token in self.code_words

    def is_word(self, token: str) -> bool:
        """A word in capitals: a keyword, or a word the document also writes in lower case
        (in any of its forms: PING beside "pings", CONNECTING beside "connection")."""
        lower = token.lower()
        return token in self.keywords or lower in self.lower_words or stem(lower) in self.lower_stems

    def shouted(self, prose: str, start: int, end: int) -> bool:
        """Next to another word in capitals that is a plain word ("ALL CAPS", "DO NOT USE")."""
        before = CAPS_WORD_RE.fullmatch(prose[max(0, start - 12) : start].rstrip().rsplit(" ", 1)[-1])
        after = CAPS_WORD_RE.fullmatch((prose[end : end + 12].lstrip().split(" ", 1) or [""])[0])
        return any(m is not None and self.is_word(m.group(0)) for m in (before, after))

    def is_acronym(self, token: str) -> bool:
        word = base(token)
        shouted_plural = token[:-1] if token.endswith("S") and len(token) > 3 else None  # "APIS"
        if token in self.known or word in self.known or token in self.keywords or word in self.keywords:
            return False
        if shouted_plural is not None and (shouted_plural in self.known or shouted_plural in self.keywords):
            return False
        if len(word) < 2 or len(word) > LONGEST:
            return False
        if word.startswith("SIG") and len(word) > 4:
            return False
        if self.is_word(word) or self.is_word(token):
            return False
        return not self.in_code(word) and not self.in_code(token)


BEFORE_WINDOW = 80
"""How far before a word its value noun or protocol verb is looked for (a search of the whole
text before each word was quadratic)."""


def names_a_value(prose: str, start: int, end: int) -> bool:
    """The word names a value of some kind, not a thing to spell out: "a PING frame", "the
    READY state", "to state READY", "the ACK bit"."""
    if NAMED_VALUE_AFTER_RE.match(prose[end : end + 20]):
        return True
    # The search starts at most BEFORE_WINDOW characters back; its \b still reads the text
    # before that point, so a window that starts inside "upstate" finds no "state".
    return NAMED_VALUE_BEFORE_RE.search(prose, max(0, start - BEFORE_WINDOW), start) is not None


def uses(block: Block, lexicon: Lexicon) -> Iterator[Use]:
    prose = block.prose
    for match in ACRONYM_RE.finditer(prose):
        token = match.group(0)
        if lexicon.shouted(prose, match.start(), match.end()) or names_a_value(
            prose, match.start(), match.end()
        ):
            continue
        href = block.link_at(match.start())
        if href is not None and href.startswith("#"):
            continue  # a table-of-contents entry names a heading; the heading is not a use either
        if lexicon.is_acronym(token):
            linked = href is not None and not href.startswith("#")
            yield Use(base(token), block, match.start(), match.end(), linked)


def _initials(words: list[str]) -> str:
    return "".join(w[0] for w in words if w.lower() not in SMALL_WORDS).upper()


PAREN_ACR_RE = re.compile(r"\(\s*([A-Z][A-Za-z]*[A-Z])s?\s*\)")
ACR_PAREN_RE = re.compile(r"(?<![\w-])([A-Z][A-Z]+)s?\s*+\(([^()]++)\)")
"""``ACR (long form)``; the bracket holds no bracket, so each one is read to the next bracket
only (to the next closing one, "AB(AB(AB(..." was quadratic)."""
LABEL_RE = re.compile(r"\*\*([A-Z][A-Z]+)s?\*\*|(?<![\w-])([A-Z][A-Z]+)s?\s*(?::|—|–|\s-)\s")
VERB_RE = re.compile(r"(?<![\w-])([A-Z][A-Z]+)s?" + DEFINING_VERB_RE + r"\s+(?P<long>[^.;:()]{3,80})")
WORDS_RE = re.compile(r"[A-Za-z]+")
RUN_WORD_RE = re.compile(r"[A-Za-z][A-Za-z'’]*")
BEFORE_PAREN_RE = re.compile(r"([A-Za-z][\w'’-]*(?:[ \t\n]+[A-Za-z][\w'’-]*){0,7})[ \t\n]*\(\s*$")


def _spells(words: list[str], token: str) -> bool:
    """Whether the words' initials spell the acronym, a hyphenated word counting as one word or
    as its parts ("last-resort window (LRW)")."""
    parts = [p for w in words for p in re.split(r"[-‐]", w) if p]
    return (len(words) >= 2 and _initials(words) == token) or (len(parts) >= 2 and _initials(parts) == token)


def _long_before(text: str, start: int, token: str) -> str | None:
    """The words right before ``(ACR)`` that spell it: "Relational Database Service (RDS)"."""
    match = BEFORE_PAREN_RE.search(text[max(0, start - 120) : start + 1])
    if not match:
        return None
    words = match.group(1).split()
    for first in range(len(words) - 1, -1, -1):
        if words[first].lower() in SMALL_WORDS:
            continue
        candidate = words[first:]
        if _spells([w.strip("'’") for w in candidate], token):
            return " ".join(candidate)
    return None


def strong_definitions(text: str) -> dict[str, str]:
    """Acronyms the text defines outright, each with its long form: ``long form (ACR)`` and
    ``ACR (long form)`` whose initials spell it, and "ACR stands for / is short for / means
    long form". What "defined only later" points at must be one of these."""
    found: dict[str, str] = {}
    for match in PAREN_ACR_RE.finditer(text):
        token = base(match.group(1))
        long = _long_before(text, match.start(), token)
        if long and token not in found:
            found[token] = long
    for match in ACR_PAREN_RE.finditer(text):
        token = match.group(1)
        if _spells(WORDS_RE.findall(match.group(2)), token):
            found.setdefault(token, " ".join(match.group(2).split()))
    for match in VERB_RE.finditer(text):
        found.setdefault(match.group(1), " ".join(match.group("long").split()))
    return found


def _capital_runs(text: str) -> list[str]:
    """The initials of each run of capitalised words with only spaces (and small words such
    as "of") between them."""
    runs: list[str] = []
    run, end = "", 0
    for match in RUN_WORD_RE.finditer(text):
        word = match.group(0)
        joined = not text[end : match.start()].strip()
        capital = word[0].isupper() and not (word.isupper() and len(word) > 1)
        end = match.end()
        if capital and (joined or not run):
            run += word[0]
        elif joined and run and word.lower() in SMALL_WORDS:
            continue
        else:
            runs.append(run)
            run = word[0] if capital else ""
    return [*runs, run]


def definitions(text: str) -> set[str]:
    """Every acronym the text defines, in one pass: ``long form (ACR)``, ``ACR (long form)``,
    ``**ACR**``, ``ACR: ...``, ``ACR stands for ...``, or a run of capitalised words that
    spells it. A run is words with only spaces between them: a colon, a bracket or a full
    stop ends it ("Detailed Design: Interop" spells no DI, "Otel) More" no OM)."""
    found = {m.group(1) for m in PAREN_ACR_RE.finditer(text)}
    found |= {m.group(1) for m in VERB_RE.finditer(text)}
    found |= {m.group(1) or m.group(2) for m in LABEL_RE.finditer(text)}
    for match in ACR_PAREN_RE.finditer(text):
        if _initials(WORDS_RE.findall(match.group(2))) == match.group(1):
            found.add(match.group(1))
    for run in _capital_runs(text):
        for i in range(len(run)):
            for j in range(i + 2, min(len(run), i + LONGEST) + 1):
                found.add("".join(run[i:j]))
    return {base(f) for f in found} | found


def long_forms(text: str) -> set[str]:
    """Acronyms spelled out in lower case ("load balancer" -> LB): runs of two to six words of
    four letters or more (hyphenated parts count), whose initials make the acronym."""
    found: set[str] = set()
    run: list[str] = []
    for word in [*LOWER_RE.findall(text), ""]:
        if len(word) >= 4:
            run.append(word[0].upper())
            continue
        for i in range(len(run)):
            for j in range(i + 2, min(len(run), i + LONGEST) + 1):
                found.add("".join(run[i:j]))
        run = []
    return found


SELF_KIND_RE = re.compile(
    r"\b[Tt]his ([A-Z]{2,6})\b(?= (?:proposes|introduces|describes|adds|defines|aims|extends|specifies|"
    r"standardi[sz]es|would|will|is|does|covers|changes)\b)"
)


SERIES_RE = re.compile(r"(?<![\w-])([A-Z]{2,6})(?:-|[ \t]*+(?:\n[ \t]*+)?#?)(\d+)\b")


def titled(text: str) -> set[str]:
    """Acronyms that name a kind of document, the document's own or one it cites: carried by
    a number anywhere in the text ("KEP-1880: ...", "OTEP 170", "MSC3440", "EIP-1559": a
    numbered series, the name its readers know it by) or by the way the document speaks of
    itself ("This JEP proposes ...")."""
    return {m.group(1) for m in SERIES_RE.finditer(text)} | set(SELF_KIND_RE.findall(text))


LOWER_RE = re.compile(r"[a-z]+|[^a-z\s-]+")
