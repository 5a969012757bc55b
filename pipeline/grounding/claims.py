"""Grounded claims: each code mention of a design file resolved through PSI to a code span.

``Grounding`` resolves a design file's mentions (grounding.mentions) against the code root with
PSI's index: a symbol to its definition (a class to its declaration, a member to its own span),
a configuration entry to its lines, a path to the file or directory, a location to the cited
lines. What resolves becomes a ledger entry (grounding.ledger) with the span's fingerprint
(grounding.spans). What does not is a finding when the mention is shaped so that only code
looks like it: ``clm-unresolved`` when the name appears nowhere, ``clm-undefined`` (a
suggestion) when no source file defines it but it appears somewhere (a document, a comment).
A name with several definitions and nothing in its sentence to choose is ``clm-ambiguous``,
with its candidates, and is never bound to one of them. A value a sentence quotes that none of
the spans it cites holds is ``clm-literal``. No model takes part: the ledger never depends on
what a model chose to report. How a name is chosen among its definitions is grounding.choose.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.formats.design_doc import parse_design
from pipeline.formats.findings import MECHANICAL, Finding
from pipeline.formats.textio import read_text
from pipeline.grounding.choose import choose, is_type
from pipeline.grounding.index_store import IndexStore
from pipeline.grounding.ledger import ClaimEntry, Ledger, ledger_path
from pipeline.grounding.lookup import CodeFiles, Lookup, Repository, claims_private, holds
from pipeline.grounding.mentions import LOCATION_RE, LiteralValue, Mention, extract_claims
from pipeline.grounding.psi import CodeIndex, build_index
from pipeline.grounding.rules import claim_rules
from pipeline.grounding.spans import Span, file_fingerprint, lines_fingerprint, span_fingerprint, symbol_spans
from pipeline.grounding.symbols import Symbol

VALUE_WORD_RE = re.compile(r"^[A-Z][A-Za-z0-9_]*$")
IMPLICIT = frozenset({"None", "Null", "NULL", "Nil", "NIL"})
"""Values code often holds without writing them (a function that returns nothing)."""

Section = Callable[[int], str | None]


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix() if path != root else "."


@dataclass(slots=True)
class Resolution:
    """One design file's claims as resolved now."""

    ledger: Ledger
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Files skipped (not UTF-8, too large): the claims resting on them were not resolved."""


@dataclass(slots=True)
class _Sentence:
    """What one sentence rests on, as it is resolved."""

    mentions: list[Mention]
    entries: list[ClaimEntry] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    """The text of each entry's span (for the sentence's literals)."""
    scopes: list[str] = field(default_factory=list)
    """The qualified names of the types the sentence names (a member's name is looked up
    within them first)."""

    def add(self, entry: ClaimEntry, text: str) -> None:
        self.entries.append(entry)
        self.texts.append(text)


class Grounding:
    """Resolves design files' claims under one code root; the index is built on first need."""

    def __init__(
        self, repo_root: Path, code_root: Path, files: CodeFiles | None = None, store: Path | None = None
    ) -> None:
        self.repo_root = repo_root.resolve()
        self.code_root = code_root.resolve()
        self.files = files or CodeFiles(self.repo_root)
        self.store = store
        """Where the code index is kept between invocations (grounding.index_store), if anywhere."""
        self._index: CodeIndex | None = None
        self._lookup: Lookup | None = None
        self.repository = Repository(self.repo_root)

    @property
    def index(self) -> CodeIndex:
        if self._index is None:
            private = claims_private(self.repo_root)
            if self.store is not None:
                self._index = IndexStore(self.store, self.repo_root, self.code_root).build(private)
            else:
                self._index = build_index(self.repo_root, self.code_root, private)
        return self._index

    @property
    def lookup(self) -> Lookup:
        if self._lookup is None:
            self._lookup = Lookup(self.index)
        return self._lookup

    def resolve(self, design_file: Path) -> Resolution:
        source = read_text(design_file, what="design")
        doc = parse_design(source)
        claims = extract_claims(source.text, doc.lines)
        design_rel = _rel(self.repo_root, design_file.resolve())
        out = Resolution(Ledger(design=design_file.name, code_root=_rel(self.repo_root, self.code_root)))
        by_sentence: dict[int, list[Mention]] = {}
        for mention in claims.mentions:
            by_sentence.setdefault(mention.sentence, []).append(mention)
        for index, mentions in by_sentence.items():
            sentence = _Sentence(mentions)
            self._sentence(sentence, design_rel, doc.section_name_at, out)
            literals = (*claims.literals.get(index, ()), *self._values(sentence))
            entries = sentence.entries
            if literals and sentence.texts:
                entries = self._literals(sentence, literals, design_rel, doc.section_name_at, out)
            out.ledger.claims.extend(entries)
        if claims.mentions and not self.index.sources:
            out.notes.append(f"no code PSI can read under {out.ledger.code_root}: the names were not checked")
        out.ledger.claims.sort(key=lambda e: (e.line, e.mention, e.file, e.first))
        out.findings.sort(key=lambda f: (f.line or 0, f.rule, f.quote or ""))
        return out

    def _sentence(self, sentence: _Sentence, design_rel: str, section: Section, out: Resolution) -> None:
        """Resolve the sentence's claims: its locations first (a name found on the cited lines
        rests on them), then its types (a member named with its type is looked up within it),
        then every other name and path."""
        mentions = [m for m in sentence.mentions if m.role != "alternative"]
        located: set[str] = set()
        for mention in (m for m in mentions if m.kind == "location"):
            entry, text = self._location(mention, mentions, design_rel, section, out)
            if entry is not None:
                sentence.add(entry, text)
                located.update(n for n in (entry.symbol or "").split(", ") if n)
        rest = [m for m in mentions if m.kind != "location" and m.query not in located]
        cited = self._cited(mentions)
        for mention in rest:  # the types the sentence names, so its members are looked up in them
            choice = choose(self.lookup.definitions(mention.query), mention, cited, [])
            if mention.kind == "symbol" and choice is not None and len(choice.symbols) == 1:
                sentence.scopes += [s.qualified for s in choice.symbols if is_type(s)]
        for mention in rest:
            if mention.kind == "path":
                found = self._path(mention)
                if found is not None:
                    sentence.add(*found)
                elif self._reportable(mention) and self.index.sources and self._ours(mention):
                    out.findings.append(self._unresolved(mention, design_rel, section))
                continue
            self._symbol(mention, sentence, cited, design_rel, section, out)

    def _cited(self, mentions: list[Mention]) -> set[str]:
        """The files a sentence cites by path or location."""
        return {
            c
            for n in mentions
            if n.kind in ("path", "location")
            for c in self._candidates(LOCATION_RE.sub(r"\g<path>", n.text))
        }

    def _symbol(
        self,
        mention: Mention,
        sentence: _Sentence,
        cited: set[str],
        design_rel: str,
        section: Section,
        out: Resolution,
    ) -> None:
        symbols = [s for s in self.lookup.definitions(mention.query) if s.file]
        choice = choose(symbols, mention, cited, sentence.scopes)
        if choice is not None:
            if len(choice.symbols) > 1 and mention.role == "claim":
                out.findings.append(self._ambiguous(mention, choice.symbols, design_rel, section))
            for symbol in choice.symbols[: claim_rules().max_candidates]:
                found = self._entry(mention, symbol, len(choice.symbols), out)
                if found is not None:
                    sentence.add(*found)
            return
        if not self._reportable(mention):
            return
        found_path = self._path(mention)  # a file's name: a script, a template (`_adr_help`)
        if found_path is not None:
            sentence.add(*found_path)
            return
        if self.index.sources:
            finding = self._undefined(mention, design_rel, section)
            if finding is not None:
                out.findings.append(finding)

    def _entry(
        self, mention: Mention, chosen: Symbol, candidates: int, out: Resolution
    ) -> tuple[ClaimEntry, str] | None:
        code = self.files.get(chosen.file)
        if isinstance(code, str):
            out.notes.append(f"{chosen.file}: {code}")
            return None
        spans = symbol_spans(code, chosen.qualified)
        span = next((s for s in spans if s.first <= chosen.line <= s.last), None)
        if span is None:
            span = Span(chosen.name, chosen.qualified, chosen.kind, chosen.line, chosen.end or chosen.line)
        entry = ClaimEntry(
            line=mention.line,
            quote=mention.quote,
            mention=mention.text,
            kind="symbol",
            symbol=chosen.qualified,
            file=chosen.file,
            first=span.first,
            last=span.last,
            method=code.method,
            fingerprint=span_fingerprint(code, span),
            candidates=candidates,
        )
        return entry, "\n".join(code.lines[span.first - 1 : span.last])

    def _finding(
        self, rule: str, design_rel: str, line: int, quote: str, section: str | None, message: str, fix: str
    ) -> Finding:
        return Finding(
            severity=claim_rules().severity(rule),
            rule=rule,
            file=design_rel,
            line=line,
            quote=quote,
            section=section,
            message=message,
            suggested_fix=fix,
            role=MECHANICAL,
        )

    def _unresolved(self, mention: Mention, design_rel: str, section: Section) -> Finding:
        where = _rel(self.repo_root, self.code_root)
        what = {
            "symbol": f"no definition in a source file under {where}, and the name appears nowhere "
            "in the repository",
            "path": f"no such file or directory under {where} or the repository root",
        }
        return self._finding(
            "clm-unresolved",
            design_rel,
            mention.line,
            mention.text,
            section(mention.line),
            f"`{mention.text}` resolves to nothing: {what.get(mention.kind, 'no such file')}",
            "name the symbol or path the code actually has, or drop the claim",
        )

    def _undefined(self, mention: Mention, design_rel: str, section: Section) -> Finding | None:
        """A strong name nothing defines: none when the code uses it (a library's name, such as
        ``json.loads``) or the sentence gives it as an example; a suggestion naming where it
        appears when it appears anywhere (a document, a comment); else ``clm-unresolved``."""
        if not self._nowhere(mention) or not self._ours(mention):
            return None
        parts = mention.query.split(".")
        seen = self.repository.where(parts[-1] if len(parts) > 1 and self._defined(parts[0]) else parts[0])
        if not seen:
            return self._unresolved(mention, design_rel, section)
        where = _rel(self.repo_root, self.code_root)
        return self._finding(
            "clm-undefined",
            design_rel,
            mention.line,
            mention.text,
            section(mention.line),
            f"`{mention.text}` has no definition in a source file under {where}; the name appears in "
            f"{', '.join(seen)} (not as code)",
            "cite the file that holds it if that is what the sentence means, or name what the code defines",
        )

    def _ambiguous(
        self, mention: Mention, symbols: list[Symbol], design_rel: str, section: Section
    ) -> Finding:
        shown = ", ".join(f"{s.qualified} ({s.file}:{s.line})" for s in symbols[:5])
        more = f" and {len(symbols) - 5} more" if len(symbols) > 5 else ""
        return self._finding(
            "clm-ambiguous",
            design_rel,
            mention.line,
            mention.text,
            section(mention.line),
            f"`{mention.text}` is defined in {len(symbols)} places and nothing in its sentence says "
            f"which: {shown}{more}",
            "qualify the name (`Type.member`) or cite the file the sentence means",
        )

    @staticmethod
    def _reportable(mention: Mention) -> bool:
        """Whether a mention that resolves to nothing can be a finding: a strong one in inline
        code that the sentence does not give as an example."""
        return mention.strong and not (mention.fenced or mention.prose) and mention.role == "claim"

    def _defined(self, name: str) -> bool:
        return bool(self.lookup.definitions(name))

    def _nowhere(self, mention: Mention) -> bool:
        """Whether an unresolved mention names nothing the code uses: a plain name the code never
        uses; a dotted one whose head the code never uses (``Buckett.take``), or whose head is
        defined here and whose member it never uses (``Bucket.tkae``). A library's name the code
        uses (``json.loads``) is neither a claim nor a finding."""
        parts = mention.query.split(".")
        named = self.lookup.named
        if len(parts) == 1:
            return not named(parts[0])
        head = parts[0]
        if not named(head):
            return True
        return self._defined(head) and not named(parts[-1])

    def _ours(self, mention: Mention) -> bool:
        """Whether an unresolved mention claims something of this repository: not a path whose
        first directory the repository does not have (``templates/template.md`` in the user's
        records directory)."""
        if mention.kind != "path" or "/" not in mention.text.strip("/"):
            return True
        top = mention.text.removeprefix("./").split("/", 1)[0]
        return any((base / top).exists() for base in (self.code_root, self.repo_root))

    def _candidates(self, rel: str) -> list[str]:
        rel = rel.strip().removeprefix("./").rstrip("/")
        out = []
        for base in (self.code_root, self.repo_root):
            path = (base / rel).resolve()
            if path.is_relative_to(self.repo_root) and path.exists():
                out.append(_rel(self.repo_root, path))
        if not out:
            out = [f for f in self.index.find_files(rel) if f.endswith("/" + rel) or f == rel]
        return out

    def _path(self, mention: Mention) -> tuple[ClaimEntry, str] | None:
        found = self._candidates(mention.text)
        if not found:
            return None
        rel = found[0]
        first, last, fingerprint = 0, 0, "directory"
        if not (self.repo_root / rel).is_dir():
            code = self.files.get(rel)
            if isinstance(code, str):
                return None
            first, last, fingerprint = 1, max(1, len(code.lines)), file_fingerprint(code)
        entry = ClaimEntry(
            line=mention.line,
            quote=mention.quote,
            mention=mention.text,
            kind="path",
            file=rel,
            first=first,
            last=last,
            method="path",
            fingerprint=fingerprint,
        )
        return entry, ""

    def _location(
        self, mention: Mention, mentions: list[Mention], design_rel: str, section: Section, out: Resolution
    ) -> tuple[ClaimEntry | None, str]:
        m = LOCATION_RE.match(mention.text)
        assert m is not None
        first = int(m["first"])
        last = int(m["last"] or first)
        found = self._candidates(m["path"])
        code = self.files.get(found[0]) if found else "missing"
        if isinstance(code, str):
            if code != "missing":
                out.notes.append(f"{found[0]}: {code}")
            else:
                out.findings.append(self._unresolved(mention, design_rel, section))
            return None, ""
        problem = None
        if first < 1 or last < first or last > len(code.lines):
            problem = f"names lines {first}-{last} of {code.rel}, which has {len(code.lines)} lines"
        elif not any(line.strip() for line in code.lines[first - 1 : last]):
            problem = f"names {'a blank line' if first == last else 'blank lines'} of {code.rel}"
        if problem is not None:
            out.findings.append(
                self._finding(
                    "clm-unresolved",
                    design_rel,
                    mention.line,
                    mention.text,
                    section(mention.line),
                    f"`{mention.text}` {problem}",
                    "cite the symbol the sentence means, or the lines the code has now",
                )
            )
            return None, ""
        cited = "\n".join(code.lines[first - 1 : last])
        names = [
            n.query
            for n in mentions
            if n.kind == "symbol"
            and re.search(rf"(?<![\w$]){re.escape(n.query.rsplit('.', 1)[-1])}(?![\w$])", cited)
        ]
        entry = ClaimEntry(
            line=mention.line,
            quote=mention.quote,
            mention=mention.text,
            kind="location",
            symbol=", ".join(dict.fromkeys(names)) or None,
            file=code.rel,
            first=first,
            last=last,
            method="text",
            fingerprint=lines_fingerprint(code, first, last),
        )
        return entry, cited

    def _values(self, sentence: _Sentence) -> list[LiteralValue]:
        """Words in inline code that name no code but a value (``Unknown``, ``READY``): what the
        sentence says the code it cites holds."""
        resolved = {e.mention for e in sentence.entries}
        return [
            LiteralValue("string", f"`{m.text}`", m.text, m.line)
            for m in sentence.mentions
            if m.role == "claim"
            and not (m.prose or m.fenced or m.strong)
            and m.text not in resolved
            and VALUE_WORD_RE.match(m.text)
            and m.text not in IMPLICIT
        ]

    def _literals(
        self,
        sentence: _Sentence,
        literals: tuple[LiteralValue, ...],
        design_rel: str,
        section: Section,
        out: Resolution,
    ) -> list[ClaimEntry]:
        """Each literal of the sentence must be in a span the sentence cites; each entry keeps
        the literals its own span holds."""
        kept: list[ClaimEntry] = []
        held = [[lit.value for lit in literals if holds(text, lit)] for text in sentence.texts]
        for entry, values in zip(sentence.entries, held, strict=True):
            kept.append(entry.model_copy(update={"literals": sorted(set(values))}) if values else entry)
        for literal in literals:
            if any(literal.value in values for values in held):
                continue
            files = ", ".join(sorted({e.file for e in sentence.entries}))
            out.findings.append(
                self._finding(
                    "clm-literal",
                    design_rel,
                    literal.line,
                    literal.text,
                    section(literal.line),
                    f"{literal.text} is not in the code this sentence cites ({files})",
                    "state the value the code has, or cite the code that holds it",
                )
            )
        return kept

    def refresh(self, design_file: Path) -> tuple[Resolution, bool]:
        """Write ``design_file``'s ledger afresh; True when its bytes changed."""
        from pipeline.grounding.ledger import write_ledger

        resolution = self.resolve(design_file)
        return resolution, write_ledger(ledger_path(design_file), resolution.ledger)
