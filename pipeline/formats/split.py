"""The length-trigger split: one design.md into design.md plus design-mechanics.md.

Per body section, design.md keeps the TL;DR, the mechanism overview (the first paragraph
after the TL;DR), the edge cases (a ``###`` sub-section or a list introduced as edge cases,
gotchas, pitfalls or limitations), the diagrams and the **Mechanics:** footer. Everything
long-form moves to the same-named section of design-mechanics.md: further paragraphs,
worked examples, tables, code, other sub-sections, and any sentence citing ``file:line``.
The mechanics section opens with the same overview paragraph (so it reads on its own) and
mirrors the edge cases. Overview, Core Concepts, Part headings and Decision Records stay in
design.md only. Section names match byte-for-byte.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pipeline.formats.design_doc import FOOTER_PREFIX, DesignDoc, Section
from pipeline.formats.edits import join, parse
from pipeline.formats.refs import footer_line

MECHANICS_NAME = "design-mechanics.md"
TLDR = "**TL;DR:**"
DIAGRAM_INFO = frozenset({"mermaid", "dot", "graphviz", "plantuml", "ascii", "diagram", "svgbob", "ditaa"})
BOX_RE = re.compile(r"[─│┌┐└┘├┤┬┴┼═║╔╗╚╝▶◀▲▼]|-->|==>|<--")
EDGE_RE = re.compile(r"\b(?:edge cases?|gotchas?|pitfalls?|limitations?|caveats?)\b", re.IGNORECASE)
CITATION_RE = re.compile(r"(?<![\w./-])[\w./-]+\.[A-Za-z]{1,5}:\d+(?:-\d+)?\b")
"""A file:line citation, read from the start of its path only (from every dot of a long run of
dots it was quadratic)."""
SENTENCE_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*\[(])")


@dataclass(slots=True)
class Block:
    kind: str
    """tldr, paragraph, list, code, diagram, table, subsection, footer"""
    lines: list[str]


def _blocks(doc: DesignDoc, section: Section) -> list[Block]:
    """A body section's body (after its heading) as blocks; a ### sub-section is one block."""
    lines = doc.lines
    code = doc.structure.code_lines
    blocks: list[Block] = []
    current: list[str] = []
    current_kind = ""

    def close() -> None:
        nonlocal current, current_kind
        if current:
            blocks.append(Block(current_kind, current))
        current, current_kind = [], ""

    for number in range(section.start + 1, section.end + 1):
        line = lines[number - 1]
        stripped = line.strip()
        if number not in code and stripped.startswith(FOOTER_PREFIX):
            close()
            blocks.append(Block("footer", [line]))
            continue
        if number not in code and line.startswith("### "):
            close()
            current_kind = "subsection"
        if current_kind == "subsection":
            current.append(line)
            continue
        if number in code:
            if current_kind != "code":
                close()
                current_kind = "code"
            current.append(line)
            continue
        if current_kind == "code" or not stripped:
            close()
            if not stripped:
                continue
        if not current_kind:
            current_kind = _kind_of(line)
        current.append(line)
    close()
    for block in blocks:
        if block.kind == "code" and _is_diagram(block.lines):
            block.kind = "diagram"
        while block.kind == "subsection" and block.lines and not block.lines[-1].strip():
            block.lines.pop()
    return blocks


def _kind_of(line: str) -> str:
    stripped = line.strip()
    if stripped.startswith(TLDR):
        return "tldr"
    if stripped.startswith("|"):
        return "table"
    if re.match(r"^\s*(?:[-*+]|\d+[.)])\s", line):
        return "list"
    return "paragraph"


def _is_diagram(lines: list[str]) -> bool:
    info = lines[0].strip().lstrip("`~").strip().split(" ")[0].lower() if lines else ""
    return info in DIAGRAM_INFO or sum(1 for line in lines if BOX_RE.search(line)) >= 2


def _without_citations(block: Block) -> tuple[list[str], list[str]]:
    """A kept paragraph's sentences without ``file:line`` citations, and the cited sentences."""
    text = " ".join(line.strip() for line in block.lines)
    if not CITATION_RE.search(text):
        return block.lines, []
    kept: list[str] = []
    moved: list[str] = []
    for sentence in SENTENCE_RE.split(text):
        (moved if CITATION_RE.search(sentence) else kept).append(sentence)
    return ([" ".join(kept)] if kept else []), ([" ".join(moved)] if moved else [])


@dataclass(frozen=True, slots=True)
class SectionSplit:
    name: str
    design: list[str]
    """The body lines design.md keeps (the footer excluded)."""
    mechanics: list[str]
    """The body lines of the same-named mechanics section."""
    moved: int
    """Lines that left design.md."""


def _edge_label(block: Block) -> bool:
    text = " ".join(block.lines).rstrip()
    return block.kind == "paragraph" and bool(EDGE_RE.search(text)) and text.endswith(":")


def split_section(doc: DesignDoc, section: Section) -> SectionSplit:
    design: list[list[str]] = []
    mechanics: list[list[str]] = []
    moved = 0
    overview_seen = False
    blocks = _blocks(doc, section)
    for index, block in enumerate(blocks):
        following = blocks[index + 1] if index + 1 < len(blocks) else None
        previous = blocks[index - 1] if index > 0 else None
        if block.kind == "tldr" or block.kind == "diagram":
            design.append(block.lines)
        elif block.kind == "paragraph" and not overview_seen:
            overview_seen = True
            kept, _cited = _without_citations(block)
            if kept:
                design.append(kept)
            mechanics.append(block.lines)
            moved += len(block.lines) - len(kept)
        elif (
            (block.kind == "subsection" and EDGE_RE.search(block.lines[0]))
            or (_edge_label(block) and following is not None and following.kind == "list")
            or (block.kind == "list" and previous is not None and _edge_label(previous))
        ):
            design.append(block.lines)
            mechanics.append(block.lines)
        elif block.kind != "footer":
            mechanics.append(block.lines)
            moved += len(block.lines)
    return SectionSplit(section.name, _flatten(design), _flatten(mechanics), moved)


def _flatten(blocks: list[list[str]]) -> list[str]:
    out: list[str] = []
    for block in blocks:
        if out:
            out.append("")
        out += block
    return out


def mechanics_title(doc: DesignDoc) -> str:
    title = doc.title
    return f"# {title[1]}: mechanics" if title else "# Mechanics"


@dataclass(frozen=True, slots=True)
class Split:
    design: str
    mechanics: str
    """Without a stamp: the caller stamps the new file."""
    sections: list[SectionSplit]

    @property
    def moved(self) -> int:
        return sum(s.moved for s in self.sections)


def split_design(text: str, path: Path, mechanics_name: str = MECHANICS_NAME) -> Split:
    """The split of a whole design (see the module docstring); footers name ``mechanics_name``."""
    doc = parse(text, path)
    doc.require_unique_sections()
    lines = list(doc.lines)
    splits = [split_section(doc, s) for s in doc.body_sections()]
    for section, part in sorted(zip(doc.body_sections(), splits, strict=True), key=lambda p: -p[0].start):
        block = [
            lines[section.start - 1],
            "",
            *part.design,
            "",
            footer_line(mechanics_name, section.name),
            "",
        ]
        lines[section.start - 1 : section.end] = block
    mechanics = [mechanics_title(doc), ""]
    for part in splits:
        mechanics += [f"## {part.name}", "", *part.mechanics, ""]
    return Split(join(lines), join(mechanics), splits)


def skeleton(text: str, path: Path) -> str:
    """A companion with a title and one empty section per body section of the design."""
    doc = parse(text, path)
    out = [mechanics_title(doc), ""]
    for section in doc.body_sections():
        out += [f"## {section.name}", ""]
    return join(out)


def with_footers(text: str, path: Path, mechanics_name: str = MECHANICS_NAME) -> str:
    """Every body section ends with its **Mechanics:** footer naming ``mechanics_name``."""
    doc = parse(text, path)
    lines = list(doc.lines)
    for section in sorted(doc.body_sections(), key=lambda s: -s.start):
        last = doc.last_text_line(section)
        wanted = footer_line(mechanics_name, section.name)
        if last is not None and last[1].strip().startswith(FOOTER_PREFIX):
            lines[last[0] - 1] = wanted
            continue
        at = last[0] if last else section.start
        lines[at:at] = ["", wanted]
    return join(lines)
