"""Grounded claims: each code mention of a design file resolved through PSI to a code span.

``Grounding`` resolves a design file's mentions (grounding.mentions) against the code root with
PSI's index: a symbol to its definition, a path to the file or directory, a location to the
cited lines. What resolves becomes a ledger entry (grounding.ledger) with the span's
fingerprint (grounding.spans); what does not is a finding when the mention is shaped so that
only code looks like it (``clm-unresolved``), and a value a sentence quotes that none of the
spans it cites holds is one too (``clm-literal``). No model takes part: the ledger never
depends on what a model chose to report. What the claims resolve to, and what they never
resolve to, is grounding.lookup.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.formats.design_doc import parse_design
from pipeline.formats.findings import MECHANICAL, Finding, Severity
from pipeline.formats.textio import read_text
from pipeline.grounding.ledger import ClaimEntry, Ledger, ledger_path
from pipeline.grounding.lookup import CodeFiles, Lookup, claims_private, holds
from pipeline.grounding.mentions import LOCATION_RE, LiteralValue, Mention, claim_rules, extract_claims
from pipeline.grounding.psi import CodeIndex, Symbol, build_index
from pipeline.grounding.spans import (
    Span,
    file_fingerprint,
    lines_fingerprint,
    span_fingerprint,
    symbol_spans,
)


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix() if path != root else "."


@dataclass(slots=True)
class Resolution:
    """One design file's claims as resolved now."""

    ledger: Ledger
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Files skipped (not UTF-8, too large): the claims resting on them were not resolved."""


class Grounding:
    """Resolves design files' claims under one code root; the index is built on first need."""

    def __init__(self, repo_root: Path, code_root: Path, files: CodeFiles | None = None) -> None:
        self.repo_root = repo_root.resolve()
        self.code_root = code_root.resolve()
        self.files = files or CodeFiles(self.repo_root)
        self._index: CodeIndex | None = None
        self._lookup: Lookup | None = None

    @property
    def index(self) -> CodeIndex:
        if self._index is None:
            self._index = build_index(self.repo_root, self.code_root, claims_private(self.repo_root))
        return self._index

    @property
    def lookup(self) -> Lookup:
        if self._lookup is None:
            self._lookup = Lookup(self.index)
        return self._lookup

    def resolve(self, design_file: Path) -> Resolution:
        text = read_text(design_file, what="design").text
        doc = parse_design(read_text(design_file, what="design"))
        claims = extract_claims(text, doc.lines)
        design_rel = _rel(self.repo_root, design_file.resolve())
        out = Resolution(Ledger(design=design_file.name, code_root=_rel(self.repo_root, self.code_root)))
        by_sentence: dict[int, list[Mention]] = {}
        for mention in claims.mentions:
            by_sentence.setdefault(mention.sentence, []).append(mention)
        for sentence, mentions in by_sentence.items():
            entries, texts = self._sentence(mentions, design_rel, doc.section_name_at, out)
            literals = claims.literals.get(sentence, ())
            if literals and texts:
                entries = self._literals(entries, texts, literals, design_rel, doc.section_name_at, out)
            out.ledger.claims.extend(entries)
        if claims.mentions and not self.index.sources:
            out.notes.append(f"no code PSI can read under {out.ledger.code_root}: the names were not checked")
        out.ledger.claims.sort(key=lambda e: (e.line, e.mention, e.file, e.first))
        out.findings.sort(key=lambda f: (f.line or 0, f.rule, f.quote or ""))
        return out

    def _sentence(
        self, mentions: list[Mention], design_rel: str, section: Callable[[int], str | None], out: Resolution
    ) -> tuple[list[ClaimEntry], list[str]]:
        """The sentence's entries and the text of every span it cites (for its literals)."""
        entries: list[ClaimEntry] = []
        texts: list[str] = []
        located: set[str] = set()
        for mention in (m for m in mentions if m.kind == "location"):
            entry, text = self._location(mention, mentions, design_rel, section, out)
            if entry is not None:
                entries.append(entry)
                texts.append(text)
                located.update(n for n in (entry.symbol or "").split(", ") if n)
        for mention in (m for m in mentions if m.kind != "location"):
            if mention.kind == "symbol" and mention.text.removesuffix("()") in located:
                continue
            found = self._path(mention) if mention.kind == "path" else self._symbol(mention, mentions, out)
            if found is None and mention.kind == "symbol" and mention.strong:
                found = self._path(mention)  # a file's name: a script, a template (`_adr_help`)
            if found is not None:
                entries.append(found[0])
                texts.append(found[1])
            elif mention.strong and self.index.sources and self._nowhere(mention) and self._ours(mention):
                out.findings.append(self._unresolved(mention, design_rel, section))
        return entries, texts

    def _finding(
        self, rule: str, design_rel: str, line: int, quote: str, section: str | None, message: str, fix: str
    ) -> Finding:
        severity: Severity = "should-fix" if claim_rules().rules[rule][0] == "should-fix" else "suggestion"
        return Finding(
            severity=severity,
            rule=rule,
            file=design_rel,
            line=line,
            quote=quote,
            section=section,
            message=message,
            suggested_fix=fix,
            role=MECHANICAL,
        )

    def _unresolved(self, mention: Mention, design_rel: str, section: Callable[[int], str | None]) -> Finding:
        what = {"symbol": "no definition, and the name appears nowhere", "path": "no such file or directory"}
        return self._finding(
            "clm-unresolved",
            design_rel,
            mention.line,
            mention.text,
            section(mention.line),
            f"`{mention.text}` resolves to nothing under the code root "
            f"({what.get(mention.kind, 'no such file')} under {_rel(self.repo_root, self.code_root)})",
            "name the symbol or path the code actually has, or drop the claim",
        )

    def _nowhere(self, mention: Mention) -> bool:
        """Whether an unresolved mention names nothing of this code: a plain name appears
        nowhere in it; a dotted one's head appears nowhere (``Buckett.take``), or is defined
        here and its member appears nowhere (``Bucket.tkae``). A library's name the code uses
        (``json.loads``) is neither a claim nor a finding."""
        if mention.kind != "symbol":
            return True
        parts = mention.text.removesuffix("()").split(".")

        named = self.lookup.named
        if len(parts) == 1:
            return not named(parts[0])
        head = parts[0]
        if not named(head):
            return True
        return bool(self.lookup.definitions(head)) and not named(parts[-1])

    def _ours(self, mention: Mention) -> bool:
        """Whether an unresolved mention claims something of this repository: not a name the
        sentence gives as an example (``for example `0012-use-postgresql.md```), nor a path
        whose first directory the repository does not have (``templates/template.md`` in the
        user's records directory)."""
        before = mention.quote[: max(0, mention.quote.find(mention.text))].lower()
        if any(re.search(rf"(?<!\w){re.escape(word)}(?!\w)", before) for word in claim_rules().examples):
            return False
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
        self,
        mention: Mention,
        mentions: list[Mention],
        design_rel: str,
        section: Callable[[int], str | None],
        out: Resolution,
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
        if first < 1 or last < first or last > len(code.lines):
            out.findings.append(
                self._finding(
                    "clm-unresolved",
                    design_rel,
                    mention.line,
                    mention.text,
                    section(mention.line),
                    f"`{mention.text}` names lines {first}-{last} of {code.rel}, "
                    f"which has {len(code.lines)} lines",
                    "cite the lines the code has now",
                )
            )
            return None, ""
        cited = "\n".join(code.lines[first - 1 : last])
        names = [
            n.text.removesuffix("()")
            for n in mentions
            if n.kind == "symbol"
            and re.search(
                rf"(?<![\w$]){re.escape(n.text.removesuffix('()').rsplit('.', 1)[-1])}(?![\w$])", cited
            )
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

    def _pick(self, symbols: list[Symbol], query: str, cited: set[str]) -> Symbol:
        """The definition a mention means: the exact qualified name, a parsed definition over a
        text match, a file the sentence cites, then the first by path and line."""
        return min(
            symbols,
            key=lambda s: (s.qualified != query, not s.exact, s.file not in cited, s.file, s.line),
        )

    def _symbol(
        self, mention: Mention, mentions: list[Mention], out: Resolution
    ) -> tuple[ClaimEntry, str] | None:
        query = mention.text.removesuffix("()")
        symbols = [s for s in self.lookup.definitions(query) if s.file]
        if not mention.strong or mention.fenced:
            # A plain word or an example's name: a parsed definition, or the one text match.
            parsed = [s for s in symbols if s.exact]
            symbols = parsed or (symbols if len(symbols) == 1 and not mention.fenced else [])
        if not symbols:
            return None
        cited = {
            c
            for n in mentions
            if n.kind in ("path", "location")
            for c in self._candidates(n.text.split(":")[0])
        }
        chosen = self._pick(symbols, query, cited)
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
            method="tree-sitter" if code.tree is not None else "text",
            fingerprint=span_fingerprint(code, span),
        )
        return entry, "\n".join(code.lines[span.first - 1 : span.last])

    def _literals(
        self,
        entries: list[ClaimEntry],
        texts: list[str],
        literals: tuple[LiteralValue, ...],
        design_rel: str,
        section: Callable[[int], str | None],
        out: Resolution,
    ) -> list[ClaimEntry]:
        """Each literal of the sentence must be in a span the sentence cites; each entry keeps
        the literals its own span holds."""
        kept: list[ClaimEntry] = []
        held = [[lit.value for lit in literals if holds(text, lit)] for text in texts]
        for entry, values in zip(entries, held, strict=True):
            kept.append(entry.model_copy(update={"literals": sorted(set(values))}) if values else entry)
        for literal in literals:
            if any(literal.value in values for values in held):
                continue
            files = ", ".join(sorted({e.file for e in entries}))
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
