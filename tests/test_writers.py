"""Writers are serial and truthful: several edits a model sends in one turn all land (or each
fails with its own message), and the review log's diff summary and --json come from the real
diff of the file, never from the model's own account of what it did.

Through the CLI against a scripted model on 127.0.0.1 (tests/rolekit.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agentkit import make_repo
from conftest import run_cli
from editkit import entry_text, stamped_repo
from graphkit import long_design
from rolekit import Call, Turn, reviewers, role_server

from pipeline.formats.review_log import parse_entries

DOC = long_design(sections=4) + "\n"
EDITS = [
    ("Step 1 of component 0 stores one value", "Step 1 of component 0 keeps one value"),
    ("Step 2 of component 1 stores one value", "Step 2 of component 1 keeps one value"),
    ("Step 3 of component 2 stores one value", "Step 3 of component 2 keeps one value"),
    ("Step 4 of component 3 stores one value", "Step 4 of component 3 keeps one value"),
]


def edits(path: str, pairs: list[tuple[str, str]]) -> list[Call]:
    return [("edit", {"path": path, "old_string": old, "new_string": new}) for old, new in pairs]


def tighten(root: Path, section: str, options: list[str], tmp_path: Path) -> list[str]:
    """An instruction edit of ``section`` against the scripted server's ``options``."""
    edit = ["edit", str(root), "--kind", "content-edit", "--section", section]
    return [
        *edit,
        "--instruction",
        "tighten the wording",
        *options,
        "--runs-dir",
        str(tmp_path / "runs"),
        "--json",
    ]


def test_several_edits_in_one_turn_all_land(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = make_repo(tmp_path)
    d.design.unlink()

    def author(turn: Turn) -> list[Call]:
        out = turn.params["output_path"]
        if not turn.wrote():
            return [("write", {"path": out, "content": DOC})]
        if sum(r.startswith("edited ") for r in turn.results) == 0 and not any(
            r.startswith("error") for r in turn.results
        ):
            # One assistant message, four edits of one file, one failing on purpose.
            return edits(out, [*EDITS, ("no such text", "x")])
        summary = "made all five edits"  # the model's claim
        return [("final_result", {"summary": summary, "output_path": out})]

    with role_server(reviewers(author), monkeypatch) as (_, options):
        result = run_cli(
            ["create", str(d.root), *options, "--no-warmup", "--runs-dir", str(tmp_path / "runs"), "--json"]
        )
    data = json.loads(result.out)
    text = d.design.read_text()
    assert [new in text for _, new in EDITS] == [True] * len(EDITS)
    assert data["outcome"] == "PASS"
    assert "made all five edits" not in entry_text(d, data["review_log_entry"])


def test_an_instruction_edit_is_summarised_from_its_real_diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = stamped_repo(tmp_path)
    section = "Buckets per tenant and route"
    pairs = [
        ("reads the tenant from the `x-tenant` header", "takes the tenant from the `x-tenant` header"),
        ("falling back to the `*` entry", "or else the `*` entry"),
        (
            "An allowed request goes\non to the application unchanged.",
            "An allowed request goes on unchanged.",
        ),
    ]

    def script(turn: Turn) -> list[Call]:
        if turn.role != "inline-editor":
            return [("final_result", {"verdict": "PASS", "findings": []})]
        out = turn.params["output_path"]
        if not any(r.startswith(("edited ", "error")) for r in turn.results):
            return edits(out, pairs)
        claim = "Rewrote Buckets per tenant and route and Bucket state in Redis"
        return [("final_result", {"summary": claim, "output_path": out})]

    with role_server(script, monkeypatch) as (_, options):
        result = run_cli(tighten(d.root, section, options, tmp_path))
    data = json.loads(result.out)
    text = d.design.read_text()
    assert [new in text for _, new in pairs] == [True, True, True]
    entry = entry_text(d, data["review_log_entry"])
    summary = entry.split("**Diff summary**: ", 1)[1].split("\n\n", 1)[0]
    # What changed, from the file: one section (the model claimed two), and its own words labelled.
    assert f'changed §"{section}"' in summary and "Bucket state in Redis" not in summary.split("note")[0]
    assert "Inline editor's note: Rewrote Buckets per tenant" in summary
    diff = data["diff"]
    assert [f["file"] for f in diff["files"]] == [d.rel(d.design)]
    assert diff["files"][0]["sections"] == {"added": [], "removed": [], "changed": [section]}
    assert diff["files"][0]["lines_added"] >= 2 and diff["files"][0]["lines_removed"] >= 3


def test_an_instruction_that_changes_nothing_in_its_section_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = stamped_repo(tmp_path)

    def script(turn: Turn) -> list[Call]:
        if turn.role != "inline-editor":
            return [("final_result", {"verdict": "PASS", "findings": []})]
        out = turn.params["output_path"]
        if not any(r.startswith(("edited ", "error")) for r in turn.results):
            # The model edits another section than the one it was asked about.
            return edits(out, [("keeps each bucket in a Redis hash", "holds each bucket in a Redis hash")])
        return [("final_result", {"summary": "tightened the section", "output_path": out})]

    before = d.design.read_text()
    assert "keeps each bucket in a Redis hash" in before
    with role_server(script, monkeypatch) as (_, options):
        result = run_cli(tighten(d.root, "Buckets per tenant and route", options, tmp_path))
    data = json.loads(result.out)
    entry = entry_text(d, parse_entries(d.mutations)[-1].number)
    assert data["outcome"] == "BLOCKER REMAINS"
    assert 'the instruction produced no change in §"Buckets per tenant and route"' in entry
    assert data["diff"]["files"][0]["sections"]["changed"] == ["Bucket state in Redis"]


def test_a_fix_round_that_changes_nothing_is_not_logged_as_a_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The comprehension reviewer asks for a fix every round; the inline editor says it fixed
    it and edits nothing. The entry must not say the fix loop changed the text."""
    d = stamped_repo(tmp_path)
    ask = {
        "verdict": "NEEDS REVISION",
        "findings": [
            {
                "severity": "should-fix",
                "section": "Buckets per tenant and route",
                "line": None,
                "quote": "falling back to the `*` entry",
                "rule": "comprehension",
                "message": "say what the `*` entry is",
                "suggested_fix": "define it",
            }
        ],
    }

    def script(turn: Turn) -> list[Call]:
        if turn.role == "inline-editor":
            return [
                (
                    "final_result",
                    {"summary": "defined the * entry", "output_path": turn.params["output_path"]},
                )
            ]
        return [("final_result", ask)]

    with role_server(script, monkeypatch) as (_, options):
        result = run_cli(
            [
                "edit",
                str(d.root),
                "--kind",
                "content-edit",
                "--old",
                "never less than one",
                "--new",
                "never below one",
                *options,
                "--runs-dir",
                str(tmp_path / "runs"),
                "--json",
            ]
        )
    data = json.loads(result.out)
    entry = entry_text(d, data["review_log_entry"])
    assert data["outcome"] == "SHOULD-FIX REMAINS" and data["rounds"] == 3
    assert "fix loop changed" not in entry
    assert 'changed §"Buckets per tenant and route" (+1 -1 lines)' in entry
