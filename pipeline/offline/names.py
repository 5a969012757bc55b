"""Text the offline author never alters: names, dotted names, acronyms, code and quotations.

A design absorbs words it did not write: the log's decisions, the code's names. Those reach
the design byte for byte. A protected token is a code span, a quotation, or a word that is
not a plain word: one with a capital after its first letter (``AWS``, ``gRPC``, ``GOV.UK``),
a digit (``eu-west-1``), or a dot, underscore or slash inside it (``db_admin``,
``example.com``). The author checks its output against its inputs with :func:`lost`: a
token that appears fewer times afterwards was altered, and the change is refused.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache

CODE_RE = re.compile(r"`[^`\n]+`")
QUOTE_RE = re.compile(r"\"[^\"\n]{1,200}\"|“[^”\n]{1,200}”")
WORD_RE = re.compile(r"[^\s`\"“”()\[\]{},;!?*]+")
EDGE = ".:'’-"
PLAIN_RE = re.compile(r"[A-Za-z][a-z]*(?:['’-][A-Za-z]?[a-z]*)*")


def _protected_word(word: str) -> bool:
    return len(word) > 1 and not PLAIN_RE.fullmatch(word)


def protected(text: str) -> Counter[str]:
    """Each protected token of ``text`` and how often it occurs."""
    out: Counter[str] = Counter()
    for pattern in (CODE_RE, QUOTE_RE):
        out.update(m.group(0) for m in pattern.finditer(text))
    bare = QUOTE_RE.sub(" ", CODE_RE.sub(" ", text))
    for match in WORD_RE.finditer(bare):
        word = match.group(0).strip(EDGE)
        if _protected_word(word):
            out[word] += 1
    return out


@cache
def _occurrence(token: str) -> re.Pattern[str]:
    if token.startswith(("`", '"', "“")):
        return re.compile(re.escape(token))
    return re.compile(rf"(?<![\w`]){re.escape(token)}(?![\w`])")


def count(token: str, text: str) -> int:
    """How often ``token`` stands in ``text`` as itself (not inside a longer word or code)."""
    return len(_occurrence(token).findall(text))


def lost(before: str, after: str) -> list[str]:
    """The protected tokens of ``before`` that ``after`` holds fewer of."""
    return sorted(t for t in protected(before) if count(t, after) < count(t, before))


def missing(tokens: Counter[str], text: str) -> list[str]:
    """The tokens that do not stand in ``text`` at all."""
    return sorted(t for t in tokens if count(t, text) == 0)
