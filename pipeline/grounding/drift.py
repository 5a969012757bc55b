"""Drift: each claim of a ledger checked against the code now (``designloop drift``).

A claim is current while its span's fingerprint is what the ledger recorded, wherever the
span now starts in its file (lines above it may come and go). Otherwise it is stale, and
what happened is named:

* ``changed``: the symbol is still in its file but its code changed (a location claim: the
  cited lines hold other text now and are found nowhere else in the file);
* ``moved``: the same code is now in another file (a symbol), at other lines (a location),
  or at another path (a file);
* ``renamed``: the symbol is gone, and a definition with the same body under another name is
  in its file or its directory;
* ``removed``: the code is gone;
* ``ambiguous``: the name had several definitions and one of them changed (or went);
* ``quote``: the design line the ledger names no longer holds the claim's sentence (the
  design changed since the ledger was written).

A span whose fingerprint is unchanged but that no longer holds a value its sentence quotes
(a ``.env`` variable's value, which is never digested) is ``changed``. Each stale claim has a
confidence class: ``removed`` (the code is gone: the sentence is false), ``renamed`` (renamed
or moved: the name or place it gives is wrong now), ``changed`` (the code it rests on changed
in a way that can make it false) or ``ambiguous``.

A sentence that names no code but sits in a section whose claims went stale is "at risk"
(``at_risk``): a suggestion to read it again, never a reason to fail.

Drift reads the cited files only, once each; the code root is indexed only to follow a
symbol that left its file. A cited file that is not UTF-8 or too large is ``unchecked``,
with a note.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pipeline.errors import InputError
from pipeline.formats.textio import read_text
from pipeline.grounding.claims import Grounding
from pipeline.grounding.ledger import ClaimEntry, Ledger, ledger_path, load_ledger
from pipeline.grounding.lookup import CodeFiles, holds_value
from pipeline.grounding.mentions import Sentence, extract_claims
from pipeline.grounding.spans import (
    CodeFile,
    Span,
    all_definitions,
    file_fingerprint,
    find_lines,
    lines_fingerprint,
    span_fingerprint,
    symbol_spans,
)

Status = Literal["current", "changed", "moved", "renamed", "removed", "ambiguous", "quote", "unchecked"]
STALE: tuple[Status, ...] = ("changed", "moved", "renamed", "removed", "ambiguous", "quote")
Confidence = Literal["changed", "removed", "renamed", "ambiguous"]
CONFIDENCE: dict[Status, Confidence] = {
    "changed": "changed",
    "quote": "changed",
    "moved": "renamed",
    "renamed": "renamed",
    "removed": "removed",
    "ambiguous": "ambiguous",
}


@dataclass(frozen=True, slots=True)
class ClaimState:
    """One claim as the code has it now."""

    design: str
    """The design file, relative to the repository root."""
    line: int
    """Where the design makes the claim now (the ledger's line, or where its sentence moved)."""
    entry: ClaimEntry
    status: Status
    what: str
    """What happened, in words."""
    now: str | None = None
    """Where the code is now (``file:first-last``), when it is somewhere."""
    present: bool = True
    """The design still holds the claim's sentence (somewhere): a stale claim whose sentence
    was rewritten or removed since is no longer anything the design says."""

    @property
    def stale(self) -> bool:
        return self.status in STALE

    @property
    def confidence(self) -> Confidence | None:
        return CONFIDENCE.get(self.status)

    def to_json(self) -> dict[str, object]:
        e = self.entry
        return {
            "file": self.design,
            "line": self.line,
            "quote": e.quote,
            "mention": e.mention,
            "kind": e.kind,
            "symbol": e.symbol,
            "status": self.status,
            "confidence": self.confidence,
            "what": self.what,
            "code": {"file": e.file, "first": e.first, "last": e.last},
            "now": self.now,
        }


def _where(rel: str, first: int, last: int) -> str:
    return f"{rel}:{first}" if first == last else f"{rel}:{first}-{last}"


class Drift:
    """Checks ledgers against the code; one per repository (files and indexes shared)."""

    def __init__(self, repo_root: Path, store: Path | None = None) -> None:
        self.repo_root = repo_root.resolve()
        self.store = store
        """Where the code indexes are kept between invocations (grounding.index_store)."""
        self._grounding: dict[Path, Grounding] = {}
        self._files = CodeFiles(self.repo_root)

    def grounding(self, code_root: Path) -> Grounding:
        """The claims of one code root, its index built once (and kept in ``store``)."""
        root = code_root.resolve()
        if root not in self._grounding:
            self._grounding[root] = Grounding(self.repo_root, root, self._files, self.store)
        return self._grounding[root]

    def check(self, design_file: Path, ledger: Ledger) -> list[ClaimState]:
        lines = read_text(design_file, what="design").lines
        rel = design_file.resolve().relative_to(self.repo_root).as_posix()
        grounding = self.grounding(self.repo_root / ledger.code_root)
        out = []
        for entry in ledger.claims:
            line, quoted = _design_line(lines, entry)
            status, what, now = self._code(entry, grounding)
            if status in STALE and entry.candidates > 1:
                what = (
                    f"`{entry.mention}` may mean {entry.symbol} among {entry.candidates} definitions: {what}"
                )
                status = "ambiguous"
            if status == "current" and not quoted:
                status, what = "quote", f"line {entry.line} no longer holds the claim's sentence"
                if line != entry.line:
                    what += f" (it is on line {line} now)"
            present = quoted or entry.quote in lines[line - 1] if 1 <= line <= len(lines) else False
            out.append(ClaimState(rel, line, entry, status, what, now, present))
        return out

    def _code(self, entry: ClaimEntry, grounding: Grounding) -> tuple[Status, str, str | None]:
        if entry.kind == "path":
            return self._path(entry, grounding)
        code = self._files.get(entry.file)
        if isinstance(code, str) and code not in ("missing", "not a regular file"):
            return "unchecked", f"{entry.file}: {code}", None
        if entry.kind == "location":
            if isinstance(code, str):
                return "removed", f"{entry.file} is gone", None
            return _location(entry, code)
        return self._symbol(entry, code if isinstance(code, CodeFile) else None, grounding)

    def _path(self, entry: ClaimEntry, grounding: Grounding) -> tuple[Status, str, str | None]:
        if (self.repo_root / entry.file).exists():
            return "current", "the path exists", entry.file
        if entry.fingerprint != "directory":
            name = Path(entry.file).name
            for rel in grounding.index.files:
                if not (rel.endswith("/" + name) or rel == name):
                    continue
                code = self._files.get(rel)
                if isinstance(code, CodeFile) and file_fingerprint(code) == entry.fingerprint:
                    return "moved", f"{entry.file} moved to {rel}", rel
        return "removed", f"{entry.file} is gone", None

    def _symbol(
        self, entry: ClaimEntry, code: CodeFile | None, grounding: Grounding
    ) -> tuple[Status, str, str | None]:
        symbol = entry.symbol or entry.mention
        if code is not None:
            spans = symbol_spans(code, symbol)
            for span in spans:
                if span_fingerprint(code, span) == entry.fingerprint:
                    where = _where(code.rel, span.first, span.last)
                    lost = _lost(entry, code, span)
                    if lost:
                        return "changed", f"`{symbol}` no longer holds {', '.join(lost)} ({where})", where
                    return "current", "unchanged", where
            if spans:
                span = min(spans, key=lambda s: abs(s.first - entry.first))
                return "changed", _changed(entry, code, span), _where(code.rel, span.first, span.last)
        elsewhere = [s for s in grounding.lookup.definitions(symbol) if s.file != entry.file and s.exact]
        for s in elsewhere:
            other = self._files.get(s.file)
            if not isinstance(other, CodeFile):
                continue
            for span in symbol_spans(other, s.qualified):
                if span.first <= s.line <= span.last and span_fingerprint(other, span) == entry.fingerprint:
                    where = _where(other.rel, span.first, span.last)
                    return "moved", f"`{symbol}` moved from {entry.file} to {where}", where
        if elsewhere:
            s = elsewhere[0]
            where = f"{s.file}:{s.line}"
            return "moved", f"`{symbol}` is no longer in {entry.file}; one at {where} differs", where
        renamed = self._renamed(entry, code, grounding)
        if renamed is not None:
            return renamed
        gone = f"{entry.file} is gone" if code is None else f"{entry.file} no longer defines it"
        return "removed", f"`{symbol}` is gone: {gone}", None

    def _renamed(
        self, entry: ClaimEntry, code: CodeFile | None, grounding: Grounding
    ) -> tuple[Status, str, str | None] | None:
        """A definition with the claim's body under another name, in its file or its directory."""
        folder = str(Path(entry.file).parent)
        near = [entry.file] if code is not None else []
        near += [f for f in grounding.index.files if str(Path(f).parent) == folder and f != entry.file]
        for rel in near:
            other = self._files.get(rel)
            if not isinstance(other, CodeFile):
                continue
            for span in all_definitions(other):
                if span_fingerprint(other, span) == entry.fingerprint:
                    where = _where(other.rel, span.first, span.last)
                    return "renamed", f"`{entry.symbol}` was renamed to `{span.qualified}` ({where})", where
        return None


@dataclass(frozen=True, slots=True)
class AtRisk:
    """A sentence that names no code, under a heading whose claims went stale."""

    design: str
    line: int
    quote: str
    heading: str
    stale: tuple[int, ...]
    """The lines of the stale claims under the same heading."""

    def to_json(self) -> dict[str, object]:
        return {
            "file": self.design,
            "line": self.line,
            "quote": self.quote,
            "heading": self.heading,
            "stale_lines": list(self.stale),
        }


def at_risk(design_file: Path, states: list[ClaimState]) -> list[AtRisk]:
    """The sentences of ``design_file`` that name no code but sit under the same heading (of any
    level) as a claim that went stale in the code: drift cannot tell whether they still hold."""
    stale = [s for s in states if s.stale and s.status != "quote"]
    if not stale:
        return []
    claims = extract_claims(read_text(design_file, what="design").text)
    naming = {m.sentence for m in claims.mentions if m.role != "alternative"}
    headings = [s for s in claims.sentences if s.heading]

    def heading_of(line: int) -> Sentence | None:
        above = [h for h in headings if h.line <= line]
        return above[-1] if above else None

    by_heading: dict[int, list[int]] = {}
    for state in stale:
        head = heading_of(state.line)
        by_heading.setdefault(head.line if head else 0, []).append(state.line)
    out = []
    for sentence in claims.sentences:
        head = heading_of(sentence.line)
        lines = by_heading.get(head.line if head else 0)
        if sentence.heading or sentence.index in naming or not lines:
            continue
        design = stale[0].design
        name = head.quote if head else ""
        out.append(AtRisk(design, sentence.line, sentence.quote, name, tuple(sorted(set(lines)))))
    return out


def stale_claims(repo_root: Path, documents: Iterable[Path]) -> list[str]:
    """Why the claims of these design documents no longer stand: each stale claim at its design
    line, a missing or damaged ledger; nothing when every claim is current (a document that
    does not exist has no claims). ``batch --stale-only`` runs a directory on it; readiness can
    count it as a gap."""
    reasons: list[str] = []
    drift = Drift(repo_root)
    for document in documents:
        if not document.is_file():
            continue
        ledger = ledger_path(document)
        rel = document.resolve().relative_to(drift.repo_root).as_posix()
        if not ledger.is_file():
            reasons.append(f"{rel} has no claims ledger")
            continue
        try:
            states = drift.check(document, load_ledger(ledger))
        except InputError as exc:
            reasons.append(exc.message)
            continue
        reasons += [f"{s.design}:{s.line}: {s.entry.mention}: {s.what}" for s in states if s.stale]
    return reasons


def _design_line(lines: list[str], entry: ClaimEntry) -> tuple[int, bool]:
    """The line that makes the claim now, and whether it is the ledger's line."""
    if 1 <= entry.line <= len(lines) and entry.quote in lines[entry.line - 1]:
        return entry.line, True
    found = [n for n, text in enumerate(lines, start=1) if entry.quote in text]
    if found:
        return min(found, key=lambda n: abs(n - entry.line)), False
    return entry.line, False


def _lost(entry: ClaimEntry, code: CodeFile, span: Span) -> list[str]:
    """The values the claim's sentence quotes that its span held and holds no more."""
    text = "\n".join(code.lines[span.first - 1 : span.last])
    return [v for v in entry.literals if not holds_value(text, v)]


def _changed(entry: ClaimEntry, code: CodeFile, span: Span) -> str:
    gone = _lost(entry, code, span)
    what = f"`{entry.symbol}` changed ({_where(code.rel, span.first, span.last)})"
    if gone:
        what += ": it no longer holds " + ", ".join(gone)
    return what


def _location(entry: ClaimEntry, code: CodeFile) -> tuple[Status, str, str | None]:
    fits = entry.last <= len(code.lines)
    if fits and lines_fingerprint(code, entry.first, entry.last) == entry.fingerprint:
        return "current", "unchanged", _where(code.rel, entry.first, entry.last)
    length = entry.last - entry.first + 1
    found = find_lines(code, length, entry.fingerprint)
    if found is not None:
        where = _where(code.rel, found, found + length - 1)
        return "moved", f"the cited lines are at {where} now", where
    if entry.first > len(code.lines):
        return "changed", f"{code.rel} has {len(code.lines)} lines now", None
    now = " ".join(code.lines[entry.first - 1].split())[:80]
    return "changed", f"{_where(code.rel, entry.first, entry.last)} reads otherwise now: {now!r}", None
