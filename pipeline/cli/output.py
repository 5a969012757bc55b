"""What the commands print, and how it survives a pipe and a CI log.

On a terminal, tables are Rich tables whose cells fold (a path or a run id is never cut) and
text may be coloured. Off a terminal (a pipe, a file, a CI log), text is written as it is
(the diff stays a valid unified diff, nothing is hard-wrapped), a table is tab-separated
values with a header line, and there is no ANSI. Rich's own rules decide what a terminal is:
``NO_COLOR`` turns colour off, ``FORCE_COLOR`` (or ``TTY_COMPATIBLE=1``) turns it on.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


def console(stderr: bool = False) -> Console:
    """A console on stdout (or stderr) as they are now, NO_COLOR and FORCE_COLOR read now."""
    from rich.console import Console

    return Console(stderr=stderr, highlight=False)


def is_terminal(stderr: bool = False) -> bool:
    """Whether stdout (or stderr) is a terminal, as Rich decides it (FORCE_COLOR counts)."""
    return console(stderr).is_terminal


def write(text: str, stderr: bool = False) -> None:
    """``text`` as it is: never wrapped, never marked up; coloured by nothing."""
    stream = sys.stderr if stderr else sys.stdout
    stream.write(text if text.endswith("\n") else text + "\n")
    stream.flush()


def say(markup: str, stderr: bool = False, *, plain: bool = False) -> None:
    """A line with Rich markup (``[yellow]warning:[/yellow] ...``; none with ``plain``): styled
    on a terminal, the plain words elsewhere; never wrapped."""
    out = console(stderr)
    if plain:
        write(markup, stderr)
    elif out.is_terminal:
        out.print(markup, soft_wrap=True)
    else:
        from rich.text import Text

        write(Text.from_markup(markup).plain, stderr)


@dataclass(frozen=True, slots=True)
class Column:
    header: str
    numeric: bool = False
    whole: bool | None = None
    """Never cut nor folded on a terminal (an id: what a user copies). None: decided by the
    header (``run``, ``rule`` ...); a path folds onto more lines, free text is ellipsised."""

    def kept_whole(self) -> bool:
        return self.whole if self.whole is not None else self.header in IDS

    def folds(self) -> bool:
        return self.header in PATHS


IDS = frozenset({"run", "run id", "batch", "rule", "role", "model", "revision", "setting", "exit"})
"""Columns of ids and names a user copies: kept whole on a terminal, on one line."""
PATHS = frozenset({"directory", "file", "where", "from", "definition"})
"""Columns of paths: folded onto more lines when they must be, never cut."""


def cell(value: object) -> str:
    """A cell as text: a tab or a line break inside it would break a TSV row."""
    text = "-" if value is None else str(value)
    return " ".join(text.split("\t")).replace("\n", " ")


def table(
    columns: Sequence[str | Column], rows: Iterable[Sequence[object]], title: str | None = None
) -> None:
    """Rows on a terminal as a Rich table (ids and paths whole, free text ellipsised: ``--json``
    has it all); elsewhere pure TSV, the header on line 1 (the title, when there is one, on
    stderr)."""
    cols = [c if isinstance(c, Column) else Column(c) for c in columns]
    out = console()
    if not out.is_terminal:
        if title:
            write(title, stderr=True)
        lines = ["\t".join(c.header for c in cols)]
        lines += ["\t".join(cell(v) for v in row) for row in rows]
        write("\n".join(lines))
        return
    out.print(rich_table(cols, rows, title))


def rich_table(
    columns: Sequence[str | Column],
    rows: Iterable[Sequence[object]],
    title: str | None = None,
    width: int | None = None,
) -> Table:
    """A Rich table for a terminal ``width`` columns wide (the console's when None): ids kept
    whole on one line, paths folded, free text ellipsised in the room that is left."""
    from rich.table import Table

    cols = [c if isinstance(c, Column) else Column(c) for c in columns]
    body = [[cell(v) for v in row] for row in rows]
    widest = [max([len(c.header), *(len(r[i]) for r in body if i < len(r))]) for i, c in enumerate(cols)]
    whole = [c.kept_whole() or c.numeric for c in cols]
    room = (width or console().size.width) - 3 * len(cols) - 1  # each cell's padding and rule
    left = room - sum(w for w, keep in zip(widest, whole, strict=True) if keep)
    limit = _shares(left, {i: widest[i] for i, keep in enumerate(whole) if not keep}, cols)
    result = Table(title=title)
    for index, col in enumerate(cols):
        justify: Literal["left", "right"] = "right" if col.numeric else "left"
        if whole[index]:  # an id folded into pieces cannot be copied
            result.add_column(col.header, no_wrap=True, min_width=widest[index], justify=justify)
        elif col.folds():
            result.add_column(col.header, overflow="fold", max_width=limit[index], justify=justify)
        else:
            result.add_column(
                col.header, no_wrap=True, overflow="ellipsis", max_width=limit[index], justify=justify
            )
    for row in body:
        result.add_row(*row)
    return result


def _shares(room: int, wants: dict[int, int], cols: Sequence[Column]) -> dict[int, int]:
    """The width each column that may give way gets of ``room``: the narrowest first get all
    they need, the rest share what is left (a path twice what free text gets)."""
    out: dict[int, int] = {}
    waiting = sorted(wants, key=lambda i: wants[i])
    while waiting:
        weights = {i: 2 if cols[i].folds() else 1 for i in waiting}
        unit = max(room, 0) / sum(weights.values())
        first = waiting[0]
        if wants[first] <= unit * weights[first]:  # it fits whole: the others share the rest
            out[first] = wants[first]
            room -= wants[first]
            waiting.pop(0)
            continue
        for i in waiting:
            out[i] = max(3, int(unit * weights[i]))
        break
    return out


SCHEMA_VERSION = 1
"""The version of every ``--json`` document's shape; raised when a field changes meaning or goes."""


def emit_json(document: dict[str, Any]) -> None:
    """One JSON document on stdout, ``schema_version`` first."""
    import json

    write(json.dumps({"schema_version": SCHEMA_VERSION} | document, indent=2, default=str))


_FLAGS: dict[str, str] = {}
"""Where the command found its runs (``--runs-dir``, ``--store``), for the hints it prints."""
_PASTED = re.compile(
    r"\bdesignloop (?:(?:(?:resume|status|discard|report)(?: \d{8}-\d{6}-[\w-]+)?|runs"
    r"|(?:create|final) DIR)\b|(?:approve|final|create) (?!DIR\b)[^\s;,()]+)"
)


def remember_flag(flag: str, value: str) -> None:
    _FLAGS[flag] = value


def forget_flags() -> None:
    """A new command line: no flag of an earlier one is remembered."""
    _FLAGS.clear()


def pasteable(text: str) -> str:
    """``text`` with every ``designloop resume|status|runs|discard|report [RUN]`` it suggests
    carrying the flags this command was given to find its runs, so pasting it works."""
    if not _FLAGS:
        return text
    import shlex

    extra = "".join(f" {flag} {shlex.quote(value)}" for flag, value in _FLAGS.items())
    return _PASTED.sub(lambda m: m.group(0) + extra, text)


def relative_text(text: str, *roots: Path) -> str:
    """``text`` with every absolute path under one of ``roots`` (the repository, the current
    directory) written relative to it: what a user reads or a CI uploads names no machine's
    folders."""
    for root in sorted({str(r).rstrip("/") for r in roots}, key=len, reverse=True):
        if root:
            text = text.replace(root + "/", "")
    return text


def cost_text(cost: object, unpriced: Sequence[str] = ()) -> str:
    """A cost as people read it: ``$0.0123``; ``unpriced`` when a model without a known price
    made the requests (never ``$0``), ``$0.0123 + unpriced`` when some were priced."""
    from decimal import Decimal

    amount = Decimal(str(cost))
    shown = f"${amount:.4f}"
    if unpriced:
        return (
            f"{shown} + unpriced ({', '.join(unpriced)})" if amount else f"unpriced ({', '.join(unpriced)})"
        )
    return shown
