from __future__ import annotations

import datetime as dt
import hashlib
import multiprocessing
from pathlib import Path

import pytest
from conftest import write

from pipeline.errors import InputError
from pipeline.formats.review_log import (
    MutationEntry,
    append_entry,
    parse_entries,
    periodic_whole_doc_due,
    sync_suggested,
    working_mode_count,
)


def entry(kind: str = "phase1-creation", note: str = "Seeded the design.") -> MutationEntry:
    return MutationEntry(
        kind=kind,
        target_file="design.md",
        diff_summary=note,
        mechanical_target="design",
        mechanical="PASS",
        cold_read_scope="whole-doc",
        cold_read="2 findings",
        findings=["should-fix: dense tail"],
        iteration=2,
        budget=3,
        outcome="SHOULD-FIX REMAINS",
        date=dt.date(2026, 11, 29),
    )


def test_render_matches_the_contract(tmp_path: Path) -> None:
    path = tmp_path / "_workflow" / "design-mutations.md"
    result = append_entry(path, entry(), lock_dir=tmp_path / "locks")
    assert result.number == 1 and result.appended
    body = (
        "## Mutation 1 — 2026-11-29 — phase1-creation (design.md)\n\n"
        "**Diff summary**: Seeded the design.\n\n"
        "**Mechanical checks** (target=design): PASS\n"
        "**Cold-read** (scope: whole-doc): 2 findings\n\n"
        "**Findings**:\n- should-fix: dense tail\n\n"
        "**Iterations**: 2 of 3 (SHOULD-FIX REMAINS)\n"
    )
    # The entry ends with its chain digest: its text and the previous entry's (none) digested.
    digest = hashlib.sha256(("\n" + body).encode()).hexdigest()
    assert path.read_text() == body + f"\n<!-- designloop-chain: {digest} -->\n"


def test_numbering_continues_from_highest(tmp_path: Path) -> None:
    path = write(
        tmp_path / "design-mutations.md", "## Mutation 7 — 2026-01-01 — content-edit (design.md)\n\nx\n"
    )
    assert append_entry(path, entry("content-edit"), lock_dir=tmp_path / "locks").number == 8
    assert [e.number for e in parse_entries(path)] == [7, 8]
    assert path.read_text().startswith("## Mutation 7")


def test_append_once_per_run(tmp_path: Path) -> None:
    path = tmp_path / "design-mutations.md"
    first = append_entry(path, entry(), run_id="run-1", lock_dir=tmp_path / "locks")
    again = append_entry(path, entry(), run_id="run-1", lock_dir=tmp_path / "locks")
    assert (first.number, again.number, again.appended) == (1, 1, False)
    assert len(parse_entries(path)) == 1


def test_counters(tmp_path: Path) -> None:
    path = tmp_path / "design-mutations.md"
    kinds = [
        "phase1-creation",
        "mechanics-edit",
        "content-edit",
        "mechanics-edit",
        "section-add",
        "content-edit",
    ]
    for kind in kinds:
        append_entry(path, entry(kind), lock_dir=tmp_path / "locks")
    entries = parse_entries(path)
    # four counted entries so far (mechanics-edit excluded): the next counted one is the 5th
    assert periodic_whole_doc_due(entries, "content-edit")
    assert not periodic_whole_doc_due(entries, "mechanics-edit")
    assert working_mode_count(entries) == 2
    assert "**Working-mode counter**: 2 mechanics-edits since last sync" in path.read_text()
    for _ in range(3):
        append_entry(path, entry("mechanics-edit"), lock_dir=tmp_path / "locks")
    assert sync_suggested(parse_entries(path))
    append_entry(path, entry("design-sync"), lock_dir=tmp_path / "locks")
    assert working_mode_count(parse_entries(path)) == 0


def test_malformed_heading_is_an_input_error(tmp_path: Path) -> None:
    path = write(tmp_path / "design-mutations.md", "## Mutation four\n")
    with pytest.raises(InputError, match="malformed review-log heading"):
        append_entry(path, entry(), lock_dir=tmp_path / "locks")
    assert path.read_text() == "## Mutation four\n"


def _append(path: str, note: str) -> None:
    append_entry(Path(path), entry(note=note), lock_dir=Path(path).parent / "locks")


@pytest.mark.slow
def test_two_processes_append_distinct_entries(tmp_path: Path) -> None:
    path = tmp_path / "design-mutations.md"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append, args=(str(path), f"writer {i}")) for i in range(2)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    entries = parse_entries(path)
    assert sorted(e.number for e in entries) == [1, 2]
    text = path.read_text()
    assert "writer 0" in text and "writer 1" in text and text.count("**Iterations**") == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "design-mutations.md",
        "locks",
    ]  # no lock beside the log
