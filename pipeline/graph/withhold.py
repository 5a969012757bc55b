"""The review log holds none of the research log's words that a cold role could read.

The review log (``_workflow/design-mutations.md``) is a file like any other in the repository:
the cold roles of later runs may read it. A finding of a role that reads the log (the
absorption check) can quote the log, or name a decision by its title; so, before an entry is
appended, every run of the log's own words in it (agents.confine.LogWords: words the design
does not share) is replaced by ``[…]``, and the entry says so. The run's summary (under the
runs directory, which no role reads) keeps the entry's lines as they were.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from pipeline import confinement
from pipeline.agents.confine import LogWords, normalise
from pipeline.formats.design_dir import DesignDir
from pipeline.formats.review_log import MutationEntry
from pipeline.runs.event_log import events_of
from pipeline.runs.events import ReviewLogged

MARK = "[…]"


def log_words(d: DesignDir) -> LogWords | None:
    """The research log's words that the design (and its companion) do not share."""
    try:
        log = normalise(confinement.read_bytes(d.research_log))
    except OSError:
        return None
    shared = []
    for path in (d.design, d.mechanics):
        try:
            shared.append(normalise(confinement.read_bytes(path)))
        except OSError:
            continue
    return LogWords.of(log, shared)


def withhold_log_words(d: DesignDir, entry: MutationEntry) -> tuple[MutationEntry, list[str]]:
    """``entry`` without the research log's own words, and its lines that had any, as they were."""
    words = log_words(d)
    if not words:
        return entry, []
    withheld: list[str] = []

    def clean(text: str) -> str:
        out, runs = words.redact(text)
        if runs:
            withheld.append(text)
        return out

    cleaned = dataclasses.replace(
        entry,
        diff_summary=clean(entry.diff_summary),
        mechanical=clean(entry.mechanical),
        cold_read=clean(entry.cold_read),
        findings=[clean(item) for item in entry.findings],
        extra=[clean(item) for item in entry.extra],
        one_line=None if entry.one_line is None else clean(entry.one_line),
    )
    if withheld:
        cleaned.extra = [
            *cleaned.extra,
            f"**Withheld**: {len(withheld)} line(s) quoted the research log; its words show as {MARK} "
            "here, since cold roles may read this log (the run's summary.md holds them in full).",
        ]
    return cleaned, withheld


def withheld_section(run_dir: Path) -> list[str]:
    """The summary's section with the entry's lines as they were (from the review-log event)."""
    logged = events_of(run_dir, ReviewLogged)
    lines = logged[-1].withheld if logged else []
    if not lines:
        return []
    return ["## Withheld from the review log", "", *(f"- {line}" for line in lines), ""]
