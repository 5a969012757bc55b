"""Which definition a design's name means, or that nothing in its sentence says.

A name is looked up by its exact qualified name first, then within the types its sentence names
(``Bucket`` ... ``take``: ``Bucket.take``), then in the files its sentence cites; a parsed
definition goes before a text match, a source file before a test (grounding.sources), a
definition before its declaration (``.pyi``, ``.d.ts``, a C header), and the overloads of one
name in one file are one definition. What is left is one definition (the claim rests on it),
several (the name is ambiguous: reported with its candidates, never bound to the first), or none.

A weak mention (a plain word in inline code) binds to a single definition and is reported as
ambiguous between several; a name in fenced code or in prose without backticks binds only to a
single definition and is never a finding.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.grounding.mentions import Mention
from pipeline.grounding.sources import is_test
from pipeline.grounding.symbols import Symbol

DECLARATIONS = (".pyi", ".d.ts", ".h", ".hh", ".hpp")
TYPE_KINDS = frozenset({"class", "struct", "interface", "trait", "type", "enum", "record", "protocol"})


@dataclass(frozen=True, slots=True)
class Choice:
    """The definitions a name may mean: one, or several (ambiguous)."""

    symbols: list[Symbol]


def _narrowed(symbols: list[Symbol], keep: list[Symbol]) -> list[Symbol]:
    return keep or symbols


def _distinct(symbols: list[Symbol]) -> list[Symbol]:
    """One definition per file and qualified name (overloads are one), a definition before its
    declaration in a header or stub."""
    seen: dict[tuple[str, str], Symbol] = {}
    for symbol in sorted(symbols, key=lambda s: (s.file, s.line)):
        seen.setdefault((symbol.file, symbol.qualified), symbol)
    out = list(seen.values())
    qualified = {s.qualified for s in out}
    if len(qualified) == 1 and len(out) > 1:
        out = _narrowed(out, [s for s in out if not s.file.endswith(DECLARATIONS)])
    return out


def choose(symbols: list[Symbol], mention: Mention, cited: set[str], scopes: list[str]) -> Choice | None:
    """The definitions ``mention`` means among ``symbols`` (its name's definitions)."""
    if not symbols:
        return None
    loose = mention.fenced or mention.prose
    parsed = [s for s in symbols if s.exact]
    if not parsed:  # text matches only: a plain word in inline code binds to the one there is
        return Choice(symbols) if len(symbols) == 1 and not loose else None
    query = mention.query
    found = _narrowed(parsed, [s for s in parsed if s.qualified == query])
    found = _narrowed(found, [s for s in found if any(s.qualified.startswith(f"{t}.") for t in scopes)])
    found = _narrowed(found, [s for s in found if s.file in cited])
    found = _narrowed(found, [s for s in found if not is_test(s.file)])
    found = _distinct(found)
    if len(found) == 1:
        return Choice(found)
    return None if loose else Choice(found)


def is_type(symbol: Symbol) -> bool:
    return symbol.kind in TYPE_KINDS
