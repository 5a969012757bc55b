"""Which sections an edit added, removed and changed: the diff summary names them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipeline.formats.edits import parse, sections_of


@dataclass(frozen=True, slots=True)
class SectionChanges:
    added: list[str]
    removed: list[str]
    changed: list[str]

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)

    def __str__(self) -> str:
        parts = []
        for verb, names in (("added", self.added), ("removed", self.removed), ("changed", self.changed)):
            if names:
                parts.append(f"{verb} " + ", ".join(f'§"{n}"' for n in names))
        return "; ".join(parts) if parts else "no section changed"


def section_texts(text: str, path: Path) -> dict[str, str]:
    doc = parse(text, path)
    return {s.name: "\n".join(doc.lines[s.start : s.end]).strip() for s in sections_of(doc)}


def section_changes(before: str, after: str, path: Path) -> SectionChanges:
    old, new = section_texts(before, path), section_texts(after, path)
    return SectionChanges(
        added=[n for n in new if n not in old],
        removed=[n for n in old if n not in new],
        changed=[n for n in new if n in old and old[n] != new[n]],
    )


def describe_changes(before: str, after: str, path: Path) -> str:
    return str(section_changes(before, after, path))
