"""What the offline engine finds that a rule can find, how it tells another project's document,
what it says of itself, and how an edit's text is reviewed.

Each rule is shown firing on the text it is for and staying quiet on the text that only looks
like it (the places a wrong finding would come from).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
from conftest import ROOT
from editkit import edit, entry_text, stamped_repo

from pipeline.agents.roles import instructions_for, load_roles
from pipeline.formats.findings import Finding
from pipeline.formats.prose import parse_prose
from pipeline.graph.edit.apply import once
from pipeline.offline import auditor, comprehension, instruction, prose_lint
from pipeline.offline.text import doc_from_text, keywords, known_acronyms, lexicon, parse_house_style

STAMP = "<!-- workflow-sha: " + "a" * 40 + " -->\n"


@cache
def _words(role: str) -> str:
    return instructions_for(load_roles(ROOT)[role], ROOT)


def comprehension_of(text: str, seed: bool | None = None) -> list[Finding]:
    doc = doc_from_text(text)
    words = _words("comprehension-review")
    return comprehension.review(
        doc, parse_prose(text, doc.lines), known_acronyms(words), keywords(words), seed
    )


def audit_of(text: str) -> list[Finding]:
    view = parse_prose(text)
    words = _words("readability-auditor")
    seed = text.startswith("<!-- workflow-sha")
    return auditor.audit(
        view, 1, len(view.lines), parse_house_style(words), known_acronyms(words), keywords(words), seed
    )


def rules(found: list[Finding], rule: str) -> list[tuple[str, int | None, str | None]]:
    return [(f.severity, f.line, f.quote) for f in found if f.rule == rule]


OVERVIEW = "# Zones\n\n## Overview\n\nThe router sends traffic to zones.\n\n"


# Placeholders ------------------------------------------------------------------------------


def test_placeholder_text_is_a_should_fix_in_designloops_design_and_a_suggestion_elsewhere() -> None:
    text = OVERVIEW + "Retention is 30 days (TBD). TODO: pick the zone list. The limit is to be determined.\n"
    assert rules(comprehension_of(text, seed=True), "cr-placeholder") == [
        ("should-fix", 7, "TBD"),
        ("should-fix", 7, "TODO"),
        ("should-fix", 7, "to be determined"),
    ]
    assert {s for s, _, _ in rules(comprehension_of(text, seed=False), "cr-placeholder")} == {"suggestion"}


def test_an_obligation_and_a_todo_list_are_no_placeholders() -> None:
    # GOV.UK's AWS decisions: "The `db_admin` class has to be written" says what someone must
    # do; a "todo list" is a thing; `TODO` in code is code.
    text = OVERVIEW + (
        "The `db_admin` class has to be written. It has to be decided by Friday. "
        "The todo list is long. Grep for `TODO` markers.\n"
    )
    assert not rules(comprehension_of(text, seed=True), "cr-placeholder")


# Footnotes, figures and tables ---------------------------------------------------------------


def test_a_footnote_reference_with_no_footnote_is_reported() -> None:
    text = OVERVIEW + "A defined note[^1] and a lost one[^2]. The lost one again[^2].\n\n[^1]: The note.\n"
    assert rules(comprehension_of(text), "cr-dangling-footnote") == [("should-fix", 7, "[^2]")]


def test_a_figure_or_table_number_nothing_carries_is_reported() -> None:
    text = OVERVIEW + (
        "| a | b |\n| --- | --- |\n| c | d |\n\n"
        "As Table 1 shows, and Table 4 does not, the zones differ. See Figure 2.\n\n"
        "![Figure 1: the zones](zones.png)\n\n"
        "Figure 3 of [the upstream design](https://example.org/design) shows the old zones.\n"
    )
    assert rules(comprehension_of(text), "cr-missing-figure") == [
        ("should-fix", 11, "Table 4"),
        ("should-fix", 11, "Figure 2"),
    ]


# One identifier, two spellings ---------------------------------------------------------------


def test_one_value_under_two_label_prefixes_is_reported_once() -> None:
    text = OVERVIEW + (
        "The record is `dns:api.example.org` here.\n\nLater it is `fqdn:api.example.org`, "
        "and `dns:api.example.org` again; `dns:other.example.org` is another record.\n"
    )
    found = [f for f in comprehension_of(text) if f.rule == "cr-identifier-spelling"]
    assert [(f.severity, f.line, f.quote) for f in found] == [("suggestion", 7, "dns:api.example.org")]
    assert "'fqdn:' on line 9" in found[0].message


# Never muted ----------------------------------------------------------------------------------


def test_a_term_used_long_before_its_definition_is_reported_on_any_document() -> None:
    # The plain word's definition comes 120 lines after its first use: another project's
    # document is told too, as a suggestion.
    filler = "".join(f"Line {n} says what the zones do.\n\n" for n in range(60))
    early = "## Zones\n\nThe lease moves with the zone.\n\n"
    terms = "## Terms\n\n**lease** is a claim on a zone.\n"
    found = rules(comprehension_of(OVERVIEW + early + filler + terms, seed=False), "cr-term-order")
    assert found == [("suggestion", 9, "lease")]
    near = OVERVIEW + early + terms
    assert not rules(comprehension_of(near, seed=False), "cr-term-order")


def test_the_house_styles_habits_are_softened_on_another_projects_document_never_muted() -> None:
    hedges = "This might perhaps work, and it could arguably fail, possibly sometimes. "
    text = "# T\n\n## Overview\n\nIt runs.\n\n## Work\n\n" + hedges * 3 + "\n"
    ours = audit_of(STAMP + text)
    theirs = audit_of(text)
    assert [f.severity for f in ours if f.rule == "hs-hedge"] == ["suggestion"]
    assert [f.severity for f in theirs if f.rule == "hs-hedge"] == ["suggestion"]


# The limit a message quotes ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("words", "stamped", "severity", "limit"),
    [(61, True, "should-fix", 60), (95, False, "should-fix", 90), (70, False, "suggestion", 60)],
)
def test_a_long_sentence_quotes_the_limit_that_decided_it(
    words: int, stamped: bool, severity: str, limit: int
) -> None:
    sentence = " ".join(["word"] * (words - 1)) + " end."
    text = (STAMP if stamped else "") + "# T\n\n## Overview\n\nIt runs.\n\n## Work\n\n" + sentence + "\n"
    found = [f for f in audit_of(text) if f.rule == "hs-sentence-length"]
    assert [(f.severity, f.message) for f in found] == [
        (severity, f"sentence of {words} words (limit {limit})")
    ]


# proselint in code-like lists ------------------------------------------------------------------


def test_proselint_is_silent_in_lists_of_types_and_where_the_document_names_a_repeat() -> None:
    # WebIDL's `unsigned long long`, written as a type in a list and a table of signatures: no
    # lexical illusion. A doubled word in a sentence still is one.
    text = (
        "# T\n\n## Types\n\n- unsigned long long\n- DOMString name\n\n"
        "| type | use |\n| --- | --- |\n| unsigned long long | a long long count |\n\n"
        "The the size is read first.\n"
    )
    view = parse_prose(text)
    found = prose_lint.lint(view, view.paragraphs())
    assert [(f.line, f.quote) for f in found] == [(12, "The the")]


# The engine says what it is ------------------------------------------------------------------


def test_the_rule_engine_spends_no_tokens_and_says_what_it_does_not_judge(tmp_path: Path) -> None:
    d = stamped_repo(tmp_path)
    code, out, err = edit(
        d, tmp_path, "content-edit", "--old", "never less than one", "--new", "at least one"
    )
    assert code == 0, err
    assert out["usage"] | {"cost_usd": "0"} == {
        "input_tokens": 0,
        "output_tokens": 0,
        "total_tokens": 0,
        "cost_usd": "0",
        "calls": 0,
        "cache_hits": 0,
    }
    assert out["not_judged"] == list(lexicon().not_judged)
    assert "**Not judged offline**: contradictions between sections" in entry_text(d, out["review_log_entry"])


# An edit's text, reviewed in full ---------------------------------------------------------------

PADDED = (
    "The limiter, which arguably might perhaps be somewhat too often consulted, serves the XQZ "
    "and the PLM subsystems alike (TBD)."
)


def test_an_edit_adding_hedges_undefined_acronyms_and_tbd_does_not_pass(tmp_path: Path) -> None:
    d = stamped_repo(tmp_path)
    code, out, err = edit(
        d,
        tmp_path,
        "content-edit",
        "--section",
        "When Redis is unreachable",
        "--instruction",
        f'append "{PADDED}"',
    )
    assert code == 0, err
    assert out["outcome"] == "SHOULD-FIX REMAINS"
    found = {(f["rule"], f["severity"]) for f in out["findings"]}
    assert {
        ("cr-placeholder", "should-fix"),
        ("hs-hedge", "suggestion"),
        ("cr-term-order", "suggestion"),
    } <= found
    listed = next(f["message"] for f in out["findings"] if f["rule"] == "cr-term-order")
    assert "XQZ" in listed and "PLM" in listed
    assert d.design.read_text(encoding="utf-8").count("XQZ") == 1


def test_the_editor_carries_out_an_insertion_once_however_often_it_is_asked() -> None:
    text = "# T\n\n## Zones\n\nThe router sends traffic.\n"
    request = 'insert "Zones are balanced." after "The router sends traffic."'
    once_ = instruction.apply(text, request, "Zones").text
    assert instruction.apply(once_, request, "Zones").text == once_
    appended = instruction.apply(text, 'append "Zones are balanced."', "Zones").text
    assert instruction.apply(appended, 'append "Zones are balanced."', "Zones").text == appended


def test_a_sentence_an_editor_wrote_twice_keeps_one_copy(tmp_path: Path) -> None:
    path = tmp_path / "design.md"
    before = b"# T\n\nThe store keeps buckets. It is fast.\n"
    twice = "The limiter serves both subsystems alike today."
    path.write_text(f"# T\n\nThe store keeps buckets. {twice} It is fast. {twice}\n", encoding="utf-8")
    note = once(path, before)
    assert note is not None and "a second time" in note
    assert path.read_text(encoding="utf-8") == f"# T\n\nThe store keeps buckets. {twice} It is fast.\n"
    # A sentence the file already held twice, or one written once, is left as it is.
    path.write_bytes(b"# T\n\nSee below. See below.\n")
    assert once(path, b"# T\n") is None
    assert json.dumps(path.read_text(encoding="utf-8")) == json.dumps("# T\n\nSee below. See below.\n")
