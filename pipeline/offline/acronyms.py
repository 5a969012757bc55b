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
from functools import cache

from pipeline.formats.prose import Block, ProseView

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


@cache
def _word_re(token: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![A-Za-z0-9_]){re.escape(token)}(?![A-Za-z0-9_])")


class Lexicon:
    """What a document says about its capitalised words, computed once per document."""

    def __init__(self, view: ProseView, known: frozenset[str], keywords: frozenset[str]) -> None:
        self.known = known
        self.keywords = keywords
        self.lower_words = {
            w for b in view.blocks for w in re.findall(r"(?<![A-Za-z])[a-z][a-z]+(?![A-Za-z])", b.prose)
        }
        self.code = view.code_text()
        self._in_code: dict[str, bool] = {}

    def in_code(self, token: str) -> bool:
        if token not in self._in_code:
            self._in_code[token] = bool(_word_re(token).search(self.code))
        return self._in_code[token]

    def is_word(self, token: str) -> bool:
        """A word in capitals: a keyword, or a word the document also writes in lower case."""
        return token in self.keywords or token.lower() in self.lower_words

    def shouted(self, prose: str, start: int, end: int) -> bool:
        """Next to another word in capitals that is a plain word ("ALL CAPS", "DO NOT USE")."""
        before = CAPS_WORD_RE.fullmatch(prose[max(0, start - 12) : start].rstrip().rsplit(" ", 1)[-1])
        after = CAPS_WORD_RE.fullmatch((prose[end : end + 12].lstrip().split(" ", 1) or [""])[0])
        return any(m is not None and self.is_word(m.group(0)) for m in (before, after))

    def is_acronym(self, token: str) -> bool:
        word = base(token)
        if token in self.known or word in self.known or token in self.keywords or word in self.keywords:
            return False
        if len(word) < 2 or len(word) > LONGEST:
            return False
        if word.startswith("SIG") and len(word) > 4:
            return False
        if word.lower() in self.lower_words:
            return False
        return not self.in_code(word) and not self.in_code(token)


def uses(block: Block, lexicon: Lexicon) -> Iterator[Use]:
    prose = block.prose
    for match in ACRONYM_RE.finditer(prose):
        token = match.group(0)
        if lexicon.shouted(prose, match.start(), match.end()):
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
ACR_PAREN_RE = re.compile(r"(?<![\w-])([A-Z][A-Z]+)s?\s*\(([^)]+)\)")
LABEL_RE = re.compile(r"\*\*([A-Z][A-Z]+)s?\*\*|(?<![\w-])([A-Z][A-Z]+)s?\s*(?::|—|–|\s-)\s")
VERB_RE = re.compile(r"(?<![\w-])([A-Z][A-Z]+)s?" + DEFINING_VERB_RE)
WORDS_RE = re.compile(r"[A-Za-z]+")


def definitions(text: str) -> set[str]:
    """Every acronym the text defines, in one pass: ``long form (ACR)``, ``ACR (long form)``,
    ``**ACR**``, ``ACR: ...``, ``ACR stands for ...``, or capitalised words whose initials spell it."""
    found = {m.group(1) for m in PAREN_ACR_RE.finditer(text)}
    found |= {m.group(1) for m in VERB_RE.finditer(text)}
    found |= {m.group(1) or m.group(2) for m in LABEL_RE.finditer(text)}
    for match in ACR_PAREN_RE.finditer(text):
        if _initials(WORDS_RE.findall(match.group(2))) == match.group(1):
            found.add(match.group(1))
    run: list[str] = []
    for word in [*WORDS_RE.findall(text), "."]:
        if word[0].isupper() and not (word.isupper() and len(word) > 1):
            run.append(word[0])
            continue
        if word.lower() in SMALL_WORDS and run:
            continue
        for i in range(len(run)):
            for j in range(i + 2, min(len(run), i + LONGEST) + 1):
                found.add("".join(run[i:j]))
        run = []
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


def titled(text: str) -> set[str]:
    """Acronyms a title carries as the document's own kind ("KEP-1880: ...")."""
    return set(re.findall(r"\b([A-Z]{2,6})-\d+", text))


LOWER_RE = re.compile(r"[a-z]+|[^a-z\s-]+")
