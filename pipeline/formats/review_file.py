"""The review file a read-only role's review is kept in on its behalf (the comprehension gate's
``output_path`` at phase 4): its verdict, then its findings."""

from __future__ import annotations

from pathlib import Path

from pipeline.formats.contracts import ReviewOutput
from pipeline.formats.textio import atomic_write


def write_review_file(path: Path, review: ReviewOutput) -> None:
    """Persist a review to a file on a read-only role's behalf (the phase-4 output_path)."""
    lines = [f"Verdict: {review.verdict}", "", "## Structural findings", ""]
    lines += [f"- {f.severity}: {f.describe()}" for f in review.findings] or ["- none"]
    atomic_write(path, "\n".join(lines) + "\n")
