"""Edits to a document's lines, collected against one parse and applied once.

Every fix is computed on the same parsed document and returns edits: replace the text
between two columns of one line, or insert whole lines before a line. They are applied
together at the end, bottom-up, so no fix re-parses the document and the work stays linear
in its size. An edit that overlaps one already taken is dropped (the finding stays, and the
next round sees it again).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Replace:
    line: int
    """1-based."""
    start: int
    """0-based column where the replaced text begins."""
    end: int
    text: str
    """The new text; it may hold newlines (a paragraph split in two)."""


@dataclass(frozen=True, slots=True)
class Insert:
    before: int
    """1-based line the new lines go in front of (one past the last line appends)."""
    lines: tuple[str, ...]


@dataclass(slots=True)
class EditSet:
    lines: list[str]
    replaces: list[Replace] = field(default_factory=list)
    inserts: list[Insert] = field(default_factory=list)
    frozen: frozenset[int] = frozenset()
    """Lines no edit may change (decision records, which quote their source)."""
    _taken: dict[int, list[tuple[int, int]]] = field(default_factory=dict)

    def replace(self, line: int, start: int, end: int, text: str) -> bool:
        """Queue a replacement; False when it overlaps one already queued, leaves the line or
        touches a frozen line."""
        if not 1 <= line <= len(self.lines) or not 0 <= start <= end <= len(self.lines[line - 1]):
            return False
        if line in self.frozen:
            return False
        spans = self._taken.setdefault(line, [])
        if any((start < b and a < end) or (start == end == a) for a, b in spans):
            return False
        if self.lines[line - 1][start:end] == text:
            return False
        spans.append((start, end))
        self.replaces.append(Replace(line, start, end, text))
        return True

    def replace_line(self, line: int, text: str) -> bool:
        return self.replace(line, 0, len(self.lines[line - 1]) if 1 <= line <= len(self.lines) else 0, text)

    def insert(self, before: int, lines: list[str]) -> bool:
        if not 1 <= before <= len(self.lines) + 1 or (before in self.frozen and before - 1 in self.frozen):
            return False
        self.inserts.append(Insert(before, tuple(lines)))
        return True

    def apply(self) -> str:
        lines = list(self.lines)
        by_line: dict[int, list[Replace]] = {}
        for edit in self.replaces:
            by_line.setdefault(edit.line, []).append(edit)
        for number, edits in by_line.items():
            text = lines[number - 1]
            for edit in sorted(edits, key=lambda e: e.start, reverse=True):
                text = text[: edit.start] + edit.text + text[edit.end :]
            lines[number - 1] = text
        for item in sorted(self.inserts, key=lambda i: i.before, reverse=True):
            lines[item.before - 1 : item.before - 1] = list(item.lines)
        return "\n".join(lines)
