"""implementation-plan.md and plan/track-*.md: Full design refs, Decision Log and Episodes."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import InputError
from pipeline.formats.markdown import Structure, parse_structure
from pipeline.formats.textio import TextFile, read_text

FULL_DESIGN_PREFIX = "**Full design:**"
REF_RE = re.compile(r'(?P<file>[^\s,;"§]+)\s*§"(?P<name>[^"]+)"')


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

    @property
    def path(self) -> Path:
        return self.file.path


def _entries(structure: Structure, section: str) -> list[Entry]:
    heads = structure.headings
    start = end = None
    for index, head in enumerate(heads):
        if head.level == 2 and head.text.strip().lower() == section.lower():
            start = head.line
            end = len(structure.lines)
            for later in heads[index + 1 :]:
                if later.level <= 2:
                    end = later.line - 1
                    break
            break
    if start is None or end is None:
        return []
    subs = [h for h in heads if h.level == 3 and start < h.line <= end]
    entries: list[Entry] = []
    for index, head in enumerate(subs):
        stop = subs[index + 1].line - 1 if index + 1 < len(subs) else end
        body = "\n".join(structure.lines[head.line : stop]).strip()
        entries.append(Entry(head.text, head.line, body))
    return entries


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
    structure = parse_structure(file.text, file.lines)
    return PlanFile(
        file,
        structure,
        _refs(structure),
        _entries(structure, "Decision Log"),
        _entries(structure, "Episodes"),
    )


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
