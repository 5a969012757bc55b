from __future__ import annotations

import json
from pathlib import Path
from typing import cast

import pytest
from conftest import body, design, write
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.errors import DuplicateSection
from pipeline.formats.design_doc import load_design
from pipeline.formats.findings import WIRING_ERROR, Finding, Severity
from pipeline.formats.settled import SettledState, SliceAudit, section_hashes, spans_of


def doc(tmp_path: Path, *sections: str, overview: str = "What this is."):  # type: ignore[no-untyped-def]
    text = design(*sections).replace("What this is.", overview)
    return load_design(write(tmp_path / "design.md", text))


def finding(
    section: str | None, severity: Severity = "should-fix", rule: str = "house-style", line: int | None = 1
) -> Finding:
    return Finding(
        rule=rule,
        severity=severity,
        file="design.md",
        line=line,
        section=section,
        message="m",
        suggested_fix="f",
    )


def whole(d, findings: list[Finding]) -> list[SliceAudit]:  # type: ignore[no-untyped-def]
    """One audit of the whole document with ``findings``."""
    return [SliceAudit((1, len(d.lines)), findings)]


def test_round_decisions(tmp_path: Path) -> None:
    d1 = doc(tmp_path, body("A"), body("B"))
    h1 = section_hashes(d1)
    state = SettledState()
    assert set(state.decide(h1).values()) == {"audit"}
    state.update(h1, spans_of(d1), whole(d1, [finding("B")]), round_=1)
    assert state.decide(h1) == {"Title": "skip", "Overview": "skip", "A": "skip", "B": "audit"}
    # B changes; A stays settled and its re-flag is dropped, B's finding is kept.
    h2 = section_hashes(doc(tmp_path, body("A"), body("B", "Rewritten.")))
    kept = state.filter(h2, [finding("A"), finding("B"), finding(None)])
    assert [f.section for f in kept] == ["B", None]


def test_wiring_errors_are_never_dropped(tmp_path: Path) -> None:
    d = doc(tmp_path, body("A"))
    h = section_hashes(d)
    state = SettledState()
    state.update(h, spans_of(d), whole(d, []), round_=1)
    wiring = finding("A", "blocker", WIRING_ERROR)
    assert state.filter(h, [wiring, finding("A")]) == [wiring]


def test_anchor_edit_reopens_every_section(tmp_path: Path) -> None:
    d1 = doc(tmp_path, body("A"), body("B"))
    h1 = section_hashes(d1)
    state = SettledState()
    state.update(h1, spans_of(d1), whole(d1, []), round_=1)
    h2 = section_hashes(doc(tmp_path, body("A"), body("B"), overview="A new pitch."))
    assert set(state.decide(h2).values()) == {"audit"}


def test_core_concepts_folds_in_only_when_present(tmp_path: Path) -> None:
    without = section_hashes(doc(tmp_path, body("A")))
    with_cc = section_hashes(doc(tmp_path, "## Core Concepts\n\n- term\n", body("A")))
    assert without["A"] != with_cc["A"]


def test_suggestions_do_not_unsettle(tmp_path: Path) -> None:
    d = doc(tmp_path, body("A"))
    h = section_hashes(d)
    state = SettledState()
    state.update(h, spans_of(d), whole(d, [finding("A", "suggestion")]), round_=1)
    assert state.decide(h)["A"] == "skip"


def test_skippable_slices(tmp_path: Path) -> None:
    d = doc(tmp_path, body("A"), body("B"))
    h = section_hashes(d)
    state = SettledState()
    state.update(h, spans_of(d), whole(d, [finding("B")]), round_=1)
    a, b = d.find("A"), d.find("B")
    assert a and b
    assert state.skippable([(1, a.end), (b.start, b.end)], spans_of(d), h) == [True, False]


def test_serialization_round_trip(tmp_path: Path) -> None:
    d = doc(tmp_path, body("A"))
    h = section_hashes(d)
    state = SettledState()
    state.update(h, spans_of(d), whole(d, [finding("A")]), round_=2)
    again = SettledState.from_json(json.loads(json.dumps(state.to_json())))
    assert again == state and again.decide(h) == state.decide(h)
    with pytest.raises(ValueError):
        SettledState.from_json({"A": {"hash": 1}})


def test_duplicate_sections_are_refused(tmp_path: Path) -> None:
    with pytest.raises(DuplicateSection, match='two sections are named "A"'):
        section_hashes(doc(tmp_path, body("A"), body("A")))


def test_an_unplaced_finding_unsettles_every_section_of_its_slice(tmp_path: Path) -> None:
    d = doc(tmp_path, body("A"), body("B"), body("C"))
    h, spans = section_hashes(d), spans_of(d)
    b, c = d.find("B"), d.find("C")
    assert b and c
    state = SettledState()
    # Slice 2 (B and C) reported a should-fix that names no section and no line.
    state.update(
        h,
        spans,
        [SliceAudit((1, b.start - 1), []), SliceAudit((b.start, c.end), [finding(None, line=None)])],
        1,
    )
    assert state.decide(h) == {"Title": "skip", "Overview": "skip", "A": "skip", "B": "audit", "C": "audit"}
    # A line inside a section places it there; the title line (a whole-document finding) does not.
    state = SettledState()
    state.update(h, spans, [SliceAudit((b.start, c.end), [finding(None, line=c.start + 2)])], 1)
    assert state.decide(h)["B"] == "skip" and state.decide(h)["C"] == "audit"
    state = SettledState()
    title = d.find("Title")
    assert title
    state.update(h, spans, [SliceAudit((b.start, c.end), [finding(None, line=title.start)])], 1)
    assert state.decide(h)["B"] == state.decide(h)["C"] == "audit"
    # A section that does not exist is no place either.
    state = SettledState()
    state.update(h, spans, [SliceAudit((b.start, c.end), [finding("Ghost", line=None)])], 1)
    assert state.unchecked(h) == ["Title", "Overview", "A", "B", "C"]


def test_a_whole_doc_role_unsettles_its_section_or_everything(tmp_path: Path) -> None:
    d = doc(tmp_path, body("A"), body("B"))
    h, spans = section_hashes(d), spans_of(d)
    state = SettledState()
    state.update(h, spans, whole(d, []), 1)
    state.unsettle(h, spans, [finding("A")], 1)
    assert state.unchecked(h) == ["A"]
    state.update(h, spans, whole(d, []), 2)
    state.unsettle(h, spans, [finding(None, line=None), finding("B", "suggestion")], 2)
    assert state.unchecked(h) == list(h)


# The property: over random documents, partitions and rounds of random findings (with and
# without sections and lines, valid or not), a round is never dual-clean while a section's
# current text has no audit that came back clean for it.

SEVERITIES = ("blocker", "should-fix", "suggestion")


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, object]:
    lengths = draw(st.lists(st.integers(1, 12), min_size=1, max_size=6))
    total = sum(lengths)
    cuts = sorted(draw(st.sets(st.integers(2, total), max_size=3))) if total > 1 else []
    starts = [1, *cuts]
    slices = [(s, (starts[i + 1] - 1) if i + 1 < len(starts) else total) for i, s in enumerate(starts)]
    finding_st = st.tuples(
        st.sampled_from(SEVERITIES),
        st.one_of(st.none(), st.integers(0, len(lengths) - 1), st.just("Ghost")),
        st.one_of(st.none(), st.integers(1, total + 3)),
    )
    round_st = st.tuples(
        st.sets(st.integers(0, len(lengths) - 1)),  # sections the author changed before the round
        st.lists(
            st.tuples(st.booleans(), st.lists(finding_st, max_size=3)),
            min_size=len(slices),
            max_size=len(slices),
        ),
    )
    return {"lengths": lengths, "slices": slices, "rounds": draw(st.lists(round_st, min_size=1, max_size=5))}


def _spans(lengths: list[int]) -> list[tuple[str, int, int]]:
    out, line = [], 1
    for i, n in enumerate(lengths):
        out.append((f"S{i}", line, line + n - 1))
        line += n
    return out


def _place(f: Finding, spans: list[tuple[str, int, int]]) -> str | None:
    """Where a finding is, as the review output contract says (an independent reading)."""
    names = [n for n, _, _ in spans]
    if f.section in names:
        return f.section
    if f.line is None or f.line == spans[0][1]:
        return None
    return next((n for n, a, b in spans if a <= f.line <= b), None)


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_never_dual_clean_with_an_unchecked_blocking_finding(case: dict[str, object]) -> None:
    lengths: list[int] = case["lengths"]  # type: ignore[assignment]
    slices: list[tuple[int, int]] = case["slices"]  # type: ignore[assignment]
    spans = _spans(lengths)
    version = {n: 0 for n, _, _ in spans}
    state = SettledState()
    clean_on: dict[str, set[int]] = {n: set() for n in version}  # versions some audit found clean
    Audit = tuple[bool, list[tuple[Severity, str | int | None, int | None]]]
    rounds = cast(list[tuple[list[int], list[Audit]]], case["rounds"])
    for number, (changed, audits) in enumerate(rounds, start=1):
        for i in changed:
            version[f"S{i}"] += 1
        hashes = {n: f"{n}@{v}" for n, v in version.items()}
        skip = state.skippable(slices, spans, hashes)
        ran: list[tuple[tuple[int, int], list[Finding]]] = []
        inconclusive = False
        for part, skipped, (ok, raw) in zip(slices, skip, audits, strict=True):
            if skipped:
                continue
            if not ok:
                inconclusive = True
                continue
            found = [
                Finding(
                    severity=sev,
                    section=f"S{where}" if isinstance(where, int) else where,
                    line=line,
                    rule="r",
                    message="m",
                )
                for sev, where, line in raw
            ]
            ran.append((part, found))
        kept = state.filter(hashes, [f for _, fs in ran for f in fs], spans)
        audits_ = [SliceAudit(part, state.filter(hashes, fs, spans)) for part, fs in ran]
        state.update(hashes, spans, audits_, number)
        for part, fs in ran:
            covered = [n for n, a, b in spans if a <= part[1] and b >= part[0]]
            flagged = {_place(f, spans) for f in fs if f.blocking}
            for name in covered:
                if None not in flagged and name not in flagged:
                    clean_on[name].add(version[name])
        dual_clean = not any(f.blocking for f in kept) and not inconclusive
        unchecked = [n for n in version if version[n] not in clean_on[n]]
        if dual_clean:
            assert not unchecked, f"round {number} dual-clean with unchecked {unchecked}"
        assert set(state.unchecked(hashes)) >= set(unchecked)
        # An unplaced blocking finding is never dropped and never lets its round pass.
        unplaced = [f for _, fs in ran for f in fs if f.blocking and _place(f, spans) is None]
        assert not (unplaced and dual_clean)
