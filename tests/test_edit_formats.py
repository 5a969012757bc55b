"""The exact document operations behind the interactive kinds."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import STAMP, body, design

from pipeline.errors import InputError, MalformedEdit
from pipeline.formats.edit_plan import EditPlan
from pipeline.formats.edit_request import EditRequest
from pipeline.formats.edits import (
    add_section,
    move_section,
    remove_section,
    rename_section,
    replace_unique,
    section_body,
)
from pipeline.formats.refs import propagate_plan, references_to, rename_in_design
from pipeline.formats.split import split_design
from pipeline.formats.sync_delta import counterpart, merge_on_top, section_deltas, view_changed

P = Path("design.md")
DOC = design(
    body("A", "Alpha text."), body("B", "Beta text."), body("C", "Gamma text."), "## Decision Records\n"
)


def heads(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("## ")]


def test_sections_are_added_removed_renamed_and_moved_exactly() -> None:
    added = add_section(DOC, P, "New", ["**TL;DR:** N.", "", "New text."], "A")
    assert heads(added) == ["## Overview", "## A", "## New", "## B", "## C", "## Decision Records"]
    assert heads(add_section(DOC, P, "Last", ["x"], None))[-2:] == ["## Last", "## Decision Records"]
    removed = remove_section(DOC, P, "B")
    assert heads(removed) == ["## Overview", "## A", "## C", "## Decision Records"] and "Beta" not in removed
    assert "\n\n\n" not in removed
    assert heads(rename_section(DOC, P, "B", "Bee"))[2] == "## Bee"
    moved = move_section(DOC, P, "A", "C")
    assert heads(moved) == ["## Overview", "## B", "## C", "## A", "## Decision Records"]
    assert sorted(filter(None, moved.splitlines())) == sorted(filter(None, DOC.splitlines()))
    for text in (added, removed, moved):
        assert text.startswith(STAMP + "\n")


def test_malformed_operations_are_refused_with_the_place_and_what_to_do() -> None:
    with pytest.raises(MalformedEdit, match="already has a section") as exc:
        rename_section(DOC, P, "A", "B")
    assert exc.value.line == DOC.splitlines().index("## B") + 1
    with pytest.raises(MalformedEdit, match="names no section") as exc:
        remove_section(DOC, P, "Decision Record")
    assert 'did you mean "Decision Records"' in (exc.value.hint or "")
    with pytest.raises(MalformedEdit, match="occurs 3 times"):
        replace_unique(DOC, "**TL;DR:** Short.", "x", P)
    with pytest.raises(MalformedEdit, match="already follows"):
        move_section(DOC, P, "B", "A")
    with pytest.raises(MalformedEdit, match="one section only"):
        section_body("Text.\n\n## Other\n", "A", Path("c.md"))
    done = replace_unique(DOC, "Beta text.", "Beta prose.", P, "B")
    assert done.section == "B" and "Beta prose." in done.text
    with pytest.raises(MalformedEdit, match="outside"):
        replace_unique(DOC, "Beta text.", "x", P, "A")
    # A text repeated elsewhere (a decision record restating a section) is unique in its section.
    in_b = replace_unique(DOC, "**TL;DR:** Short.", "**TL;DR:** Shorter.", P, "B")
    assert in_b.section == "B" and in_b.text.count("**TL;DR:** Short.") == 2
    b_start = in_b.text.index("## B")
    assert in_b.text.index("**TL;DR:** Shorter.") > b_start


def test_plan_references_are_renamed_repointed_and_removed() -> None:
    plan = '**Full design:** design.md §"A", design-mechanics.md §"A", design.md §"B"\n- [ ] x **Full design:** design.md §"A"\n'
    renamed, change = propagate_plan(plan, "A", "Z", design_only=True)
    assert (
        renamed.splitlines()[0] == '**Full design:** design.md §"Z", design-mechanics.md §"A", design.md §"B"'
    )
    assert change.renamed == 2
    removed, change = propagate_plan(plan, "A", None)
    assert removed == '**Full design:** design.md §"B"\n- [ ] x\n' and change.removed == 3
    assert references_to(plan, "A") == 3 and references_to(plan, "A", design_only=True) == 2
    assert propagate_plan('```\n**Full design:** design.md §"A"\n```\n', "A", None)[1].total == 0
    text, footers, others = rename_in_design(
        'x §"A" y\n\n**Mechanics:** design-mechanics.md §"A"\n', P, "A", "Z"
    )
    assert (footers, others) == (1, 1) and '§"A"' not in text


def test_the_split_keeps_the_summary_and_moves_the_long_form() -> None:
    section = (
        "## Flow\n\n**TL;DR:** Short.\n\nThe overview paragraph.\n\nA worked example, see app.py:12.\n\n"
        "| a | b |\n|---|---|\n\n```mermaid\ngraph TD; A-->B\n```\n\nEdge cases:\n\n- empty input\n\n"
        "### Derivation\n\nLong.\n"
    )
    split = split_design(design(section), P)
    kept = split.design.split("## Flow", 1)[1]
    assert "The overview paragraph." in kept and "graph TD" in kept and "- empty input" in kept
    assert "worked example" not in kept and "| a |" not in kept and "Derivation" not in kept
    assert kept.rstrip().endswith('**Mechanics:** design-mechanics.md §"Flow"')
    moved = split.mechanics.split("## Flow", 1)[1]
    assert "The overview paragraph." in moved and "app.py:12" in moved and "### Derivation" in moved
    assert "graph TD" not in moved and "**TL;DR:**" not in moved and "- empty input" in moved
    assert heads(split.mechanics) == ["## Flow"] and "## Overview" not in split.mechanics


def test_sync_deltas_staleness_and_the_on_top_merge() -> None:
    base = "# M\n\n## A\n\nOne two three. Four.\n\n## B\n\nLong enough text to keep.\n"
    now = "# M\n\n## A\n\nOne two, three. Four.\n\n## Bee\n\nLong enough text to keep.\n\n## C\n\nNew.\n"
    deltas = section_deltas(base, now, P)
    assert [(x.kind, x.name, x.old_name) for x in deltas] == [
        ("changed", "A", None),
        ("renamed", "Bee", "B"),
        ("added", "C", None),
    ]
    assert view_changed(deltas[0], P)
    stale = counterpart("One two three.", base, now, P)
    assert stale is not None and stale.y == "One two, three."
    assert counterpart("Four.", base, now, P) is None
    assert merge_on_top("one two three", "one 2 three", "one two 3") == "one 2 3"
    assert merge_on_top("one two three", "one 2 three", "one II three") is None


def test_a_plan_commits_nothing_when_a_file_moved_on(tmp_path: Path) -> None:
    first, second = tmp_path / "a.md", tmp_path / "b.md"
    first.write_text("head\na\n")
    second.write_text("head\nb\n")
    plan = EditPlan()
    plan.set(first, "head\na2\n")
    plan.set(second, "head\nb2\n")
    second.write_text("head\nchanged meanwhile\n")
    with pytest.raises(InputError, match="changed since"):
        plan.commit()
    assert first.read_text() == "head\na\n"
    second.write_text("head\nb\n")
    assert plan.commit() == [first, second] and plan.commit() == []


def test_each_kind_takes_only_its_own_flags() -> None:
    EditRequest(kind="section-move", section="A", after="B").validate_form()
    with pytest.raises(MalformedEdit, match="needs one of"):
        EditRequest(kind="section-move", section="A").validate_form()
    with pytest.raises(MalformedEdit, match="does not take --new, --old"):
        EditRequest(kind="design-sync", old="x", new="y").validate_form()


def test_the_documented_edit_diagram_is_drawn_from_the_graph() -> None:
    from pipeline.graph.edit.build import build_edit_graph

    doc = (Path(__file__).resolve().parent.parent / "docs" / "edit.md").read_text(encoding="utf-8")
    block = doc.split("<!-- graph:start -->", 1)[1].split("<!-- graph:end -->", 1)[0]
    drawn = build_edit_graph().get_graph().draw_mermaid().strip()
    assert block.strip() == f"```mermaid\n{drawn}\n```"
