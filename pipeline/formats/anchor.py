"""Re-anchoring a review finding to the reviewed file (formats.md §9).

A finding's ``quote`` must be an exact substring of its ``line``. When a model's quote is
not on the line it names (or it names none), the orchestrator moves the finding to the
line that holds the quote, nearest the one it named; a quote that runs over a line break
or differs only in spacing is matched with any whitespace between its words, and keeps
the part on its first line. A quote found nowhere leaves the finding without a line,
flagged as unlocated; it is never dropped. A finding without a quote keeps a line that
exists and quotes it; with neither, it is about the whole document and quotes the title line.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from functools import cached_property
from pathlib import Path

from pipeline.errors import InputError
from pipeline.formats.findings import Finding
from pipeline.formats.markdown import parse_structure
from pipeline.formats.prose import parse_prose
from pipeline.formats.textio import read_text


class Anchors:
    """One reviewed file's lines, with the offsets needed to place a match on its line."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = list(lines)
        self.text = "\n".join(self.lines)
        self.starts: list[int] = []
        offset = 0
        for line in self.lines:
            self.starts.append(offset)
            offset += len(line) + 1

    @cached_property
    def title_line(self) -> int | None:
        """The document's title: its first ``# `` heading, else its first non-blank line of
        prose. A heading is what Markdown reads as one: a ``# comment`` inside a code fence is
        code; front matter, code and HTML are never the title."""
        structure = parse_structure(self.text, self.lines)
        title = next((h.line for h in structure.headings if h.level == 1), None)
        if title is not None:
            return title
        skip = parse_prose(self.text, self.lines).non_prose_lines()
        found = (n for n, line in enumerate(self.lines, start=1) if line.strip() and n not in skip)
        return next(found, None)

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)

    def holds(self, line: int | None, quote: str) -> bool:
        return line is not None and 1 <= line <= len(self.lines) and quote in self.lines[line - 1]

    def find(self, quote: str, near: int | None) -> tuple[int, str] | None:
        """The line holding ``quote`` nearest ``near``, and the exact text quoted there."""
        exact = [i + 1 for i, line in enumerate(self.lines) if quote in line]
        if exact:
            best = min(exact, key=lambda n: (abs(n - near), n)) if near else exact[0]
            return best, quote
        words = quote.split()
        if not words:
            return None
        pattern = re.compile(r"\s+".join(re.escape(w) for w in words))
        matches = list(pattern.finditer(self.text))
        if not matches:
            return None
        if near:
            match = min(matches, key=lambda m: (abs(self.line_of(m.start()) - near), m.start()))
        else:
            match = matches[0]
        line = self.line_of(match.start())
        piece = match.group(0).split("\n", 1)[0].strip()
        return line, piece

    def anchor(self, finding: Finding) -> Finding:
        quote = finding.quote
        if not quote or not quote.strip():
            line = finding.line if finding.line is not None else self.title_line
            if line is not None and 1 <= line <= len(self.lines) and self.lines[line - 1].strip():
                return finding.model_copy(update={"line": line, "quote": self.lines[line - 1].strip()})
            return finding.model_copy(update={"line": None, "unlocated": True})
        if self.holds(finding.line, quote):
            return finding if not finding.unlocated else finding.model_copy(update={"unlocated": False})
        found = self.find(quote, finding.line)
        if found is None:
            return finding.model_copy(update={"line": None, "unlocated": True})
        line, piece = found
        return finding.model_copy(update={"line": line, "quote": piece, "unlocated": False})


def anchor_findings(findings: Iterable[Finding], lines: Sequence[str]) -> list[Finding]:
    """Every finding located in the reviewed file, or flagged unlocated; none dropped."""
    anchors = Anchors(lines)
    return [anchors.anchor(f) for f in findings]


def anchor_in_file(findings: Iterable[Finding], path: Path) -> list[Finding]:
    """:func:`anchor_findings` against the file on disk (a file that cannot be read holds no
    quote: its findings are flagged unlocated)."""
    try:
        lines = read_text(path, what="reviewed file").lines
    except InputError:
        lines = []
    return anchor_findings(findings, lines)


def anchor_across(findings: Iterable[Finding], files: Sequence[tuple[str, Path]]) -> list[Finding]:
    """Each finding located in the first of ``files`` (repository-relative name, path) whose
    text holds its quote, and named with that file; one that none holds stays with the
    first file, unlocated. A reviewer that reads a design and its companion returns findings
    about either without saying which."""
    anchors: list[tuple[str, Anchors]] = []
    for name, path in files:
        try:
            anchors.append((name, Anchors(read_text(path, what="reviewed file").lines)))
        except InputError:
            anchors.append((name, Anchors([])))
    out: list[Finding] = []
    for finding in findings:
        placed = [(name, a.anchor(finding)) for name, a in anchors]
        name, best = next(((n, f) for n, f in placed if not f.unlocated), placed[0])
        out.append(best.model_copy(update={"file": name}))
    return out
