"""Writes to the research log: dated gate entries and surfaced decisions (docs/formats.md §4).

Every write re-reads the log, refuses one that does not parse, inserts at the end of the
right ``##`` section (found from the parsed structure, so a heading inside a code fence is
not one) and replaces the file atomically, keeping its line endings.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from pathlib import Path

from pipeline.formats.contracts import ReviewOutput
from pipeline.formats.markdown import parse_structure
from pipeline.formats.research_log import DECISION_LOG, GATE_RECORD, parse_research_log, section_span
from pipeline.formats.textio import atomic_write, read_text, split_lines


def render_gate_entry(date: dt.date, verdict: str, items: Sequence[tuple[str, str]]) -> str:
    lines = [f"### {date.isoformat()} — {verdict}"]
    lines += [f"- [ ] {severity}: {' '.join(text.split())}" for severity, text in items]
    return "\n".join(lines) + "\n"


def insert_into_section(text: str, section: str, block: str) -> str:
    """``text`` with ``block`` added at the end of its ``## section`` (created at the end if absent).

    Headings come from the parsed structure, so a ``## `` line inside a code fence is not one.
    """
    lines = split_lines(text)
    span = section_span(parse_structure(text, lines), section)
    body = block.strip("\n").split("\n")
    if span is None:
        head = "\n".join(lines).rstrip("\n")
        return f"{head}\n\n## {section}\n\n" + "\n".join(body) + "\n"
    end = span[1]
    while end > span[0] and not lines[end - 1].strip():
        end -= 1
    rest = lines[end:]
    while rest and not rest[0].strip():
        rest.pop(0)
    out = [*lines[:end], "", *body, *(["", *rest] if rest else [])]
    return "\n".join(out) + "\n"


def append_gate_entry(path: Path, date: dt.date, review: ReviewOutput) -> str:
    """Append a dated entry for ``review`` under the gate record, atomically."""
    items = [(f.severity, f"{f.section}: {f.message}" if f.section else f.message) for f in review.findings]
    entry = render_gate_entry(date, review.verdict, items)
    source = read_text(path, what="research log")
    parse_research_log(source)  # refuse to touch a log that does not parse
    atomic_write(
        path, insert_into_section(source.text, GATE_RECORD, entry), newline=source.newline, bom=source.bom
    )
    return entry


def _title(quote: str | None, message: str) -> str:
    text = " ".join((quote or message).split())
    text = re.sub(r"^[A-Z]\d+:\s*", "", text).rstrip(".")
    return (text[:77] + "...") if len(text) > 80 else text


def surface_decision(
    log_path: Path, role: str, quote: str | None, message: str, marker: str, today: dt.date
) -> int | None:
    """Append the decision and a NEEDS REVISION gate entry naming it; None if already there."""
    source = read_text(log_path, what="research log")
    if marker in source.text:
        return None
    log = parse_research_log(source)
    number = max((d.number for d in log.decisions), default=0) + 1
    title = _title(quote, message)
    entry = "\n".join(
        [
            f"### D{number}: {title}",
            f"**Decision:** {' '.join((quote or message).split())}",
            f"**Status:** surfaced by {role}, pending challenge ({marker})",
            "**Alternatives rejected:** none",
            f"**Rationale:** {' '.join(message.split())}",
        ]
    )
    gate = render_gate_entry(
        today, "NEEDS REVISION", [("should-fix", f"D{number} ({title}) was surfaced by {role}; challenge it")]
    )
    text = insert_into_section(insert_into_section(source.text, DECISION_LOG, entry), GATE_RECORD, gate)
    atomic_write(log_path, text, newline=source.newline, bom=source.bom)
    return number
