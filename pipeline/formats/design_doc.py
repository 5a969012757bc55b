"""design.md and design-mechanics.md as data: stamp, title, sections, anchors, records, footers."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.errors import DuplicateSection
from pipeline.formats.markdown import Field, Structure, parse_fields, parse_structure
from pipeline.formats.textio import TextFile, read_text

STAMP_RE = re.compile(r"^<!-- workflow-sha: [0-9a-f]{40} -->$")
STAMP_LIKE_RE = re.compile(r"<!--\s*workflow-sha\s*:", re.IGNORECASE)
PART_RE = re.compile(r"^Part\b", re.IGNORECASE)
DRECORD_RE = re.compile(r"^D(?P<num>\d+):\s*(?P<title>.+)$")
FOOTER_RE = re.compile(r'^\*\*Mechanics:\*\*\s*(?P<file>\S+)\s+§"(?P<name>[^"]+)"\s*$')
FOOTER_PREFIX = "**Mechanics:**"

OVERVIEW = "Overview"
CORE_CONCEPTS = "Core Concepts"
DECISION_RECORDS = "Decision Records"
ANCHORS = (OVERVIEW, CORE_CONCEPTS)
NON_BODY = frozenset({OVERVIEW, CORE_CONCEPTS, DECISION_RECORDS})


@dataclass(frozen=True, slots=True)
class Section:
    """A ``#`` or ``##`` heading and the lines up to the next one."""

    name: str
    level: int
    start: int
    end: int
    part: str | None

    @property
    def is_part(self) -> bool:
        return self.level == 1 and bool(PART_RE.match(self.name))

    @property
    def is_body(self) -> bool:
        return self.level == 2 and self.name not in NON_BODY


@dataclass(frozen=True, slots=True)
class DRecord:
    number: int
    title: str
    line: int
    fields: dict[str, Field]

    @property
    def source(self) -> int | None:
        value = self.fields.get("Source")
        if value is None:
            return None
        match = re.search(r"\bD(\d+)\b", value.value)
        return int(match.group(1)) if match else None


@dataclass(frozen=True, slots=True)
class Footer:
    line: int
    file: str | None
    target: str | None
    raw: str


@dataclass(slots=True)
class DesignDoc:
    file: TextFile
    structure: Structure
    sections: list[Section] = field(default_factory=list)

    @property
    def path(self) -> Path:
        return self.file.path

    @property
    def lines(self) -> list[str]:
        return self.structure.lines

    @property
    def stamped(self) -> bool:
        return bool(self.lines) and bool(STAMP_RE.match(self.lines[0]))

    @property
    def title(self) -> tuple[int, str] | None:
        """The first non-blank line after the stamp when it is a ``# `` heading."""
        for number, line in enumerate(self.lines, start=1):
            if number == 1 and STAMP_LIKE_RE.search(line):
                continue
            if line.strip():
                for heading in self.structure.headings:
                    if heading.line == number and heading.level == 1:
                        return number, heading.text
                return None
        return None

    def level2(self) -> list[Section]:
        return [s for s in self.sections if s.level == 2]

    def body_sections(self) -> list[Section]:
        return [s for s in self.sections if s.is_body]

    def find(self, name: str) -> Section | None:
        for section in self.sections:
            if section.name == name:
                return section
        return None

    def section_at(self, line: int) -> Section | None:
        found: Section | None = None
        for section in self.sections:
            if section.start <= line <= section.end:
                found = section
        return found

    def section_name_at(self, line: int) -> str | None:
        section = self.section_at(line)
        return section.name if section else None

    def last_text_line(self, section: Section) -> tuple[int, str] | None:
        """The section's last non-blank line after its heading, with its number."""
        for number in range(section.end, section.start, -1):
            line = self.lines[number - 1]
            if line.strip():
                return number, line
        return None

    def text_of(self, section: Section) -> str:
        return "\n".join(self.lines[section.start - 1 : section.end])

    def anchors(self) -> list[Section]:
        return [s for name in ANCHORS if (s := self.find(name)) is not None and s.level == 2]

    def duplicates(self) -> dict[str, list[int]]:
        seen: dict[str, list[int]] = {}
        for section in self.sections:
            if section.level == 2 or section.is_part:
                seen.setdefault(section.name, []).append(section.start)
        return {name: lines for name, lines in seen.items() if len(lines) > 1}

    def require_unique_sections(self) -> None:
        dups = self.duplicates()
        if dups:
            name, lines = next(iter(dups.items()))
            raise DuplicateSection(
                f'two sections are named "{name}" (lines {", ".join(map(str, lines))})',
                file=self.path,
                line=lines[1],
                hint="rename or merge one of them; sections are keyed by their heading text",
            )

    def prose_lines(self, start: int = 1, end: int | None = None) -> list[tuple[int, str]]:
        """(line number, text) pairs outside code between ``start`` and ``end``."""
        stop = len(self.lines) if end is None else end
        code = self.structure.code_lines
        return [(n, self.lines[n - 1]) for n in range(start, stop + 1) if n not in code]

    def d_records(self) -> list[DRecord]:
        container = self.find(DECISION_RECORDS)
        if container is None:
            return []
        heads = [
            h for h in self.structure.headings if h.level == 3 and container.start < h.line <= container.end
        ]
        records: list[DRecord] = []
        for index, head in enumerate(heads):
            match = DRECORD_RE.match(head.text)
            if not match:
                continue
            end = heads[index + 1].line - 1 if index + 1 < len(heads) else container.end
            records.append(
                DRecord(
                    number=int(match.group("num")),
                    title=match.group("title").strip(),
                    line=head.line,
                    fields=parse_fields(self.structure, head.line + 1, end),
                )
            )
        return records

    def footers(self) -> list[Footer]:
        found: list[Footer] = []
        for number, line in self.prose_lines():
            stripped = line.strip()
            if not stripped.startswith(FOOTER_PREFIX):
                continue
            match = FOOTER_RE.match(stripped)
            if match:
                found.append(Footer(number, match.group("file"), match.group("name"), stripped))
            else:
                found.append(Footer(number, None, None, stripped))
        return found


def build_sections(structure: Structure) -> list[Section]:
    heads = [h for h in structure.headings if h.level <= 2]
    total = len(structure.lines)
    sections: list[Section] = []
    part: str | None = None
    for index, head in enumerate(heads):
        end = heads[index + 1].line - 1 if index + 1 < len(heads) else total
        if head.level == 1:
            part = head.text if PART_RE.match(head.text) else None
        sections.append(Section(head.text, head.level, head.line, end, part if head.level == 2 else None))
    return sections


def parse_design(file: TextFile) -> DesignDoc:
    lines = file.lines
    structure = parse_structure(file.text, lines, file.path)
    return DesignDoc(file=file, structure=structure, sections=build_sections(structure))


def load_design(path: Path, what: str = "design") -> DesignDoc:
    return parse_design(read_text(path, what=what))
