"""The offline absorption check (phase 1): two-way decision coverage between log and draft."""

from __future__ import annotations

from pipeline.formats.contracts import ReviewOutput
from pipeline.formats.findings import Finding
from pipeline.formats.spawn_params import SpawnParams
from pipeline.offline.deadline import checkpoint
from pipeline.offline.logtext import log_from_text, records, similarity, view_of_decision
from pipeline.offline.observe import Observations, required
from pipeline.offline.pages import read_whole
from pipeline.offline.text import antonym_conflict, doc_from_text, review_finding

MATCH = 0.5


def _finding(
    rule: str,
    section: str | None,
    message: str,
    fix: str,
    at: tuple[int, str] | None = None,
    decision_shaped: bool = False,
) -> Finding:
    line, quote = at if at else (None, None)
    return review_finding(
        rule, message, fix, section=section, line=line, quote=quote, decision_shaped=decision_shaped
    )


def _heading(lines: list[str], line: int | None) -> tuple[int, str] | None:
    """A heading line of the draft and its text without the ``#`` marks (an exact quote)."""
    if line is None or not 0 < line <= len(lines):
        return None
    return line, lines[line - 1].lstrip("#").strip()


def check(log_text: str, draft_text: str) -> list[Finding]:
    log = log_from_text(log_text)
    draft = doc_from_text(draft_text)
    lines = draft.lines
    container = draft.find("Decision Records")
    title = draft.title
    where_records = container.start if container else (title[0] if title else None)
    decisions = {d.number: view_of_decision(d) for d in log.decisions}
    bearing = [view_of_decision(d) for d in log.load_bearing()]
    recs = records(draft)
    out: list[Finding] = []
    covered: set[int] = set()
    matched_records: set[int] = set()
    for rec in recs:
        checkpoint()
        if rec.source is not None:
            if rec.source not in decisions:
                out.append(
                    _finding(
                        "abs-bad-source",
                        "Decision Records",
                        f"D{rec.number} cites research-log D{rec.source}, which the log does not have",
                        "point **Source:** at the log decision this record absorbs",
                        _heading(lines, rec.line),
                    )
                )
                continue
            covered.add(rec.source)
            matched_records.add(rec.line)
            source = decisions[rec.source]
            conflict = antonym_conflict(rec.decision, source.decision)
            if conflict:
                out.append(
                    _finding(
                        "abs-drift",
                        "Decision Records",
                        f"D{rec.number} says '{conflict[0]}' where research-log D{rec.source} says "
                        f"'{conflict[1]}'",
                        "restate the decision as the log records it",
                        _heading(lines, rec.line),
                    )
                )
    for decision in bearing:
        checkpoint()
        if decision.number in covered:
            continue
        best = max(recs, key=lambda r: similarity(r, decision), default=None)
        if best is not None and best.source is None and similarity(best, decision) >= MATCH:
            covered.add(decision.number)
            matched_records.add(best.line)
            continue
        out.append(
            _finding(
                "abs-missing-record",
                f"D{decision.number}",
                f"load-bearing research-log D{decision.number} ({decision.title}) has no decision record",
                f"add '### D<n>: {decision.title}' under ## Decision Records with "
                f"**Source:** research-log D{decision.number}",
                _heading(lines, where_records),
            )
        )
    all_log = list(decisions.values())
    for rec in recs:
        checkpoint()
        if rec.line in matched_records or rec.source is not None:
            continue
        if any(similarity(rec, d) >= MATCH for d in all_log):
            continue
        out.append(
            _finding(
                "abs-invented-decision",
                "Decision Records",
                f"D{rec.number} ({rec.title}) records a decision the research log does not have",
                "take it to the research log's Decision Log and its adversarial gate, or drop it",
                _heading(lines, rec.line),
                decision_shaped=True,
            )
        )
    return out


def run(params: SpawnParams, obs: Observations) -> ReviewOutput:
    log_text = read_whole(obs, required(params.research_log_path, "research_log_path"))
    draft_text = read_whole(obs, required(params.draft_path, "draft_path"))
    findings = check(log_text, draft_text)
    return ReviewOutput.of(findings)
