"""The cold-read guard matches what a reader sees: an excerpt of the research log hidden by soft
hyphens, ``&nbsp;``, a tag around every word, homoglyphs, letter-spacing or one word per line is
still the log's, and a cold role's Read refuses it; the same words in plain prose are refused as
before, and a file that shares no run of the log's words stays readable."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from agentkit import make_repo
from test_confinement import context, refused

from pipeline.agents.confine import GRAM, GRAM_CHARS, LogWords, fold

CYRILLIC = str.maketrans("aeopcxy", "аеорсху")

OBFUSCATIONS: dict[str, Callable[[list[str]], str]] = {
    "plain": lambda w: " ".join(w),
    "soft hyphens": lambda w: " ".join(x[:2] + "\u00ad" + x[2:] for x in w),
    "zero-width spaces": lambda w: " ".join("\u200b".join(x) for x in w),
    "&nbsp;": lambda w: "&nbsp;".join(w),
    "a tag per word": lambda w: " ".join(f"<span class='w'>{x}</span>" for x in w),
    "homoglyphs": lambda w: " ".join(x.translate(CYRILLIC) for x in w),
    "letter-spacing": lambda w: "  ".join(" ".join(x) for x in w),
    "one word per line": lambda w: "\n".join(w),
    "full-width letters": lambda w: " ".join(
        "".join(chr(ord(c) + 0xFEE0) if c.isascii() and c.isalnum() else c for c in x) for x in w
    ),
}


def _excerpt(log: str, design: str) -> list[str]:
    """Five words in a row from one line of the log that the design does not hold."""
    only = LogWords.of(log, [design]).log_only
    return list(min(g for g in only if sum(map(len, g)) >= GRAM_CHARS and all(w.isalpha() for w in g)))


@pytest.mark.parametrize("how", list(OBFUSCATIONS))
def test_an_obfuscated_excerpt_of_the_log_is_refused_to_a_cold_role(tmp_path: Path, how: str) -> None:
    d = make_repo(tmp_path)
    words = _excerpt(d.research_log.read_text(), d.design.read_text())
    assert len(words) == GRAM
    hidden = d.repo_root / "notes" / "copy.md"
    hidden.parent.mkdir()
    hidden.write_text(f"# Notes\n\nSomething else entirely.\n\n{OBFUSCATIONS[how](words)}\n")
    ctx = context(d, "readability-auditor", tmp_path / "runs")
    ctx.deps.views = None  # the auditor's slice view aside: the guard itself is under test
    assert refused(ctx, "notes/copy.md"), how


def test_text_that_shares_no_run_of_the_log_stays_readable(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    words = _excerpt(d.research_log.read_text(), d.design.read_text())
    other = d.repo_root / "notes" / "other.md"
    other.parent.mkdir()
    other.write_text("# Notes\n\n" + " and ".join(reversed(words)) + "\n\n<b>nothing</b>&nbsp;here\n")
    ctx = context(d, "readability-auditor", tmp_path / "runs")
    ctx.deps.views = None
    assert not refused(ctx, "notes/other.md")


def test_folding_undoes_each_disguise() -> None:
    assert fold("D e c i s i o n") == "Decision"
    assert fold("wr\u00adite\u200bahead") == "writeahead"
    assert fold("<em>cache</em>&nbsp;reads") == "cache reads"
    assert fold("lоg").isascii()  # a Cyrillic o
