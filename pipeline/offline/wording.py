"""House-style term matches on prose, and whether a term carries meaning where it stands.

A word on a filler, puffery or hedge list is only noise when deleting or replacing it keeps
the sentence's claim: "not powerful enough", "more powerful than", "the very first",
"an underscore", "actually removing the file" all say something the bare sentence would
not. Such matches are not reported, and the fixer never edits them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from pipeline.formats.prose import Block
from pipeline.offline.text import HouseRule, term_pattern

NEGATION_RE = re.compile(
    r"(?:\b(?:not|no|never|nor|too|so|as|how|more|less|most|least|without)|n['’]t)\s+(?:\w+\s+)?$",
    re.IGNORECASE,
)
DETERMINER_RE = re.compile(
    r"\b(?:the|this|that|these|those|an?|one|two|three|each|every|any|some|what|which|another|no|"
    r"its|their|your|my|our|his|her)\s+$",
    re.IGNORECASE,
)
COMPARATIVE_RE = re.compile(r"\b(?:more|less|most|least|as|very|quite|not|un)\s+$", re.IGNORECASE)
AFTER_RE = re.compile(r"^\s+(?:enough|than|as)\b", re.IGNORECASE)
GERUND_RE = re.compile(r"^\s+\w+(?:ing|ed)\b", re.IGNORECASE)
NOUN_SENSES = frozenset({"underscore", "underscores", "paradigm", "realm", "testament", "leverage"})
"""Words that are also plain nouns in technical text (the ``_`` character, "a paradigm of ...")."""
GRADABLE = frozenset(
    {"powerful", "elegant", "beautiful", "effortless", "robust", "comprehensive", "seamless"}
)


@dataclass(frozen=True, slots=True)
class Hit:
    term: str
    block: Block
    start: int
    end: int

    @property
    def line(self) -> int:
        return self.block.line_at(self.start)

    @property
    def quote(self) -> str:
        return self.block.quote(self.start, self.end)


def carries_meaning(text: str, start: int, end: int, term: str) -> bool:
    """The match at ``text[start:end]`` says something its sentence needs."""
    before, after = text[max(0, start - 40) : start], text[end : end + 30]
    word = term.lower()
    if AFTER_RE.match(after):
        return True  # "powerful enough", "more X than", "as X as"
    if word in NOUN_SENSES and DETERMINER_RE.search(before):
        return True  # "an underscore", "the paradigm"
    graded = word in ("very", "actually", "really", "simply", "quite") or word in GRADABLE
    if graded and NEGATION_RE.search(before):
        return True  # "not very", "not actually", "more powerful", "too elegant"
    if word == "very" and DETERMINER_RE.search(before):
        return True  # "the very first", "their very first"
    if word in ("kind of", "sort of") and DETERMINER_RE.search(before):
        return True  # "some kind of block", "this sort of thing": a type, not a hedge
    if word == "likely to" and COMPARATIVE_RE.search(before):
        return True  # "more likely to", "less likely to": a comparison
    return word in ("actually", "really") and bool(GERUND_RE.match(after))


def hits(block: Block, rule: HouseRule) -> Iterator[Hit]:
    """Each match of the rule's terms in the block's prose that does not carry meaning."""
    for term in rule.terms:
        for match in term_pattern(term).finditer(block.prose):
            if carries_meaning(block.prose, match.start(), match.end(), term):
                continue
            yield Hit(term, block, match.start(), match.end())
