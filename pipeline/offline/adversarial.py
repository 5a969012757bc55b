"""The offline adversarial review of a research log: forks without alternatives, missing
rationales, and decisions that contradict each other."""

from __future__ import annotations

from typing import Any

from pipeline.formats.contracts import ReviewOutput
from pipeline.formats.findings import Finding, Severity
from pipeline.formats.spawn_params import SpawnParams
from pipeline.offline.deadline import checkpoint
from pipeline.offline.logtext import RecordView, alternatives, is_empty, log_from_text, view_of_decision
from pipeline.offline.observe import Observations, required
from pipeline.offline.pages import read_whole
from pipeline.offline.text import (
    antonym_conflict,
    containment,
    content_words,
    find_terms,
    jaccard,
    lexicon,
    review_finding,
)


def _finding(
    severity: Severity, rule: str, section: str, message: str, fix: str, at: tuple[int, str] | None = None
) -> Finding:
    line, quote = at if at else (None, None)
    return review_finding(rule, message, fix, severity=severity, section=section, line=line, quote=quote)


def _heading(lines: list[str], line: int) -> tuple[int, str]:
    """A decision's heading line and its text without the ``###`` (an exact quote)."""
    return line, lines[line - 1].lstrip("#").strip() if 0 < line <= len(lines) else ""


def check(log_text: str) -> list[Finding]:
    log = log_from_text(log_text)
    lines = log.structure.lines
    views = [view_of_decision(d) for d in log.decisions]
    out: list[Finding] = []
    forks = lexicon().fork_words
    for d, view in zip(log.decisions, views, strict=True):
        if not d.load_bearing and any(True for _ in find_terms(view.decision, forks)):
            out.append(
                _finding(
                    "should-fix",
                    "adv-no-alternative",
                    d.id,
                    f"{d.id} ({d.title}) chooses between options but names no rejected alternative",
                    "name each alternative and why it lost under **Alternatives rejected:**",
                    _heading(lines, d.line),
                )
            )
        if d.value("Rationale") is None or is_empty(view.rationale):
            out.append(
                _finding(
                    "should-fix",
                    "adv-no-rationale",
                    d.id,
                    f"{d.id} ({d.title}) gives no rationale",
                    "add **Rationale:** with the reason this option won",
                    _heading(lines, d.line),
                )
            )
    for i, j in _pairs(views):
        checkpoint()
        (da, a), (db, b) = (log.decisions[i], views[i]), (log.decisions[j], views[j])
        reason = _contradiction(a, b) or _contradiction(b, a)
        if reason:
            out.append(
                _finding(
                    "blocker",
                    "adv-contradiction",
                    f"{da.id}, {db.id}",
                    f"{da.id} and {db.id} contradict each other: {reason}",
                    "reconcile the two decisions, or record which one supersedes the other",
                    _heading(lines, db.line),
                )
            )
    return out


COMMON = 64
"""A word that more than this many decisions use does not by itself make two of them a pair to
compare: in a log that long, it names no subject."""


def _pairs(views: list[RecordView]) -> list[tuple[int, int]]:
    """The pairs of decisions that can contradict each other, in the order of the log: two that
    share a word of their titles, decisions or alternatives (both kinds of contradiction need
    one: an alternative one rejected and the other adopted, or a subject both decide). An
    index of the words proposes them, so the work grows with the pairs that share words, not
    with every pair of the log (comparing every pair was quadratic in the log's length)."""
    users: dict[str, list[int]] = {}
    for index, view in enumerate(views):
        for word in view.key_terms | content_words(view.alternatives):
            users.setdefault(word, []).append(index)
    pairs: set[tuple[int, int]] = set()
    for indices in users.values():
        if len(indices) <= COMMON:
            pairs.update((a, b) for k, a in enumerate(indices) for b in indices[k + 1 :])
    return sorted(pairs)


def _contradiction(a: Any, b: Any) -> str | None:
    # b adopts what a rejected
    own = content_words(a.decision) | content_words(a.title)
    for alt in alternatives(a.alternatives):
        # What sets the alternative apart from what a chose; shared subject words prove nothing.
        alt_words = content_words(alt) - own
        if len(alt_words) >= 2 and containment(alt_words, content_words(b.decision)) >= 0.75:
            return f"D{b.number} adopts '{alt}', which D{a.number} rejected"
    if jaccard(a.key_terms, b.key_terms) >= 0.3:
        conflict = antonym_conflict(a.decision, b.decision)
        if conflict:
            return f"D{a.number} says '{conflict[0]}' where D{b.number} says '{conflict[1]}'"
    return None


def run(params: SpawnParams, obs: Observations) -> ReviewOutput:
    findings = check(read_whole(obs, required(params.research_log_path, "research_log_path")))
    return ReviewOutput.of(findings)
