"""Research-log and decision-record helpers shared by the roles that compare decisions."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pipeline.formats.design_doc import DesignDoc, DRecord
from pipeline.formats.research_log import Decision, ResearchLog, parse_research_log
from pipeline.formats.textio import decode
from pipeline.offline.text import content_words, jaccard, lexicon


def log_from_text(text: str, name: str = "research-log.md") -> ResearchLog:
    return parse_research_log(decode(text.encode("utf-8"), Path(name)))


@dataclass(frozen=True, slots=True)
class RecordView:
    """A decision, from the log or from a design's Decision Records, as comparable text."""

    number: int
    title: str
    decision: str
    alternatives: str
    rationale: str
    source: int | None
    line: int

    @property
    def key_terms(self) -> set[str]:
        return content_words(self.title) | content_words(self.decision)


def view_of_decision(d: Decision) -> RecordView:
    return RecordView(
        d.number,
        d.title,
        d.value("Decision") or "",
        d.value("Alternatives rejected") or "",
        d.value("Rationale") or "",
        None,
        d.line,
    )


def view_of_record(r: DRecord) -> RecordView:
    def value(name: str) -> str:
        field = r.fields.get(name)
        return field.value if field else ""

    return RecordView(
        r.number,
        r.title,
        value("Decision"),
        value("Alternatives rejected"),
        value("Rationale"),
        r.source,
        r.line,
    )


def records(doc: DesignDoc) -> list[RecordView]:
    return [view_of_record(r) for r in doc.d_records()]


def similarity(a: RecordView, b: RecordView) -> float:
    return max(jaccard(content_words(a.title), content_words(b.title)), jaccard(a.key_terms, b.key_terms))


def is_empty(value: str) -> bool:
    return value.strip().rstrip(".").strip().lower() in lexicon().empty_values


def alternatives(value: str) -> list[str]:
    """Each rejected alternative, without its parenthesised reason."""
    items = re.split(r";|\n-|\n\*", value)
    out = []
    for item in items:
        text = re.sub(r"\([^)]*\)", "", item).strip(" -*.\n")
        text = re.split(r",\s*(?:which|because|since|as)\b", text)[0]
        if text and not is_empty(text):
            out.append(text)
    return out
