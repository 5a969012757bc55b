"""Decision-shaped findings go back to the research log (formats.md §4), exactly once."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from .research_log import DECISION_LOG, GATE_RECORD, load_research_log, render_gate_entry
from .textio import atomic_write, read_text


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
    log = load_research_log(log_path)
    number = max((d.number for d in log.decisions), default=0) + 1
    title = _title(quote, message)
    entry = "\n".join(
        [
            f"### D{number}: {title}",
            f"**Decision:** {' '.join((quote or message).split())}",
            f"**Status:** surfaced by {role}, pending challenge ({marker})",
            "**Alternatives rejected:** none",
            f"**Rationale:** {' '.join(message.split())}",
            "",
        ]
    )
    lines = source.text.rstrip("\n").split("\n")
    structure_heads = [(i, line) for i, line in enumerate(lines) if line.startswith("## ")]
    insert_at = len(lines)
    seen_log = False
    for index, line in structure_heads:
        if line.strip() == f"## {DECISION_LOG}":
            seen_log = True
            continue
        if seen_log:
            insert_at = index
            break
    if not seen_log:
        lines += ["", f"## {DECISION_LOG}", ""]
        insert_at = len(lines)
    lines[insert_at:insert_at] = [*entry.split("\n")]
    text = "\n".join(lines).rstrip("\n") + "\n"
    gate = render_gate_entry(
        today, "NEEDS REVISION", [("should-fix", f"D{number} ({title}) was surfaced by {role}; challenge it")]
    )
    if f"## {GATE_RECORD}" not in text:
        text += f"\n## {GATE_RECORD}\n"
    text = _append_to_gate(text, gate)
    atomic_write(log_path, text, newline=source.newline, bom=source.bom)
    return number


def _append_to_gate(text: str, entry: str) -> str:
    lines = text.rstrip("\n").split("\n")
    start = next(i for i, line in enumerate(lines) if line.strip() == f"## {GATE_RECORD}")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    block = ["", *entry.rstrip("\n").split("\n")]
    lines[end:end] = block + ([""] if end < len(lines) else [])
    return "\n".join(lines).rstrip("\n") + "\n"
