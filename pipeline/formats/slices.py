"""The deterministic slice partition of docs/formats.md §8, its self-check and the whole-doc guard.

Pure functions of the design's lines and three numbers, so two runs on the same document
always fan out the same way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pipeline.errors import WiringError
from pipeline.formats.findings import WIRING_ERROR, Finding
from pipeline.formats.markdown import code_blocks
from pipeline.settings import Limits

Slice = tuple[int, int]


def _blocks(lines: Sequence[str]) -> list[tuple[int, int]]:
    return code_blocks("\n".join(lines) + "\n")


def code_lines(lines: Sequence[str], blocks: list[tuple[int, int]] | None = None) -> frozenset[int]:
    """1-based lines inside fenced or indented code, fence markers included (CommonMark)."""
    found = _blocks(lines) if blocks is None else blocks
    return frozenset(n for first, last in found for n in range(first, last + 1))


def cut_candidates(lines: Sequence[str], code: frozenset[int] | None = None) -> list[int]:
    """1-based lines starting with ``## `` or ``# Part`` outside fenced code."""
    code = code_lines(lines) if code is None else code
    return [
        number
        for number, line in enumerate(lines, start=1)
        if number not in code and (line.startswith("## ") or line.startswith("# Part"))
    ]


def blank_candidates(lines: Sequence[str], code: frozenset[int] | None = None) -> list[int]:
    """Blank lines outside code: a blank line inside a fence is never a cut point (§8.3)."""
    code = code_lines(lines) if code is None else code
    return [n for n, line in enumerate(lines, start=1) if not line.strip() and n not in code]


def expected_slice_count(total_lines: int, window: int = 200, cap: int = 6, single_max: int = 250) -> int:
    if total_lines <= single_max:
        return 1
    return max(1, min(cap, math.ceil(total_lines / window)))


def _nearest(points: Sequence[int], target: int, reach: float) -> int | None:
    best: int | None = None
    for point in points:
        distance = abs(point - target)
        if distance > reach:
            continue
        if best is None or distance < abs(best - target) or (distance == abs(best - target) and point < best):
            best = point
    return best


def _outside_code(start: int, blocks: list[tuple[int, int]]) -> int:
    """A start inside a code block (after its opening line, up to and including its closing
    line) moves to the nearer of the opening line and the line after the closing line (ties:
    the opening line): code is never cut (§8.3)."""
    for first, last in blocks:
        if first < start <= last:
            return first if start - first <= last + 1 - start else last + 1
    return start


def partition(lines: Sequence[str], window: int = 200, cap: int = 6, single_max: int = 250) -> list[Slice]:
    """Contiguous 1-based inclusive slices covering every line exactly once; a slice never
    starts inside code, and one whose start has nowhere to go is dropped (its lines stay
    with the slice before it), so there may be fewer than ``expected_slice_count``."""
    total = len(lines)
    if total == 0:
        return []
    n = expected_slice_count(total, window, cap, single_max)
    if n == 1:
        return [(1, total)]
    blocks = _blocks(lines)
    code = code_lines(lines, blocks)
    candidates = cut_candidates(lines, code)
    blanks = blank_candidates(lines, code)
    reach = window / 2
    starts = [1]
    for i in range(1, n):
        target = 1 + math.floor(i * total / n + 0.5)
        snapped = _nearest(candidates, target, reach)
        if snapped is None:
            snapped = _nearest(blanks, target, reach)
        if snapped is None:
            snapped = target
        # A snapped start must pass the previous one and leave room for the slices to come.
        if snapped <= starts[-1] or snapped > total - (n - 1 - i):
            snapped = target
        moved = _outside_code(snapped, blocks)
        if starts[-1] < moved <= total:
            starts.append(moved)
    ends = [s - 1 for s in starts[1:]] + [total]
    return list(zip(starts, ends, strict=True))


def partition_for(lines: Sequence[str], limits: Limits) -> list[Slice]:
    return partition(lines, limits.window, limits.cap, limits.single_slice_max)


@dataclass(frozen=True, slots=True)
class FanOut:
    total_lines: int
    slices: list[Slice]

    @property
    def slice_count(self) -> int:
        return len(self.slices)

    def to_json(self) -> dict[str, object]:
        return {
            "total_lines": self.total_lines,
            "slice_count": self.slice_count,
            "slices": [list(s) for s in self.slices],
        }


def assert_fanout(spawned: int, lines: Sequence[str], limits: Limits) -> None:
    """The orchestrator self-check: spawned auditors must equal the partition's slice_count."""
    expected = len(partition_for(lines, limits))
    if spawned != expected:
        raise WiringError(
            f"slice-count self-check failed: {spawned} auditor spawn(s) planned for a "
            f"{len(lines)}-line design, the partition demands {expected}",
            hint="the fan-out must spawn exactly one auditor per slice of the deterministic partition",
        )


def whole_doc_guard(count: int | None, total: int | None, file: str, floor: int) -> Finding | None:
    """The agent-side guard: one slice over the floor (``[partition] whole_doc_floor``) is a
    wiring error, not a review. A spawn that carries neither count (design-sync's single prose
    pass) never trips it."""
    if count is None or total is None:
        return None
    if count == 1 and total > floor:
        return Finding(
            rule=WIRING_ERROR,
            severity="blocker",
            file=file,
            message=f"whole-doc guard: slice_count 1 for a {total}-line design (floor {floor}); "
            "the fan-out collapsed",
            suggested_fix="re-run the partition and spawn one auditor per slice",
        )
    return None
