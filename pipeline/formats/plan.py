"""implementation-plan.md and plan/track-*.md: Full design refs, Decision Log and Episodes."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import InputError
from pipeline.formats.markdown import Structure, parse_structure, top_blocks
from pipeline.formats.textio import TextFile, read_text

FULL_DESIGN_PREFIX = "**Full design:**"
REF_RE = re.compile(r'(?<![^\s,;"§])(?P<file>[^\s,;"§]++)\s*+§"(?P<name>[^"]+)"')
"""A file and a quoted section name; the file's name is read from its start only (reading it from
every character of a long word was quadratic)."""


@dataclass(frozen=True, slots=True)
class FullDesignRef:
    line: int
    file: str | None
    section: str | None
    raw: str


@dataclass(frozen=True, slots=True)
class Entry:
    """A ``###`` entry under ``## Decision Log`` or ``## Episodes``."""

    title: str
    line: int
    body: str


@dataclass(slots=True)
class PlanFile:
    file: TextFile
    structure: Structure
    refs: list[FullDesignRef]
    decision_log: list[Entry]
    episodes: list[Entry]
    unread_episodes: int | None = None
    """The ``## Episodes`` heading's line when the section holds text but no episode."""

    @property
    def path(self) -> Path:
        return self.file.path


def _span(structure: Structure, section: str) -> tuple[int, int] | None:
    """The lines of the ``## section`` (its heading line, its last line)."""
    heads = structure.headings
    for index, head in enumerate(heads):
        if head.level == 2 and head.text.strip().lower() == section.lower():
            end = len(structure.lines)
            for later in heads[index + 1 :]:
                if later.level <= 2:
                    end = later.line - 1
                    break
            return head.line, end
    return None


def _entries(structure: Structure, section: str) -> list[Entry]:
    """The ``###`` entries of a ``## section``."""
    span = _span(structure, section)
    if span is None:
        return []
    start, end = span
    heads = structure.headings
    subs = [h for h in heads if h.level == 3 and start < h.line <= end]
    entries: list[Entry] = []
    for index, head in enumerate(subs):
        stop = subs[index + 1].line - 1 if index + 1 < len(subs) else end
        body = "\n".join(structure.lines[head.line : stop]).strip()
        entries.append(Entry(head.text, head.line, body))
    return entries


MARKER_RE = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+")
BOLD_LABEL_RE = re.compile(r"^\*\*(?P<label>[^*]+?)\*\*\s*[:.\u2014-]?\s*(?P<rest>.*)$", re.S)
COLON_LABEL_RE = re.compile(r"^(?P<label>[^:`\n]{1,80}?):\s+(?P<rest>.+)$", re.S)
LABEL_WORDS = 10


def _label(text: str, number: int, item: bool) -> tuple[str, str]:
    """An episode's title and body: a leading bold label, else (a list item's) a short
    ``label:`` lead, else ``Episode N`` with the whole text as its body. A paragraph's colon
    ends a sentence's lead-in more often than a label, so it names no title."""
    for pattern in (BOLD_LABEL_RE, COLON_LABEL_RE) if item else (BOLD_LABEL_RE,):
        match = pattern.match(text)
        if match and len(match.group("label").split()) <= LABEL_WORDS and match.group("rest").strip():
            return match.group("label").strip().rstrip(":."), match.group("rest").strip()
    return f"Episode {number}", text


def _episodes(structure: Structure) -> tuple[list[Entry], int | None]:
    """The episodes under ``## Episodes`` in any reasonable shape: ``###`` entries; else each
    top-level list item; else each paragraph. Also the heading's line when the section holds
    text (anything but blank lines and HTML comments) that yields no episode."""
    span = _span(structure, "Episodes")
    if span is None:
        return [], None
    headed = _entries(structure, "Episodes")
    if headed:
        return headed, None
    start, end = span
    lines = structure.lines[start:end]
    blocks = top_blocks(lines)
    items = [b for b in blocks if b.kind == "item"]
    paragraphs = [
        b for b in blocks if b.kind == "paragraph" and not lines[b.start - 1].lstrip().startswith("|")
    ]
    chosen = items or paragraphs
    entries: list[Entry] = []
    for number, block in enumerate(chosen, start=1):
        raw = lines[block.start - 1 : block.end]
        raw[0] = MARKER_RE.sub("", raw[0], count=1)
        title, body = _label("\n".join(line.strip() for line in raw).strip(), number, bool(items))
        entries.append(Entry(title, start + block.start, body))
    text = any(b.kind != "html" for b in blocks)
    return entries, start if text and not entries else None


def check_episodes(plan: PlanFile) -> None:
    """A track whose ``## Episodes`` holds text but no episode is bad input, never read as
    "no track episodes"."""
    if plan.unread_episodes is not None:
        raise InputError(
            "## Episodes holds text but no episode (no ### entry, list item or paragraph)",
            file=plan.path,
            line=plan.unread_episodes,
            hint="write each episode as a ### heading with its text, a list item, or a paragraph",
        )


def _refs(structure: Structure) -> list[FullDesignRef]:
    refs: list[FullDesignRef] = []
    for number, line in enumerate(structure.lines, start=1):
        if number in structure.code_lines:
            continue
        at = line.find(FULL_DESIGN_PREFIX)
        if at < 0:
            continue
        rest = line[at + len(FULL_DESIGN_PREFIX) :]
        matches = list(REF_RE.finditer(rest))
        if not matches:
            refs.append(FullDesignRef(number, None, None, line.strip()))
        for match in matches:
            refs.append(FullDesignRef(number, match.group("file"), match.group("name"), match.group(0)))
    return refs


def parse_plan_file(file: TextFile) -> PlanFile:
    structure = parse_structure(file.text, file.lines, file.path)
    episodes, unread = _episodes(structure)
    return PlanFile(file, structure, _refs(structure), _entries(structure, "Decision Log"), episodes, unread)


def load_plan_file(path: Path) -> PlanFile:
    return parse_plan_file(read_text(path, what="plan file"))


def _track_key(path: Path) -> tuple[int, str]:
    match = re.search(r"(\d+)", path.stem)
    return (int(match.group(1)) if match else 1 << 30, path.name)


def track_paths(plan_dir: Path) -> list[Path]:
    if not plan_dir.exists():
        raise InputError("plan directory not found", file=plan_dir, hint="check --plan-dir, or omit it")
    if not plan_dir.is_dir():
        raise InputError("--plan-dir is not a directory", file=plan_dir, hint="pass the plan/ directory")
    return sorted(plan_dir.glob("track-*.md"), key=_track_key)


def load_tracks(plan_dir: Path) -> list[PlanFile]:
    return [load_plan_file(p) for p in track_paths(plan_dir)]
