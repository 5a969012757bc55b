"""What the companion did since the last sync: the sync baseline, section deltas, the
zero-delta check, stale quotes and the on-top-of merge.

The baseline is the text of design-mechanics.md as the last design-sync (or the split that
created it) left it, kept at ``_workflow/sync/design-mechanics.md``. Comparing the
live companion with it gives the sections changed, added, removed and renamed since then.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import merge3

from pipeline.formats.design_doc import STAMP_LIKE_RE
from pipeline.formats.edits import parse
from pipeline.formats.split import split_section

BASELINE = Path("sync") / "design-mechanics.md"
TOKEN_RE = re.compile(r"\s+|\w+|[^\w\s]")
RENAME_SIMILARITY = 0.8
DeltaKind = Literal["changed", "added", "removed", "renamed"]


def baseline_path(workflow: Path) -> Path:
    return workflow / BASELINE


def mechanics_sections(text: str, path: Path) -> dict[str, str]:
    """Each ``##`` section's body (after its heading), blank lines at either end trimmed."""
    doc = parse(text, path)
    out: dict[str, str] = {}
    for section in doc.level2():
        body = doc.lines[section.start : section.end]
        out[section.name] = "\n".join(body).strip("\n")
    return out


@dataclass(frozen=True, slots=True)
class SectionDelta:
    kind: DeltaKind
    name: str
    """The section's current name (its old name for a removed section)."""
    old_name: str | None = None
    old: str = ""
    new: str = ""

    def describe(self) -> str:
        if self.kind == "renamed":
            return f'renamed §"{self.old_name}" to §"{self.name}"'
        return f'{self.kind} §"{self.name}"'


def _similar(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def section_deltas(baseline: str, current: str, path: Path) -> list[SectionDelta]:
    """Sections changed, added, removed and renamed from ``baseline`` to ``current``, in the
    current document's order (removed ones last)."""
    old = mechanics_sections(baseline, path)
    new = mechanics_sections(current, path)
    removed = [n for n in old if n not in new]
    added = [n for n in new if n not in old]
    renames: dict[str, str] = {}
    for name in added:
        best = max(removed, key=lambda r: _similar(old[r], new[name]), default=None)
        if (
            best is not None
            and best not in renames.values()
            and _similar(old[best], new[name]) >= RENAME_SIMILARITY
        ):
            renames[name] = best
    out: list[SectionDelta] = []
    for name, body in new.items():
        if name in renames:
            out.append(SectionDelta("renamed", name, renames[name], old[renames[name]], body))
            if old[renames[name]] != body:
                out.append(SectionDelta("changed", name, renames[name], old[renames[name]], body))
        elif name not in old:
            out.append(SectionDelta("added", name, None, "", body))
        elif old[name] != body:
            out.append(SectionDelta("changed", name, None, old[name], body))
    out += [SectionDelta("removed", n, None, old[n], "") for n in removed if n not in renames.values()]
    return out


def without_stamp(text: str) -> str:
    first, _, rest = text.partition("\n")
    return rest if STAMP_LIKE_RE.search(first) else text


def tokens(text: str) -> list[str]:
    return TOKEN_RE.findall(text)


def _map_start(ops: Sequence[tuple[str, int, int, int, int]], i: int) -> int:
    for tag, a1, a2, b1, _b2 in ops:
        if a1 <= i < a2 or (a1 == a2 == i):
            return b1 + (i - a1) if tag == "equal" else b1
    return ops[-1][4] if ops else 0


def _map_end(ops: Sequence[tuple[str, int, int, int, int]], i: int) -> int:
    for tag, a1, a2, b1, b2 in ops:
        if a1 < i <= a2:
            return b1 + (i - a1) if tag == "equal" else b2
    return ops[0][3] if ops else 0


@dataclass(frozen=True, slots=True)
class Stale:
    """A quote from design.md that the companion has moved past: X is now Y there."""

    section: str
    x: str
    y: str


def counterpart(quote: str, baseline: str, current: str, path: Path) -> Stale | None:
    """Where the companion's text ``quote`` (as of the baseline) stands now, if it changed."""
    old = mechanics_sections(baseline, path)
    new = mechanics_sections(current, path)
    for name, body in old.items():
        at = body.find(quote)
        if at < 0 or body.count(quote) != 1:
            continue
        if name not in new:
            return Stale(name, quote, "")
        before = tokens(body)
        after = tokens(new[name])
        start = len(tokens(body[:at]))
        end = start + len(tokens(quote))
        ops = difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
        y = "".join(after[_map_start(ops, start) : _map_end(ops, end)]).strip()
        return Stale(name, quote, y) if y != quote else None
    return None


def merge_on_top(x: str, y: str, z: str) -> str | None:
    """Apply the change X -> Z on top of Y (a word-level three-way merge); None on a conflict."""
    base, ours, theirs = tokens(x), tokens(y), tokens(z)
    merger = merge3.Merge3(base, ours, theirs)
    out: list[str] = []
    for region in merger.merge_regions():
        kind = region[0]
        if kind == "conflict":
            return None
        if kind == "unchanged":
            out += base[region[1] : region[2]]
        elif kind in ("a", "same"):
            out += ours[region[1] : region[2]]
        elif kind == "b":
            out += theirs[region[1] : region[2]]
    return "".join(out)


def design_view(name: str, body: str, path: Path) -> list[str]:
    """The part of a companion section design.md carries: its overview, edge cases, diagrams
    (the length-trigger split's kept lines; there is no TL;DR in a companion section)."""
    doc = parse(f"# View\n\n## {name}\n\n{body}\n", path)
    section = next(s for s in doc.level2() if s.name == name)
    return split_section(doc, section).design


def view_changed(delta: SectionDelta, path: Path) -> bool:
    """Whether design.md has anything to follow: changes only in long-form content do not reach it."""
    if delta.kind != "changed":
        return True
    return design_view(delta.name, delta.old, path) != design_view(delta.name, delta.new, path)
