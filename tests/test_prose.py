"""The prose view: what is prose, exactly where, and what is kept aside for the rules that need it."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from pipeline.formats.prose import MASK, parse_prose
from pipeline.formats.slices import code_lines, partition

REAL = Path(__file__).parent / "corpus" / "real"
DOCS = sorted(p for p in REAL.glob("*.md") if p.name != "README.md")

SAMPLE = """---
title: A sample
status: draft
---
# Sample

Intro with `inline code`, a [link](https://example.com/page) and https://bare.example/x.

```python
def f():

    return "not prose"
```

- item one
  continued with <span>html</span>
  - nested item with a [reference][ref]

1. ordered item

> quoted line

<!-- template boilerplate
that spans lines -->

| name | value |
| --- | --- |
| `code_cell` | plain words |

[ref]: https://example.com/ref
"""


def test_front_matter_code_html_and_link_definitions_are_not_prose() -> None:
    v = parse_prose(SAMPLE)
    lines = SAMPLE.split("\n")
    assert v.front_matter is not None and (v.front_matter.start, v.front_matter.end) == (1, 4)
    fence = next(r for r in v.code if r.info == "python")
    assert lines[fence.start - 1] == "```python" and lines[fence.end - 1] == "```"
    comment = v.html[0]
    assert lines[comment.start - 1].startswith("<!--") and lines[comment.end - 1].endswith("-->")
    assert v.references["ref"] == (
        lines.index("[ref]: https://example.com/ref") + 1,
        "https://example.com/ref",
    )
    prose_lines = {n for b in v.blocks for n in range(b.start, b.end + 1)}
    assert not prose_lines & v.non_prose_lines()
    assert all("not prose" not in b.text and "boilerplate" not in b.text for b in v.blocks)


def test_inline_code_urls_link_targets_and_html_are_masked_but_kept() -> None:
    v = parse_prose(SAMPLE)
    intro = next(b for b in v.blocks if b.text.startswith("Intro"))
    assert "inline code" not in intro.prose and "example.com" not in intro.prose
    assert "bare.example" not in intro.prose and "link" in intro.prose
    assert intro.code_spans() == ["inline code"] and intro.links[0][2] == "https://example.com/page"
    item = next(b for b in v.blocks if b.text.startswith("item one"))
    assert "span" not in item.prose and "html" in item.prose


def test_nested_lists_quotes_and_tables_keep_exact_columns() -> None:
    v = parse_prose(SAMPLE)
    lines = SAMPLE.split("\n")
    nested = next(b for b in v.blocks if b.text.startswith("nested item"))
    line, column = nested.locate(0)
    assert lines[line - 1][column:].startswith("nested item") and nested.in_list
    assert "[ref]" not in nested.prose and "reference" in nested.prose
    quoted = next(b for b in v.blocks if b.text == "quoted line")
    assert quoted.in_quote and lines[quoted.start - 1][quoted.columns[0] :] == "quoted line"
    cells = [b for b in v.blocks if b.kind == "cell"]
    assert [b.text for b in cells] == ["name", "value", "plain words"]  # a cell of code is not prose
    for cell in cells:
        assert lines[cell.start - 1][cell.columns[0] :].startswith(cell.text)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.stem)
def test_every_prose_character_is_the_source_character_at_its_line_and_column(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    v = parse_prose(text)
    code = set().union(*(range(r.start, r.end + 1) for r in v.code)) if v.code else set()
    for block in v.blocks:
        for offset, char in enumerate(block.text):
            if char == "\n" or block.prose[offset] == MASK:
                continue
            line, column = block.locate(offset)
            assert v.lines[line - 1][column] == char, (doc.name, line, column)
            assert line not in code


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.stem)
def test_the_partition_never_starts_inside_code(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    lines = text.split("\n")
    regions = parse_prose(text, lines).code
    # A slice may open with a whole code block, never inside one.
    code = {n for r in regions for n in range(r.start + 1, r.end + 1)}
    assert code <= code_lines(lines)
    for window, cap in ((200, 6), (60, 30), (40, 60)):
        parts = partition(lines, window, cap)
        assert parts[0][0] == 1 and parts[-1][1] == len(lines)
        assert all(s2 == e1 + 1 for (_, e1), (s2, _) in itertools.pairwise(parts))
        assert not [s for s, _ in parts if s in code], (doc.name, window)


def test_a_blank_line_inside_a_fence_is_never_a_cut_point() -> None:
    # The target start of slice 2 falls on a blank line inside the fence; the nearest blank
    # line outside it is where the cut goes.
    lines = [f"Line {i} of prose." for i in range(300)]
    lines[145:160] = [
        "```",
        *[f"code {i}" for i in range(6)],
        "",
        *[f"code {i}" for i in range(6)],
        "```",
        "",
    ]
    parts = partition(lines)
    start = parts[1][0]
    assert not (146 <= start <= 159) and lines[start - 1] == ""
