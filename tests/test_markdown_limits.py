"""No silent truncation: every Markdown input is read whole or refused by name.

markdown-it stops reading where containers nest ``maxNesting`` deep and drops every block after
that point; a research log with a list nested ten levels once lost four of its seven decisions
and still ended PASS. These tests generate documents with deep lists, long lines and mixed
fences and count what the parsers find against what was written; and a document past the limit
is refused with exit 2, naming the file and the line, with nothing written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from agentkit import make_repo
from conftest import STAMP, CliResult, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_store import snapshot

from pipeline.formats.design_doc import parse_design
from pipeline.formats.markdown import MAX_NESTING, TooDeep, parse_structure
from pipeline.formats.plan import parse_plan_file
from pipeline.formats.prose import parse_prose
from pipeline.formats.research_log import parse_research_log
from pipeline.formats.textio import decode

Cli = Callable[[list[str]], CliResult]
DEEPEST_LIST = (MAX_NESTING - 1) // 2
"""The deepest list read whole (a list level is two of markdown-it's: the list and its item)."""

WORDS = st.text(alphabet="abcdefghij klmnop", min_size=1, max_size=40).map(lambda s: s.strip() or "word")


def deep_list(depth: int, ordered: bool) -> str:
    lines = []
    indent = 0
    for level in range(depth):
        marker = "1. " if ordered else "- "
        lines.append(" " * indent + f"{marker}level {level}")
        indent += len(marker)
    return "\n".join(lines)


def long_line(width: int) -> str:
    return " ".join(["lorem"] * (width // 6 + 1))[:width]


def fence(kind: str, inner: list[str]) -> str:
    """A fenced block holding lines that look like headings and other fences."""
    opener = {"backticks": "```", "tildes": "~~~", "long": "````"}[kind]
    fake = [
        "## Not a section",
        "### D99: Not a decision",
        "```" if kind != "backticks" else "~~~",
        *inner,
    ]
    return "\n".join([opener + "text", *fake, opener])


@st.composite
def filler(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["list", "long", "fence", "quote", "paragraph"]))
    if kind == "list":
        return deep_list(draw(st.integers(1, DEEPEST_LIST - 1)), draw(st.booleans()))
    if kind == "long":
        return long_line(draw(st.integers(200, 20_000)))
    if kind == "fence":
        return fence(
            draw(st.sampled_from(["backticks", "tildes", "long"])), draw(st.lists(WORDS, max_size=3))
        )
    if kind == "quote":
        depth = draw(st.integers(1, 60))
        return "> " * depth + draw(WORDS)
    return draw(WORDS)


@dataclass
class Generated:
    text: str
    decisions: int
    sections: int


@st.composite
def research_logs(draw: st.DrawFn) -> Generated:
    count = draw(st.integers(1, 9))
    parts = ["# Research log", "", "## Decision Log", ""]
    for n in range(1, count + 1):
        parts += [draw(filler()), "", f"### D{n}: Decision {n}", "", f"**Decision:** do {n}.", ""]
        parts += [f"**Alternatives rejected:** other {n}.", "", draw(filler()), ""]
    parts += ["## Adversarial gate record", "", "### 2026-11-20 — PASS", ""]
    return Generated("\n".join(parts), count, count)


@st.composite
def designs(draw: st.DrawFn) -> Generated:
    count = draw(st.integers(1, 8))
    parts = [STAMP, "# Design", "", "## Overview", "", draw(filler()), ""]
    for n in range(1, count + 1):
        parts += [
            f"## Section {n}",
            "",
            f"**TL;DR:** section {n}.",
            "",
            draw(filler()),
            "",
            draw(filler()),
            "",
        ]
    return Generated("\n".join(parts), 0, count + 1)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example],
)
@given(research_logs())
def test_every_decision_of_a_generated_log_is_found(doc: Generated) -> None:
    log = parse_research_log(decode(doc.text.encode(), Path("research-log.md")))
    assert [d.id for d in log.decisions] == [f"D{n}" for n in range(1, doc.decisions + 1)]
    headings = parse_structure(doc.text, doc.text.split("\n")).headings
    assert sum(1 for h in headings if h.level == 3) == doc.decisions + 1  # and the gate entry


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example],
)
@given(designs())
def test_every_section_of_a_generated_design_is_found(doc: Generated) -> None:
    design = parse_design(decode(doc.text.encode(), Path("design.md")))
    names = [s.name for s in design.sections if s.level == 2]
    assert names == ["Overview", *(f"Section {n}" for n in range(1, doc.sections))]
    assert len(parse_prose(doc.text).blocks) > 0


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(DEEPEST_LIST + 1, 3 * DEEPEST_LIST), st.booleans(), st.sampled_from(["log", "design", "plan"])
)
def test_past_the_limit_a_document_is_refused_at_its_line(depth: int, ordered: bool, which: str) -> None:
    body = deep_list(depth, ordered)
    head = {
        "log": "# L\n\n## Decision Log\n\n",
        "design": f"{STAMP}\n# D\n\n## Overview\n\n",
        "plan": "# P\n\n",
    }
    text = head[which] + body + "\n\n## After\n"
    parse = {"log": parse_research_log, "design": parse_design, "plan": parse_plan_file}[which]
    with pytest.raises(TooDeep) as caught:
        parse(decode(text.encode(), Path(f"{which}.md")))
    error = caught.value
    assert error.file == f"{which}.md" and error.line is not None
    assert head[which].count("\n") < error.line <= text.count("\n")
    assert "list nested deeper than" in error.message


def test_block_quotes_past_the_limit_are_refused() -> None:
    text = "# T\n\n" + "> " * (MAX_NESTING + 5) + "deep\n\n## After\n"
    with pytest.raises(TooDeep, match="block quotes nested deeper"):
        parse_structure(text, text.split("\n"), "x.md")


# The reproductions, through the commands


SEVEN = "\n".join(
    f"### D{n}: Decision {n}\n\n**Decision:** do {n}.\n\n**Alternatives rejected:** not {n}.\n\n**Rationale:** r.\n"
    for n in range(1, 8)
)


def _log_with(d_root: Path, block: str) -> None:
    log = d_root / "_workflow" / "research-log.md"
    text = log.read_text()
    head, _, rest = text.partition("## Decision Log")
    gate = rest[rest.index("## Adversarial gate record") :]
    log.write_text(f"{head}## Decision Log\n\n{block}\n\n{SEVEN}\n{gate}")


def test_a_list_ten_levels_deep_in_the_log_hides_no_decision(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    _log_with(d.root, deep_list(10, False))
    log = parse_research_log(decode(d.research_log.read_bytes(), d.research_log))
    assert [x.id for x in log.decisions] == [f"D{n}" for n in range(1, 8)]


def test_a_log_nested_3000_levels_is_refused_with_nothing_written(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    _log_with(d.root, deep_list(3000, False))
    before = snapshot(tmp_path)
    result = run_cli(["create", str(d.root), "--runs-dir", str(tmp_path / "runs")], cwd=d.repo_root)
    assert result.code == 2, result.err
    assert "research-log.md:" in result.err and "list nested deeper than" in result.err
    assert "what to do:" in result.err and "Traceback" not in result.err
    assert snapshot(tmp_path) == before


def test_a_deep_list_no_longer_hides_a_section_from_check(tmp_path: Path) -> None:
    base = f"{STAMP}\n# T\n\n## Overview\n\nIt works.\n\n"
    missing_tldr = "## Later\n\nNo TL;DR here.\n"
    plain = tmp_path / "plain.md"
    plain.write_text(base + missing_tldr)
    nested = tmp_path / "nested.md"
    nested.write_text(
        base + "## Lists\n\n**TL;DR:** lists.\n\n" + deep_list(10, False) + "\n\n" + missing_tldr
    )
    deep = tmp_path / "deep.md"
    deep.write_text(
        base + "## Lists\n\n**TL;DR:** lists.\n\n" + deep_list(3000, False) + "\n\n" + missing_tldr
    )
    assert run_cli(["check", "--design-path", str(plain)]).code == 1
    assert run_cli(["check", "--design-path", str(nested)]).code == 1
    refused = run_cli(["check", "--design-path", str(deep)])
    assert refused.code == 2 and f"{deep}:" in refused.err and "list nested deeper than" in refused.err
