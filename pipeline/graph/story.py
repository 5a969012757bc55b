"""The review's story: every role that ran in each round, what it raised, and what became of
each finding (fixed, raised again, left), from the run's own records, never from a model's
summary.

The review-log entry tells it in two blocks (docs/formats.md §7): ``**Rounds**``, a line per
round naming each role with what it raised, and ``**Raised in earlier rounds**``, each finding
of a round before the last with its fate (within the entry's limit; the entry's Findings list
holds the last round's). ``--json`` carries every finding, one record per subject, with
its severity, the rounds it was raised in, its status and whether it remains blocking.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from pipeline.formats.findings import MECHANICAL, SEVERITY_ORDER, Finding
from pipeline.graph.state import Reviewer, RunStateBase

MAX_RAISED = 20
"""The most findings the entry's Raised block lists; --json carries them all."""
AUTHORS = ("design-author", "inline-editor")
ORDER = {
    "design-author": 0,
    "inline-editor": 0,
    MECHANICAL: 1,
    "readability-auditor": 2,
    "absorption-check": 3,
    "fidelity-check": 3,
    "comprehension-review": 4,
}


@dataclass(frozen=True, slots=True)
class Raised:
    """One finding one role raised in one round."""

    round: int
    role: Reviewer
    finding: Finding


@dataclass(frozen=True, slots=True)
class Ran:
    """One role's reviews in one round: how many spawns, and whether any was INCONCLUSIVE."""

    round: int
    role: Reviewer
    spawns: int
    inconclusive: bool


def subject(f: Finding) -> tuple[object, ...]:
    """What a finding is about, across rounds: its rule, file and quote (lines move as the
    document changes), else its rule, file, section and message."""
    quote = " ".join((f.quote or "").split()).lower()
    return (f.rule, f.file, quote) if quote else (f.rule, f.file, f.section, f.message)


def raised(state: RunStateBase) -> list[Raised]:
    """Every finding every reviewing role raised, round by round."""
    out = [Raised(r.round, r.role, f) for r in state.reviews() for f in r.findings]
    return sorted(out, key=lambda r: (r.round, ORDER.get(r.role, 5), r.finding.line or 0))


def reviews(state: RunStateBase) -> list[Ran]:
    """Every reviewing role that ran, per round (the author's turns are in ``state.usage``)."""
    grouped: dict[tuple[int, Reviewer], list[bool]] = {}
    for review in state.reviews():
        grouped.setdefault((review.round, review.role), []).append(review.status != "ok")
    return [Ran(k[0], k[1], len(v), any(v)) for k, v in sorted(grouped.items())]


def _fate(
    item: Raised, found: list[Raised], ran: list[Ran], open_keys: set[tuple[object, ...]], final: int
) -> str:
    """What became of one raised finding: raised again, fixed, left, or still open."""
    later = sorted(
        r.round for r in ran if r.role == item.role and r.round > item.round and not r.inconclusive
    )
    key = subject(item.finding)
    if later:
        again = any(r.round == later[0] and r.role == item.role and subject(r.finding) == key for r in found)
        if again:
            return f"raised again in round {later[0]}"
        return (
            f"fixed in round {later[0]}" if item.finding.blocking else f"not raised again in round {later[0]}"
        )
    if not item.finding.blocking:
        return "left: suggestions are recorded, never retried"
    if key in open_keys:
        return "open"
    if item.round == final and item.role == "readability-auditor":
        return "set aside: its section was settled clean and unchanged"
    return "not checked again: its role did not run in a later round"


def _counts(findings: list[Finding]) -> str:
    tally = Counter(f.severity for f in findings)
    return ", ".join(
        f"{tally[s]} {s}{'s' if tally[s] > 1 and s != 'should-fix' else ''}"
        for s in sorted(tally, key=SEVERITY_ORDER.__getitem__)
    )


def _turn(role: str, round_: int, wrote: bool = True, unchanged: bool = False) -> str:
    if not wrote:  # the run changed no file: no turn of its author wrote anything
        return f"{role} wrote nothing"
    if role == "inline-editor":
        return "inline-editor edited the file"
    if unchanged:  # the files' bytes say so, whatever the author's own summary said
        return f"{role} left the draft unchanged"
    return f"{role} {'wrote' if round_ == 1 else 'revised'} the draft"


def rounds_block(state: RunStateBase, wrote: bool = True) -> list[str]:
    """``**Rounds**``: a line per round naming every role that ran and what it raised; when the
    run changed no file (``wrote`` false), its author is said to have written nothing, and a
    later round whose turn changed no byte (``unchanged_rounds``) left the draft unchanged."""
    found = raised(state)
    ran = reviews(state)
    authors: dict[int, str] = {}
    for use in state.usage:
        if use.role in AUTHORS:
            authors.setdefault(use.round, use.role)
    lines = []
    unchanged = state.unchanged_rounds()
    for round_ in range(1, state.round + 1):
        parts = [_turn(authors[round_], round_, wrote, round_ in unchanged)] if round_ in authors else []
        for r in sorted((r for r in ran if r.round == round_), key=lambda r: ORDER.get(r.role, 5)):
            mine = [x.finding for x in found if x.round == round_ and x.role == r.role]
            who = r.role + (f" ({r.spawns} slices)" if r.spawns > 1 else "")
            what = "INCONCLUSIVE" if r.inconclusive else (_counts(mine) if mine else "PASS")
            parts.append(f"{who} {what}")
        if parts:
            lines.append(f"- round {round_}: " + "; ".join(parts))
    return ["**Rounds**:", *lines] if lines else []


def raised_block(state: RunStateBase, remaining: list[Finding]) -> list[str]:
    """``**Raised in earlier rounds**``: each finding of a round before the last, with who
    raised it and its fate (the entry's Findings list holds the last round's); blockers and
    should-fix first when there are more than the entry's limit."""
    found = raised(state)
    earlier = [x for x in found if x.round < state.round]
    if not earlier:
        return []
    ran = reviews(state)
    open_keys = {subject(f) for f in remaining}
    items = [(x, _fate(x, found, ran, open_keys, state.round)) for x in earlier]
    shown = items
    if len(items) > MAX_RAISED:
        chosen = sorted(items, key=lambda i: (SEVERITY_ORDER[i[0].finding.severity], i[0].round))[:MAX_RAISED]
        shown = [i for i in items if i in chosen]
    lines = [
        f"- round {x.round}, {x.role}, {x.finding.severity}: {x.finding.describe()} — {fate}"
        for x, fate in shown
    ]
    if len(items) > len(shown):
        lines.append(f"- {len(items) - len(shown)} more (suggestions) in the run's --json and summary")
    return ["**Raised in earlier rounds**:", *lines]


def entry_blocks(state: RunStateBase, remaining: list[Finding], wrote: bool = True) -> list[str]:
    """The entry's story blocks, separated by a blank line; ``wrote``: the run changed a file
    (from the real diff), so an author's turn is told as writing only when it did."""
    rounds, found = rounds_block(state, wrote), raised_block(state, remaining)
    return [*rounds, *([""] if rounds and found else []), *found]


def findings_json(state: RunStateBase, remaining: list[Finding]) -> list[dict[str, Any]]:
    """Every finding the run reports, once per (role, subject): its severity, the rounds it was
    raised in, its status (open, fixed, left ...) and whether it remains blocking."""
    found = raised(state)
    ran = reviews(state)
    open_keys = {subject(f) for f in remaining}
    groups: dict[tuple[str, tuple[object, ...]], list[Raised]] = {}
    for x in found:
        groups.setdefault((x.role, subject(x.finding)), []).append(x)
    standing = {subject(f): f for f in remaining}
    """What the outcome kept of an open finding (annotated, merged): it is what stands."""
    out: list[dict[str, Any]] = []
    for (role, key), items in groups.items():
        last = items[-1]
        fate = _fate(last, found, ran, open_keys, state.round)
        base = standing.get(key, last.finding) if fate == "open" else last.finding
        out.append(
            base.to_json()
            | {
                "role": role,
                "rounds": sorted({x.round for x in items}),
                "status": _status(fate),
                "fate": fate,
                "blocking": fate == "open",
            }
        )
    raised_keys = {subject(x.finding) for x in found}
    for f in remaining:  # what no review raised: an INCONCLUSIVE role, an edit that changed nothing
        if subject(f) not in raised_keys:
            out.append(
                f.to_json() | {"rounds": [state.round], "status": "open", "fate": "open", "blocking": True}
            )
    return sorted(out, key=lambda d: (not d["blocking"], SEVERITY_ORDER[str(d["severity"])], d["rounds"][0]))


def _status(fate: str) -> str:
    for prefix, status in (
        ("fixed", "fixed"),
        ("raised again", "again"),
        ("not raised", "gone"),
        ("open", "open"),
        ("set aside", "set aside"),
        ("not checked", "unchecked"),
    ):
        if fate.startswith(prefix):
            return status
    return "left"
