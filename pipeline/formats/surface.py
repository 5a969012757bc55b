"""Decision-shaped findings go back to the research log (formats.md §4), exactly once."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from pipeline.formats.research_log import (
    DECISION_LOG,
    GATE_RECORD,
    insert_into_section,
    parse_research_log,
    render_gate_entry,
)
from pipeline.formats.textio import atomic_write, read_text


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
