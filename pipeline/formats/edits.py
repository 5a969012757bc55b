"""Exact document operations for the interactive kinds: replace a unique passage, and add,
remove, rename or move a section, or replace its body.

Every operation works on text and returns new text; nothing here writes a file. A malformed
edit (old text missing or not unique, an unknown section, a rename onto an existing name)
raises :class:`MalformedEdit` naming the file and, where there is one, the line.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import MalformedEdit
from pipeline.formats.design_doc import DECISION_RECORDS, OVERVIEW, DesignDoc, Section, parse_design
from pipeline.formats.textio import TextFile, split_lines


def parse(text: str, path: Path) -> DesignDoc:
    return parse_design(TextFile(path=path, text=text, newline="\n", bom=False))


def join(lines: list[str]) -> str:
    """Lines back to text: one final newline, no trailing blank lines."""
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return "\n".join(lines) + "\n" if lines else ""


def sections_of(doc: DesignDoc) -> list[Section]:
    """The sections an edit may name: every ``##`` section and every ``# Part`` heading."""
    return [s for s in doc.sections if s.level == 2 or s.is_part]


def find_section(doc: DesignDoc, name: str) -> Section | None:
    return next((s for s in sections_of(doc) if s.name == name.strip()), None)


def require_section(doc: DesignDoc, name: str, flag: str = "--section") -> Section:
    doc.require_unique_sections()
    section = find_section(doc, name)
    if section is not None:
        return section
    names = [s.name for s in sections_of(doc)]
    close = difflib.get_close_matches(name, names, n=1)
    raise MalformedEdit(
        f'{flag} "{name}" names no section of {doc.path.name}',
        file=doc.path,
        hint=(f'did you mean "{close[0]}"? ' if close else "")
        + "sections: "
        + ", ".join(f'"{n}"' for n in names),
    )


def section_body(text: str, name: str, path: Path) -> list[str]:
    """The body lines of a section given in a --content file: a leading ``## name`` heading is
    dropped; any other ``##`` heading makes the content more than one section."""
    lines = split_lines(text)
    while lines and not lines[0].strip():
        lines = lines[1:]
    if lines and lines[0].startswith("## "):
        if lines[0][3:].strip() != name.strip():
            raise MalformedEdit(
                f'the content starts with the heading "{lines[0].strip()}", not "## {name}"',
                file=path,
                line=1,
                hint="drop the heading (the section name comes from --section) or make it match",
            )
        lines = lines[1:]
    doc = parse(join(lines) or "\n", path)
    for heading in doc.structure.headings:
        if heading.level <= 2:
            raise MalformedEdit(
                f'the content holds a heading "{"#" * heading.level} {heading.text}": one section only',
                file=path,
                line=heading.line,
                hint="use ### sub-headings inside a section, or add each section on its own",
            )
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    while lines and not lines[0].strip():
        lines = lines[1:]
    if not lines:
        raise MalformedEdit("the content is empty", file=path, hint="give the section's body text")
    return lines


@dataclass(frozen=True, slots=True)
class Replaced:
    text: str
    section: str | None
    line: int


def _occurrences(text: str, old: str, lo: int = 0, hi: int | None = None) -> list[int]:
    """Offsets of ``old`` that start and end within ``text[lo:hi]``."""
    stop = len(text) if hi is None else hi
    found, start = [], lo
    while (at := text.find(old, start)) >= 0 and at + len(old) <= stop:
        found.append(at)
        start = at + 1
    return found


def replace_unique(
    text: str, old: str, new: str, path: Path, section: str | None = None, flag: str = "--old"
) -> Replaced:
    """Replace the one occurrence of ``old`` (within ``section`` when one is named); refuse a
    missing or repeated one."""
    if not old:
        raise MalformedEdit(f"{flag} is empty", hint="quote the exact text to replace")
    if old == new:
        raise MalformedEdit(
            "--old and --new are the same text: nothing would change",
            hint="give --new the text you want instead",
        )
    doc = parse(text, path)
    everywhere = _occurrences(text, old)
    if not everywhere:
        first = split_lines(old)[0] if split_lines(old) else old
        close = difflib.get_close_matches(
            first.strip(), [line.strip() for line in doc.lines], n=1, cutoff=0.6
        )
        raise MalformedEdit(
            f"{flag} text not found in {path.name}",
            file=path,
            hint=(f'the closest line is "{close[0]}"; ' if close else "")
            + "quote the text exactly as it stands, whitespace included",
        )
    found, where_text, name = everywhere, path.name, None
    if section is not None:
        target = require_section(doc, section)
        offsets = [0]
        for line_text in doc.lines:
            offsets.append(offsets[-1] + len(line_text) + 1)
        found = _occurrences(text, old, offsets[target.start - 1], offsets[target.end])
        where_text, name = f'§"{target.name}"', target.name
        if not found:
            line = text.count("\n", 0, everywhere[0]) + 1
            raise MalformedEdit(
                f'{flag} text is on line {line}, outside §"{target.name}" '
                f"(lines {target.start}-{target.end})",
                file=path,
                line=line,
                hint="name the section that holds the text, or leave --section out",
            )
    lines = [text.count("\n", 0, at) + 1 for at in found]
    if len(found) > 1:
        raise MalformedEdit(
            f"{flag} text occurs {len(found)} times in {where_text} (lines {', '.join(map(str, lines))})",
            file=path,
            line=lines[0],
            hint="quote more of the surrounding text so that it occurs exactly once",
        )
    at, line = found[0], lines[0]
    if name is None:
        where = doc.section_at(line)
        name = where.name if where is not None and (where.level == 2 or where.is_part) else None
    return Replaced(text[:at] + new + text[at + len(old) :], name, line)


def _block(doc: DesignDoc, section: Section) -> tuple[int, int]:
    """0-based [start, stop) of a section's lines: its heading up to the next heading."""
    return section.start - 1, section.end


def replace_section_body(text: str, path: Path, name: str, body: list[str]) -> str:
    doc = parse(text, path)
    section = require_section(doc, name)
    if section.is_part:
        raise MalformedEdit(
            f'"{name}" is a Part heading, not a section',
            file=path,
            line=section.start,
            hint="name one of the ## sections under it (designloop check lists the sections)",
        )
    lines = doc.lines
    start, stop = _block(doc, section)
    return join([*lines[: start + 1], "", *body, "", *lines[stop:]])


def _insert_at(doc: DesignDoc, after: str | None) -> int:
    """0-based line index a new section goes to: after ``after``'s block, else before
    ## Decision Records, else at the end."""
    if after is not None:
        return _block(doc, require_section(doc, after, "--after"))[1]
    records = find_section(doc, DECISION_RECORDS)
    return records.start - 1 if records is not None else len(doc.lines)


def _splice(lines: list[str], at: int, block: list[str]) -> list[str]:
    head, tail = lines[:at], lines[at:]
    if head and head[-1].strip():
        head = [*head, ""]
    while block and not block[-1].strip():
        block = block[:-1]
    return [*head, *block, "", *tail]


def add_section(text: str, path: Path, name: str, body: list[str], after: str | None) -> str:
    doc = parse(text, path)
    doc.require_unique_sections()
    name = name.strip()
    _check_name(name)
    existing = find_section(doc, name)
    if existing is not None:
        raise MalformedEdit(
            f'§"{name}" already exists in {path.name}',
            file=path,
            line=existing.start,
            hint="pick a new name, or use content-edit to change the existing section",
        )
    return join(_splice(doc.lines, _insert_at(doc, after), [f"## {name}", "", *body]))


def remove_section(text: str, path: Path, name: str) -> str:
    doc = parse(text, path)
    section = require_section(doc, name)
    if section.name == OVERVIEW:
        raise MalformedEdit(
            "## Overview may not be removed: every design has one",
            file=path,
            line=section.start,
            hint="rewrite it with content-edit instead",
        )
    start, stop = _block(doc, section)
    lines = doc.lines
    head, tail = lines[:start], lines[stop:]
    if head and tail and not head[-1].strip() and not tail[0].strip():
        tail = tail[1:]
    return join([*head, *tail])


def _check_name(name: str) -> None:
    if not name or "\n" in name or '"' in name:
        raise MalformedEdit(
            f"{name!r} is not a usable section name",
            hint='a section name is one line of text without double quotes (footers quote it: §"name")',
        )


def rename_section(text: str, path: Path, old: str, new: str) -> str:
    doc = parse(text, path)
    section = require_section(doc, old)
    new = new.strip()
    _check_name(new)
    if new == section.name:
        raise MalformedEdit(
            "--to is the section's current name: nothing would change", hint="give --to the new name"
        )
    existing = find_section(doc, new)
    if existing is not None:
        raise MalformedEdit(
            f'cannot rename §"{section.name}" to §"{new}": {path.name} already has a section of that name',
            file=path,
            line=existing.start,
            hint="pick a name no section has, or remove or rename the other section first",
        )
    if section.name == OVERVIEW:
        raise MalformedEdit(
            "## Overview may not be renamed: every design has one",
            file=path,
            line=section.start,
            hint="rename another section, or edit the Overview's text with --kind content-edit",
        )
    lines = list(doc.lines)
    lines[section.start - 1] = "#" * section.level + " " + new
    return join(lines)


def move_section(text: str, path: Path, name: str, after: str) -> str:
    doc = parse(text, path)
    section = require_section(doc, name)
    anchor = require_section(doc, after, "--after")
    if anchor.name == section.name:
        raise MalformedEdit("--after names the section being moved", hint="name the section it should follow")
    if section.is_part:
        raise MalformedEdit(
            f'"{name}" is a Part heading; move its sections one by one',
            file=path,
            hint="run one section-move per ## section under it",
        )
    start, stop = _block(doc, section)
    block = doc.lines[start:stop]
    rest = join([*doc.lines[:start], *doc.lines[stop:]])
    moved = parse(rest, path)
    at = _insert_at(moved, after)
    result = join(_splice(moved.lines, at, block))
    if result == join(doc.lines):
        raise MalformedEdit(
            f'§"{name}" already follows §"{after}": nothing would change',
            hint="name with --after the section it should follow instead",
        )
    return result
