"""Every text routine of the offline engine and the mechanical checks runs in time linear in its
input, on any input.

Time here is this thread's CPU time (``time.thread_time``): other processes on a loaded machine
do not add to it, and no assertion compares it with the wall clock. Two judgements, neither of
which a slow machine can tip:

- a bound per kilobyte, generous (``PER_KB``, about 25 times what the routines take), on
  documents hypothesis builds from adversarial pieces (runs of dots, backticks, brackets, links,
  code spans, unclosed fences, capitals, bold terms, pointers, ...) and on a 1 MB line: an
  exponential pattern blows through it on a few dozen characters;
- growth: the same text eight times over costs at most ``GROWTH`` times as much (linear is 8,
  quadratic 64), which a bound per kilobyte cannot see at sizes a test can afford.
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from timekit import stopped_after

from pipeline.agents.roles import instructions_for, load_roles
from pipeline.checks.engine import CheckRequest, run_checks
from pipeline.errors import InputError
from pipeline.formats.prose import parse_prose
from pipeline.offline import adversarial, auditor, comprehension, fixer, instruction
from pipeline.offline.edit_io import span_edit
from pipeline.offline.text import (
    clean,
    code_spans,
    doc_from_text,
    keywords,
    known_acronyms,
    parse_house_style,
    sentences,
)

ROOT = Path(__file__).resolve().parent.parent
PER_KB = 0.25
"""CPU seconds a routine may take per kilobyte of input (they take about 0.01)."""
BASE = 0.5
"""CPU seconds any routine may take on top, whatever the size."""
GROWTH = 24
"""How much more a routine may take on eight times the text (linear: 8; quadratic: 64)."""
FLOOR = 0.02
"""Below this many CPU seconds a time is measurement noise: growth is judged from here."""

PIECES = (
    "namespace.`publishConnectionDetailsTo.configRef` will",
    "Use the API.[link](https://example.com/aaaaaaaaaaaaaaaaaaaaaaa) and go on.",
    "a" + "." * 40 + " x",
    "`" * 9,
    "``a`b`` c",
    "[" * 7,
    "](" * 5,
    "(" * 6,
    ")" * 3,
    "**" * 4,
    "*_" * 5,
    "~~",
    "_",
    "[^1]",
    "[^x]: a note",
    "\ue000",
    "```python\n",
    "~~~\n",
    "    indented code\n",
    "# Title\n",
    "## Overview\n",
    "## Section\n\n**TL;DR:** The section in one line.\n",
    "### Sub\n",
    "- item",
    "1. item",
    "> quoted",
    "| a | b |\n| --- | --- |\n| c | d |\n",
    "<!-- comment -->",
    "<div>\n",
    "<https://x.example>",
    "https://example.com/a.b.c",
    "ABC",
    "(ABC)",
    "ABC (all before close)",
    "Long Form Words (LFW)",
    "the LB of a load balancer",
    "**Term** is a thing.",
    "**term**: the definition",
    "see the Foo section",
    "§Foo",
    '§"Foo bar"',
    "(see §Gate and D3)",
    "(per D27)",
    "§x and D1",
    "as described below",
    "as shown below:",
    "we decided to",
    "TBD",
    "TODO",
    "very",
    "arguably might perhaps",
    " — ",
    " -- ",
    "; ",
    "word",
    "Word",
    "The",
    " ",
    "\n",
    "\n\n",
    "\t",
    "'a', ",
    '"a", ',
    "(a) ",
    "(1) ",
    "e.g.",
    "etc.",
    "implementation-plan.md",
    "[x](plan/a.md)",
    '**Full design:** design.md §"x"',
    "file.py:12",
    "sends a GOAWAY",
    "the READY state",
    "<!-- workflow-sha: " + "0" * 40 + " -->",
)


@st.composite
def documents(draw: st.DrawFn, max_parts: int = 40) -> str:
    """A Markdown document of adversarial pieces, each repeated, joined as text, lines or
    paragraphs."""
    parts = draw(
        st.lists(
            st.tuples(
                st.sampled_from(PIECES),
                st.integers(min_value=1, max_value=80),
                st.sampled_from(("", " ", "\n", "\n\n")),
            ),
            min_size=1,
            max_size=max_parts,
        )
    )
    return "".join((piece + gap) * times for piece, times, gap in parts)


@cache
def _instructions(role: str) -> str:
    return instructions_for(load_roles(ROOT)[role], ROOT)


Thunk = Callable[[], object]
Routine = Callable[[str], Thunk]
"""A routine under test: given the text, whatever it needs is made ready untimed, and the
thunk it returns is the work that is timed."""


def _audit(text: str) -> Thunk:
    view = parse_prose(text)
    words = _instructions("readability-auditor")
    rules, known, keys = parse_house_style(words), known_acronyms(words), keywords(words)
    return lambda: [
        auditor.audit(view, 1, len(view.lines), rules, known, keys, seed) for seed in (True, False)
    ]


def _comprehension(text: str) -> Thunk:
    doc = doc_from_text(text)
    view = parse_prose(text, doc.lines)
    words = _instructions("comprehension-review")
    return lambda: comprehension.review(doc, view, known_acronyms(words), keywords(words))


def _fixes(text: str) -> Thunk:
    """The author's and the editor's fixes for what both reviewers report."""
    view = parse_prose(text)
    words = _instructions("readability-auditor")
    found = auditor.audit(
        view, 1, len(view.lines), parse_house_style(words), known_acronyms(words), keywords(words)
    )
    found += comprehension.review(doc_from_text(text), view, known_acronyms(words), keywords(words))
    editor = _instructions("inline-editor")
    return lambda: fixer.apply(text, found, editor)


def _text_routines(text: str) -> Thunk:
    def run() -> None:
        sentences(text)
        for line in text.split("\n"):
            clean(line)
            code_spans(line)

    return run


def _instruction(text: str) -> Thunk:
    said = 'replace "a" with "b"; append "TBD";' + text[:4000]
    return lambda: (instruction.requests(text.replace("\n", ";")), instruction.apply(text, said, None))


def _editor_write(text: str) -> Thunk:
    changed = text.replace("a", "b", 1) + "\nmore"
    return lambda: span_edit(text, changed)


def _checks(text: str, folder: Path) -> Thunk:
    path = folder / "design.md"
    path.write_text(text, encoding="utf-8")
    return lambda: run_checks(CheckRequest(design_path=path, target="design", scope="whole-doc"))


def _log(text: str) -> Thunk:
    log = "# Log\n\n## Decision Log\n\n" + text
    return lambda: adversarial.check(log)


def _refused(routine: Routine) -> Routine:
    """The routine, its set-up included, where the input may be refused by name."""

    def ready(text: str) -> Thunk:
        try:
            return routine(text)
        except InputError:
            return lambda: None

    return ready


def routines(folder: Path) -> dict[str, Routine]:
    return {
        "the prose view": lambda text: lambda: parse_prose(text),
        "sentences, clean lines, code spans": _text_routines,
        "the readability auditor": _audit,
        "the comprehension reviewer": _refused(_comprehension),
        "the fixes": _refused(_fixes),
        "the editor's instructions": _instruction,
        "the editor's write": _editor_write,
        "the mechanical checks": lambda text: _checks(text, folder),
        "the adversarial review": _log,
    }


def cpu(routine: Routine, text: str, repeats: int = 1) -> float:
    """The least CPU time of ``repeats`` runs of the routine's work, the garbage collector held
    off while it is timed."""
    with stopped_after():
        work = routine(text)
    best = float("inf")
    for _ in range(repeats):
        gc.disable()
        try:
            start = time.thread_time()
            with stopped_after(), contextlib.suppress(InputError):  # refusing by name answers too
                work()
            best = min(best, time.thread_time() - start)
        finally:
            gc.enable()
    return best


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Routine]:
    """The routines, each run once on a small document (imports and caches are not growth)."""
    found = routines(tmp_path_factory.mktemp("linear"))
    for routine in found.values():
        routine("# Title\n\n## Overview\n\nA short ABC document (see §Overview). Use `x`.\n")()
    return found


def within_budget(routines: dict[str, Routine], text: str) -> None:
    kb = len(text.encode("utf-8")) / 1024
    for name, routine in routines.items():
        took = cpu(routine, text)
        assert took <= BASE + PER_KB * kb, f"{name} took {took:.2f} s of CPU on {kb:.1f} KB"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_every_routine_stays_within_its_budget_per_kilobyte(warm: dict[str, Routine], text: str) -> None:
    within_budget(warm, text)


def grows_linearly(routines: dict[str, Routine], small: str, large: str) -> None:
    """``large`` is eight times ``small``: each routine takes at most GROWTH times as long."""
    for name, routine in routines.items():
        once = max(cpu(routine, small, repeats=2), FLOOR)
        eight = cpu(routine, large)
        assert eight <= GROWTH * once, (
            f"{name}: {eight:.3f} s on {len(large)} characters, {once:.3f} s on {len(small)} "
            f"({eight / once:.0f} times for 8 times the text)"
        )


SIZE = 4000
"""Characters of the smaller text of a growth test (the larger has eight times as many)."""

SHAPES = {
    "a full stop before code": "the namespace.`publishConnectionDetailsTo.configRef` will be read. ",
    "a full stop before a link": "Use the API.[link](https://example.com/aaaaaaaaaaaaaaaaaaaaaaa) and go on. ",
    "dots": "a" + "." * 1000 + " x ",
    "backticks": "`" * 997 + " a ",
    "brackets": "[" * 500 + "a](" * 100 + " ",
    "capitals": "The ABC and DEF of GHI (JKL) MNO. ",
    "bold terms": "**term{i}** is a thing that **term{j}** uses. ",
    "pointers": "As described below, the thing (see §Nothing) works. ",
    "emphasis": "*_" * 300 + " word ",
    "code lists": "`a`, `b`, `c`, " * 30 + "and d. ",
    "asides": "(see §x" + " and D1" * 200 + " !) ",
    "headings": "## Part {i}\n\nSee the Part {j} section and §Part {i}.\n\n",
    "decisions": "### D{i}: Use cache {i}\n**Decision:** Use cache {i} rather than a queue.\n"
    "**Alternatives rejected:** none\n**Rationale:** fast.\n\n",
}


def _numbered(shape: str, count: int) -> str:
    return "".join(shape.format(i=i, j=(i * 7) % count) for i in range(count))


def _grown(shape: str, times: int) -> str:
    """The shape repeated to about ``times`` * SIZE characters (numbered where it says {i})."""
    count = times * max(1, SIZE // len(shape))
    return _numbered(shape, count) if "{i}" in shape else shape * count


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_routine_grows_linearly_on_each_known_shape(warm: dict[str, Routine], shape: str) -> None:
    grows_linearly(warm, _grown(SHAPES[shape], 1), _grown(SHAPES[shape], 8))


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(max_parts=12))
def test_every_routine_grows_linearly_on_generated_documents(warm: dict[str, Routine], unit: str) -> None:
    unit += "\n\n"
    small = unit * max(1, SIZE // len(unit))
    grows_linearly(warm, small, small * 8)


def test_a_one_megabyte_line_stays_within_the_budget(warm: dict[str, Routine]) -> None:
    """One line of a mebibyte made of every adversarial piece without a line break."""
    line = "".join(piece.replace("\n", " ") for piece in PIECES)
    text = "# Title\n\n## Overview\n\n" + line * (1024 * 1024 // len(line)) + "\n"
    within_budget(warm, text)
