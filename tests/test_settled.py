from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import body, design, write

from pipeline.errors import DuplicateSection
from pipeline.formats.design_doc import load_design
from pipeline.formats.findings import WIRING_ERROR, Finding
from pipeline.formats.settled import SettledState, section_hashes


def doc(tmp_path: Path, *sections: str, overview: str = "What this is."):  # type: ignore[no-untyped-def]
    text = design(*sections).replace("What this is.", overview)
    return load_design(write(tmp_path / "design.md", text))


def finding(section: str | None, severity: str = "should-fix", rule: str = "house-style") -> Finding:
    return Finding(
        rule=rule,
        severity=severity,
        file="design.md",
        line=1,
        section=section,
        message="m",
        suggested_fix="f",
    )  # type: ignore[arg-type]


def test_round_decisions(tmp_path: Path) -> None:
    d1 = doc(tmp_path, body("A"), body("B"))
    h1 = section_hashes(d1)
    state = SettledState()
    assert set(state.decide(h1).values()) == {"audit"}
    state.update(h1, h1.keys(), [finding("B")], round_=1)
    assert state.decide(h1) == {"Title": "skip", "Overview": "skip", "A": "skip", "B": "audit"}
    # B changes; A stays settled and its re-flag is dropped, B's finding is kept.
    h2 = section_hashes(doc(tmp_path, body("A"), body("B", "Rewritten.")))
    kept = state.filter(h2, [finding("A"), finding("B"), finding(None)])
    assert [f.section for f in kept] == ["B", None]


def test_wiring_errors_are_never_dropped(tmp_path: Path) -> None:
    h = section_hashes(doc(tmp_path, body("A")))
    state = SettledState()
    state.update(h, h.keys(), [], round_=1)
    wiring = finding("A", "blocker", WIRING_ERROR)
    assert state.filter(h, [wiring, finding("A")]) == [wiring]


def test_anchor_edit_reopens_every_section(tmp_path: Path) -> None:
    h1 = section_hashes(doc(tmp_path, body("A"), body("B")))
    state = SettledState()
    state.update(h1, h1.keys(), [], round_=1)
    h2 = section_hashes(doc(tmp_path, body("A"), body("B"), overview="A new pitch."))
    assert set(state.decide(h2).values()) == {"audit"}


def test_core_concepts_folds_in_only_when_present(tmp_path: Path) -> None:
    without = section_hashes(doc(tmp_path, body("A")))
    with_cc = section_hashes(doc(tmp_path, "## Core Concepts\n\n- term\n", body("A")))
    assert without["A"] != with_cc["A"]


def test_suggestions_do_not_unsettle(tmp_path: Path) -> None:
    h = section_hashes(doc(tmp_path, body("A")))
    state = SettledState()
    state.update(h, h.keys(), [finding("A", "suggestion")], round_=1)
    assert state.decide(h)["A"] == "skip"


def test_skippable_slices(tmp_path: Path) -> None:
    d = doc(tmp_path, body("A"), body("B"))
    h = section_hashes(d)
    state = SettledState()
    state.update(h, h.keys(), [finding("B")], round_=1)
    a, b = d.find("A"), d.find("B")
    assert a and b
    assert state.skippable([(1, a.end), (b.start, b.end)], d, h) == [True, False]


def test_serialization_round_trip(tmp_path: Path) -> None:
    h = section_hashes(doc(tmp_path, body("A")))
    state = SettledState()
    state.update(h, h.keys(), [finding("A")], round_=2)
    again = SettledState.from_json(json.loads(json.dumps(state.to_json())))
    assert again == state and again.decide(h) == state.decide(h)
    with pytest.raises(ValueError):
        SettledState.from_json({"A": {"hash": 1}})


def test_duplicate_sections_are_refused(tmp_path: Path) -> None:
    with pytest.raises(DuplicateSection, match='two sections are named "A"'):
        section_hashes(doc(tmp_path, body("A"), body("A")))
