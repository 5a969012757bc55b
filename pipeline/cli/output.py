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
from typing import TYPE_CHECKING, Any

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


def cell(value: object) -> str:
    """A cell as text: a tab or a line break inside it would break a TSV row."""
    text = "-" if value is None else str(value)
    return " ".join(text.split("\t")).replace("\n", " ")


def table(
    columns: Sequence[str | Column], rows: Iterable[Sequence[object]], title: str | None = None
) -> None:
    """Rows on a terminal as a Rich table whose cells fold (never cut); elsewhere as TSV with
    a header line (the title, when there is one, is a ``# title`` line above it)."""
    cols = [c if isinstance(c, Column) else Column(c) for c in columns]
    out = console()
    if not out.is_terminal:
        lines = [f"# {title}"] if title else []
        lines.append("\t".join(c.header for c in cols))
        lines += ["\t".join(cell(v) for v in row) for row in rows]
        write("\n".join(lines))
        return
    out.print(rich_table(cols, rows, title))


def rich_table(
    columns: Sequence[str | Column], rows: Iterable[Sequence[object]], title: str | None = None
) -> Table:
    from rich.table import Table

    result = Table(title=title)
    for c in columns:
        col = c if isinstance(c, Column) else Column(c)
        result.add_column(col.header, overflow="fold", justify="right" if col.numeric else "left")
    for row in rows:
        result.add_row(*(cell(v) for v in row))
    return result


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
