"""The code as claims ask it: each code file read once, the code index answered from tables,
and whether a span's text holds a value a sentence quotes (grounding.claims, grounding.drift).

Code the claims never resolve to: designloop's documents (every ``_workflow/``,
``design-final.md``, ``design-mechanics-final.md`` and their ledgers), documents by extension
(a README's example is not a definition) and every runs directory.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from pipeline.agents.readable import store_dirs
from pipeline.grounding.ledger import DESIGN_DOCS, LEDGER_NAMES
from pipeline.grounding.mentions import LiteralValue, claim_rules
from pipeline.grounding.psi import CodeIndex, Symbol
from pipeline.grounding.psi_text import bare_name, text_definitions, text_references
from pipeline.grounding.spans import CodeFile, read_code

NUMBER_TOKEN_RE = re.compile(r"(?<![\w.])(\d[\d_]*)(\.\d+)?(?![\w])")
NUMBER_VALUE_RE = re.compile(r"^-?\d+(?:\.\d+)?$")


class CodeFiles:
    """The code files read for claims, each read once (None-free: a skipped one is its note)."""

    def __init__(self, repo_root: Path) -> None:
        self.repo_root = repo_root
        self._files: dict[str, CodeFile | str] = {}

    def get(self, rel: str) -> CodeFile | str:
        if rel not in self._files:
            self._files[rel] = read_code(self.repo_root, rel)
        return self._files[rel]


def claims_private(repo_root: Path) -> Callable[[Path], bool]:
    """What claims never resolve to: designloop's documents, documents, runs directories."""
    stores = store_dirs(repo_root)
    documents = claim_rules().documents

    def private(path: Path) -> bool:
        if path.name in DESIGN_DOCS or path.name in LEDGER_NAMES or path.suffix.lower() in documents:
            return True
        if not stores:
            return False
        real = path.resolve()
        return any(real == d or real.is_relative_to(d) for d in stores)

    return private


class Lookup:
    """The code index as claims ask it, answered from tables built once: definitions by name,
    qualified name and dotted suffix; every name the code uses; text files searched only when
    they hold the name at all."""

    def __init__(self, index: CodeIndex) -> None:
        self.index = index
        self._defs: dict[str, list[Symbol]] = {}
        for symbol in index.symbols:
            parts = symbol.qualified.split(".")
            keys = {symbol.name, *(".".join(parts[i:]) for i in range(len(parts)))}
            for key in keys:
                self._defs.setdefault(key, []).append(symbol)
        self._used = {r.name for r in index.references} | {s.name for s in index.symbols}
        self._texts = {rel: "\n".join(lines) for rel, lines in index.texts.items()}

    def definitions(self, query: str) -> list[Symbol]:
        query = query.strip().strip("`").removesuffix("()")
        name = bare_name(query)[1]
        found = list(self._defs.get(query, ()))
        for rel, text in self._texts.items():
            if name and name in text:
                lines = self.index.texts[rel]
                found += [
                    Symbol(name, query, "text match", rel, n, lines[n - 1].strip(), exact=False)
                    for n in text_definitions(query, lines)
                ]
        return found

    def named(self, name: str) -> bool:
        """Whether the code defines or uses ``name`` anywhere (a text file: as a whole word)."""
        if name in self._used:
            return True
        return any(name in text and text_references(name, [text]) for text in self._texts.values())


def holds(text: str, literal: LiteralValue) -> bool:
    """Whether a code span's text holds a literal value (a number by its value)."""
    return holds_value(text, literal.value) if literal.kind == "number" else literal.value in text


def holds_value(text: str, value: str) -> bool:
    """Whether ``text`` holds ``value``: a number as a number token of that value, anything
    else as written."""
    if not NUMBER_VALUE_RE.match(value):
        return value in text
    for m in NUMBER_TOKEN_RE.finditer(text):
        whole = m[1].replace("_", "").lstrip("0") or "0"
        frac = (m[2] or "").rstrip("0").rstrip(".")
        if whole + (frac if frac not in ("", ".") else "") == value.lstrip("-"):
            return True
    return False
