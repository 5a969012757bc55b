"""What a run changed, from the bytes alone: each file as its before-snapshot holds it against the
file as it is now (runs.snapshot), never from a model's summary. The review log's ``Diff:``,
``--json``'s ``diff`` and the summary's unified diff all come from here."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path

from pipeline.formats.edit_plan import read_live
from pipeline.formats.section_diff import section_changes as changed_sections
from pipeline.graph.deps import RunDeps
from pipeline.graph.state import FileDiff


def real_diff(files: Iterable[tuple[str, bytes | None, bytes | None]]) -> list[FileDiff]:
    """What changed in each file (repository-relative name, bytes before, bytes after; None
    when absent): its sections added, removed and changed, and its lines. Files left as they
    were are not listed."""
    out: list[FileDiff] = []
    for name, before, after in files:
        if before == after:
            continue
        old = before.decode("utf-8", "replace").splitlines() if before is not None else []
        new = after.decode("utf-8", "replace").splitlines() if after is not None else []
        added = removed = 0
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
            if tag != "equal":
                removed += i2 - i1
                added += j2 - j1
        diff = FileDiff(
            file=name,
            created=before is None,
            deleted=after is None,
            lines_added=added,
            lines_removed=removed,
        )
        if before is not None and after is not None:
            sections = changed_sections("\n".join(old), "\n".join(new), Path(name))
            diff = diff.model_copy(
                update={"added": sections.added, "removed": sections.removed, "changed": sections.changed}
            )
        out.append(diff)
    return out


def describe_diff(diffs: list[FileDiff]) -> str:
    """``design.md: changed §"A" (+3 -2 lines)`` for each changed file, or that none changed."""
    return "; ".join(d.describe() for d in diffs) if diffs else "no file changed"


def file_diffs(deps: RunDeps, paths: Iterable[Path]) -> list[FileDiff]:
    """The real diff of each of ``paths`` against the run's before-snapshot."""
    return real_diff((deps.rel(p), deps.before(p), read_live(p)) for p in paths)


def unified(deps: RunDeps, paths: Iterable[Path]) -> str:
    """The unified diff of each of ``paths`` that changed since the run started."""
    out = []
    for path in paths:
        before, after = deps.before(path), read_live(path)
        if before == after:
            continue
        a = before.decode("utf-8", "replace").splitlines(keepends=True) if before else []
        b = after.decode("utf-8", "replace").splitlines(keepends=True) if after else []
        rel = deps.rel(path)
        # A valid patch (git apply, patch): a created or removed file is /dev/null on its
        # other side, and a last line without a newline says so.
        old = f"a/{rel}" if before is not None else "/dev/null"
        new = f"b/{rel}" if after is not None else "/dev/null"
        lines = difflib.unified_diff(a, b, old, new)
        out.append("".join(line if line.endswith("\n") else f"{line}\n{NO_NEWLINE}\n" for line in lines))
    return "".join(out)


NO_NEWLINE = "\\ No newline at end of file"
