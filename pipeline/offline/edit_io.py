"""How the offline inline editor changes a file: exact, unique Edit calls, line 1 untouched."""

from __future__ import annotations

from pipeline.offline.observe import Observations
from pipeline.offline.pages import failed, read_whole


def read(obs: Observations, path: str) -> str:
    """The whole file, page by page (a file the Read tool cannot hand over whole is an error)."""
    return read_whole(obs, path)


def keep_line1(current: str, text: str) -> str:
    """``text`` with ``current``'s first line: the stamp is never the editor's to change."""
    first_old, _, _ = current.partition("\n")
    first_new, _, rest = text.partition("\n")
    return first_old + "\n" + rest if first_old != first_new else text


def span_edit(old: str, new: str) -> tuple[str, str] | None:
    """One exact, unique (old_string, new_string) turning ``old`` into ``new``: the changed
    lines, line endings included, widened by context lines (1, 2, 4, ... on each side) until the
    old string is unique."""
    if old == new:
        return None
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    changed = "".join(b[head : len(b) - tail])
    lo, hi = head, len(a) - tail
    step = 1
    while True:
        chunk = "".join(a[lo:hi])
        if (chunk and old.count(chunk) == 1) or (lo == 0 and hi == len(a)):
            return chunk, "".join(a[lo:head]) + changed + "".join(a[len(a) - tail : hi])
        # Twice the context each time: a few counts of the file, not one per line of context.
        lo, hi = max(0, lo - step), min(len(a), hi + step)
        step *= 2


def write_edits(obs: Observations, path: str, current: str, text: str) -> bool:
    """Turn ``current`` into ``text`` with Edit calls; returns whether anything changed."""
    text = keep_line1(current, text)
    if text == current:
        return False
    edit = span_edit(current, text)
    if edit is None:
        return False
    result = obs.call("edit", path=path, old_string=edit[0], new_string=edit[1])
    if failed(result):
        raise RuntimeError(result)
    return True
