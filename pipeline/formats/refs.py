"""Reference propagation in the same mutation: **Full design** references in
implementation-plan.md and plan/track-*.md, **Mechanics:** footers, and in-text §"name"
references in the design, renamed or removed with the section they name."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pipeline.formats.design_doc import FOOTER_PREFIX
from pipeline.formats.edits import join, parse
from pipeline.formats.markdown import parse_structure
from pipeline.formats.plan import FULL_DESIGN_PREFIX, REF_RE
from pipeline.formats.textio import split_lines

DESIGN_FILES = frozenset({"design.md", "design-mechanics.md"})
SEPARATOR_RE = re.compile(r"^\s*[,;]\s*")


@dataclass(frozen=True, slots=True)
class RefChange:
    """What propagation did to one file."""

    renamed: int = 0
    removed: int = 0
    repointed: int = 0

    @property
    def total(self) -> int:
        return self.renamed + self.removed + self.repointed


def _targets(file: str, design_only: bool) -> bool:
    name = Path(file).name
    return name == "design.md" if design_only else name in DESIGN_FILES


def _code_lines(text: str) -> frozenset[int]:
    return parse_structure(text, split_lines(text)).code_lines


def _rewrite(rest: str, old: str, new: str | None, design_only: bool) -> tuple[str, int, int]:
    """The text after a **Full design:** prefix with references to §"old" renamed or dropped.

    Returns the text, the references renamed and the references dropped. A dropped reference
    takes one separator with it: the one before it, or for the first reference the one after.
    """
    parts: list[tuple[str, str]] = []  # ("gap" | "ref" | "drop", text)
    pos = renamed = dropped = 0
    for match in REF_RE.finditer(rest):
        parts.append(("gap", rest[pos : match.start()]))
        pos = match.end()
        if match.group("name") != old or not _targets(match.group("file"), design_only):
            parts.append(("ref", match.group(0)))
        elif new is not None:
            parts.append(("ref", f'{match.group("file")} §"{new}"'))
            renamed += 1
        else:
            parts.append(("drop", match.group(0)))
            dropped += 1
    parts.append(("gap", rest[pos:]))
    for index, (kind, _) in enumerate(parts):
        if kind != "drop":
            continue
        before, after = parts[index - 1], parts[index + 1]
        kept_before = any(k == "ref" for k, _ in parts[:index])
        if kept_before and SEPARATOR_RE.fullmatch(before[1] + " ") is not None:
            parts[index - 1] = ("gap", "")
        else:
            sep = SEPARATOR_RE.match(after[1])
            if sep:
                glue = "" if before[1].endswith(" ") or not before[1] else " "
                parts[index + 1] = ("gap", glue + after[1][sep.end() :])
    if not any(k == "ref" for k, _ in parts):
        return "", renamed, dropped
    return "".join(text for kind, text in parts if kind != "drop").rstrip(), renamed, dropped


def propagate_plan(
    text: str, old: str, new: str | None, *, repoint: bool = False, design_only: bool = False
) -> tuple[str, RefChange]:
    """Rename (``new``), repoint (``new`` with ``repoint``) or remove (``new`` None) every
    **Full design** reference to §"old" in one plan or track file.

    A **Full design:** line left with no reference is removed (or, when other text stands
    before the prefix, cut back to that text). ``design_only`` leaves design-mechanics.md
    references alone (a rename that did not reach the companion).
    """
    lines = split_lines(text)
    code = _code_lines(text)
    out: list[str] = []
    renamed = dropped = 0
    for number, line in enumerate(lines, start=1):
        at = line.find(FULL_DESIGN_PREFIX)
        if at < 0 or number in code:
            out.append(line)
            continue
        rest = line[at + len(FULL_DESIGN_PREFIX) :]
        rewritten, r, d = _rewrite(rest, old, new, design_only)
        renamed, dropped = renamed + r, dropped + d
        if not r and not d:
            out.append(line)
        elif rewritten.strip():
            out.append(line[: at + len(FULL_DESIGN_PREFIX)] + rewritten)
        elif line[:at].strip():
            out.append(line[:at].rstrip())
    if not renamed and not dropped:
        return text, RefChange()
    result = "\n".join(out) + ("\n" if text.endswith("\n") else "")
    if repoint:
        return result, RefChange(repointed=renamed)
    return result, RefChange(renamed=renamed, removed=dropped)


def footer_line(mechanics_name: str, section: str) -> str:
    return f'{FOOTER_PREFIX} {mechanics_name} §"{section}"'


def rename_in_design(text: str, path: Path, old: str, new: str) -> tuple[str, int, int]:
    """Rename §"old" references in the design's prose and its **Mechanics:** footers.

    Returns the new text, the footers changed and the other references changed.
    """
    doc = parse(text, path)
    lines = list(doc.lines)
    footers = others = 0
    quoted = f'§"{old}"'
    for number, line in doc.prose_lines():
        if quoted not in line:
            continue
        count = line.count(quoted)
        lines[number - 1] = line.replace(quoted, f'§"{new}"')
        if line.strip().startswith(FOOTER_PREFIX):
            footers += count
        else:
            others += count
    return (join(lines) if footers or others else text), footers, others


def references_to(text: str, name: str, design_only: bool = False) -> int:
    """How many **Full design** references in a plan or track file name §"name"."""
    code = _code_lines(text)
    count = 0
    for number, line in enumerate(split_lines(text), start=1):
        at = line.find(FULL_DESIGN_PREFIX)
        if at < 0 or number in code:
            continue
        count += sum(
            1
            for m in REF_RE.finditer(line[at + len(FULL_DESIGN_PREFIX) :])
            if m.group("name") == name and _targets(m.group("file"), design_only)
        )
    return count
