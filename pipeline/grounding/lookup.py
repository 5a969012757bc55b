"""The code as claims ask it: each code file read once, the code index answered from tables,
where a name appears when nothing defines it, and whether a span's text holds a value a
sentence quotes (grounding.claims, grounding.drift).

Code the claims never resolve to: designloop's documents (every ``_workflow/``,
``design-final.md``, ``design-mechanics-final.md`` and their ledgers), documents by extension
(a README's example is not a definition; Markdown is never a use of code), generated and
vendored files (grounding.sources) and every runs directory.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from pipeline import confinement
from pipeline.agents.readable import store_dirs, walk
from pipeline.grounding.ledger import DESIGN_DOCS, LEDGER_NAMES
from pipeline.grounding.mentions import LiteralValue
from pipeline.grounding.psi import CodeIndex
from pipeline.grounding.psi_text import (
    MAX_TEXT_BYTES,
    bare_name,
    readable_text,
    text_definitions,
    text_references,
)
from pipeline.grounding.rules import claim_rules
from pipeline.grounding.spans import CodeFile, read_code
from pipeline.grounding.symbols import Symbol

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
    """What claims never resolve to: designloop's documents, documents, runs directories (the
    generated trees the code index leaves out itself)."""
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
        self._used = index.used_names()
        self._texts = {
            rel: "\n".join(lines) for rel, lines in index.texts.items() if rel not in index.configs
        }
        self._words = {rel: "\n".join(lines) for rel, lines in index.texts.items()}

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
        return any(name in text and text_references(name, [text]) for text in self._words.values())


class Repository:
    """Every text file of the repository but designloop's own (its documents, the ledgers, the
    runs directories), read once when first asked: where a name nothing defines does appear
    (a document, a comment), so a finding says so truthfully."""

    def __init__(self, repo_root: Path) -> None:
        self.repo_root = repo_root
        self._texts: dict[str, str] | None = None

    def _load(self) -> dict[str, str]:
        stores = store_dirs(self.repo_root)

        def private(path: Path) -> bool:
            if path.name in DESIGN_DOCS or path.name in LEDGER_NAMES:
                return True
            return bool(stores) and any(path.resolve().is_relative_to(d) for d in stores)

        texts: dict[str, str] = {}
        for path in walk(self.repo_root, private, hidden_dirs=False, root=self.repo_root):
            try:
                text = readable_text(confinement.read_bytes(path, self.repo_root, limit=MAX_TEXT_BYTES))
            except (OSError, confinement.OutsideRepository):
                continue
            if text is not None:
                texts[path.relative_to(self.repo_root).as_posix()] = text
        return texts

    def where(self, name: str, limit: int = 3) -> list[str]:
        """The files where ``name`` appears as a whole word (at most ``limit``)."""
        if self._texts is None:
            self._texts = self._load()
        word = re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])")
        found = [rel for rel, text in self._texts.items() if name in text and word.search(text)]
        return found[:limit]


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
