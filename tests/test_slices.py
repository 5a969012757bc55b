from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import pytest
from conftest import write
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.errors import WiringError
from pipeline.formats.slices import (
    assert_fanout,
    code_lines,
    cut_candidates,
    expected_slice_count,
    partition,
    whole_doc_guard,
)
from pipeline.settings import Limits

line_kinds = st.sampled_from(["text", "", "## H", "# Part 1", "```", "   ", "### sub"])


@st.composite
def documents(draw: st.DrawFn) -> list[str]:
    kinds = draw(st.lists(line_kinds, min_size=1, max_size=2500))
    return [f"{k} {i}" if k in ("text", "## H", "# Part 1", "### sub") else k for i, k in enumerate(kinds)]


@settings(max_examples=150, deadline=None)
@given(documents(), st.integers(min_value=20, max_value=400), st.integers(min_value=1, max_value=8))
def test_partition_properties(lines: list[str], window: int, cap: int) -> None:
    total = len(lines)
    parts = partition(lines, window, cap)
    n = 1 if total <= 250 else min(cap, math.ceil(total / window))
    assert n == expected_slice_count(total, window, cap)
    assert 1 <= len(parts) <= n  # a slice whose start has nowhere to go is dropped
    assert parts[0][0] == 1 and parts[-1][1] == total
    for (s1, e1), (s2, _) in itertools.pairwise(parts):
        assert s2 == e1 + 1 and s2 > s1  # contiguous, strictly increasing
    assert all(s <= e for s, e in parts)  # no empty slice
    code = code_lines(lines)
    opening = {n for n in code if n - 1 not in code}
    for start, _ in parts[1:]:
        # Code is never cut: a start is outside code or on a code block's opening line.
        assert start not in code or start in opening or start - 1 not in code
    if not code:  # without code nothing moves or drops: the rule as before
        assert len(parts) == n
        candidates = set(cut_candidates(lines))
        for i, (start, _) in enumerate(parts[1:], start=1):
            target = 1 + math.floor(i * total / n + 0.5)
            snapped_ok = start in candidates or not lines[start - 1].strip()
            assert start == target or (snapped_ok and abs(start - target) <= window / 2)


@settings(max_examples=60, deadline=None)
@given(documents())
def test_prefers_candidates_over_blanks(lines: list[str]) -> None:
    parts = partition(lines)
    candidates = cut_candidates(lines)
    for i, (start, _) in enumerate(parts[1:], start=1):
        target = 1 + math.floor(i * len(lines) / len(parts) + 0.5)
        near = [c for c in candidates if abs(c - target) <= 100]
        if near and start != target:
            assert start in candidates


def test_worked_example() -> None:
    lines = ["text"] * 1000
    lines[180] = "## A"  # line 181
    lines[420] = "# Part 2"  # line 421
    lines[610] = ""  # line 611
    assert partition(lines) == [(1, 180), (181, 420), (421, 610), (611, 800), (801, 1000)]


def test_fences_hide_candidates() -> None:
    lines = ["x"] * 600
    lines[299] = "```"
    lines[300] = "## inside"
    lines[301] = "```"
    assert 301 not in cut_candidates(lines)
    lines[301] = "x"  # unterminated: everything after stays fenced
    assert cut_candidates(lines) == []


def test_a_start_inside_a_fence_moves_to_the_nearer_edge_of_the_fence() -> None:
    # 600 lines, one fence from line 150 to line 560: the targets 201 and 401 have no
    # heading or blank line outside code within reach, so both fall inside the fence.
    lines = ["text"] * 600
    lines[149] = "```"
    lines[150:559] = ["code"] * 409
    lines[559] = "```"
    # 201 is nearer the opening line (150) than the line after the closing one (561); 401
    # is nearer 561. No slice starts inside the fence and the fence is never cut.
    assert partition(lines) == [(1, 149), (150, 560), (561, 600)]


def test_a_slice_with_nowhere_to_go_is_dropped_and_slice_count_is_what_remains(tmp_path: Path) -> None:
    # A 500-line API appendix that is one unclosed fence from line 1: slice 2's target (251)
    # is as near the opening line as the line after the end; the opening line wins the tie,
    # is not after the previous start, and the slice is dropped: its lines stay with slice 1.
    lines = ["```text", *["GET /v1/thing"] * 499]
    assert partition(lines) == [(1, 500)]
    # The fence opening at line 2 with 300 lines of code before the end of a 600-line doc:
    lines = ["# T", "```", *["code"] * 299, "```", *["prose"] * 298]
    parts = partition(lines)
    assert all(not (2 < start <= 302) for start, _ in parts)
    assert_fanout(len(parts), lines, Limits())
    with pytest.raises(WiringError):
        assert_fanout(expected_slice_count(len(lines)) + 1, lines, Limits())


def test_a_tie_goes_to_the_opening_line() -> None:
    lines = ["text"] * 400
    lines[100] = "```"  # line 101 opens
    lines[101:300] = ["code"] * 199
    lines[300] = "```"  # line 301 closes; the target 201 is 100 from 101 and 101 from 302
    assert partition(lines) == [(1, 100), (101, 400)]


def test_small_document_is_one_slice() -> None:
    assert partition(["x"] * 250) == [(1, 250)]
    assert len(partition(["x"] * 251)) == 2
    assert len(partition(["x"] * 20_000)) == 6


def test_self_check_and_guard() -> None:
    limits = Limits()
    assert_fanout(3, ["x"] * 500, limits)
    with pytest.raises(WiringError, match="2 auditor spawn"):
        assert_fanout(2, ["x"] * 900, limits)
    floor = limits.whole_doc_floor
    assert whole_doc_guard(1, 301, "d.md", floor) is not None
    assert whole_doc_guard(1, 300, "d.md", floor) is None
    assert whole_doc_guard(1, 301, "d.md", 400) is None  # the floor is a setting
    assert whole_doc_guard(2, 900, "d.md", floor) is None
    assert whole_doc_guard(None, None, "d.md", floor) is None  # design-sync's single pass never trips it


def test_slices_cli(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = write(tmp_path / "design.md", "# T\n" + "\n".join(["x"] * 599) + "\n")
    data = json.loads(cli(["slices", str(path)]).out)
    assert data == json.loads(cli(["slices", str(path), "--json"]).out)  # --json says what it prints
    assert next(iter(data)) == "schema_version"
    assert data == {
        "schema_version": 1,
        "total_lines": 600,
        "slice_count": 3,
        "slices": [[1, 200], [201, 400], [401, 600]],
    }
    empty = write(tmp_path / "empty.md", "")
    assert cli(["slices", str(empty)]).code == 2
