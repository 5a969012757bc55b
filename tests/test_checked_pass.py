"""No PASS that nobody checked: a section is settled only by a clean audit of its current bytes,
and the outcome, the review-log entry and --json say the same thing.

Each case runs `designloop create` through the CLI against a scripted model on 127.0.0.1
(tests/rolekit.py).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from agentkit import make_repo
from conftest import run_cli
from editkit import entry_text
from graphkit import long_design
from rolekit import PASS, Turn, author_writes, reviewers, role_server

from pipeline.formats.review_log import parse_entries

DOC = long_design(sections=4) + "\n"


def unplaced(message: str = "the reader cannot tell what a tenant is") -> dict[str, Any]:
    """A should-fix with neither section nor line nor quote, as models return them."""
    return {
        "verdict": "NEEDS REVISION",
        "findings": [
            {
                "severity": "should-fix",
                "section": None,
                "line": None,
                "quote": None,
                "rule": "readability",
                "message": message,
                "suggested_fix": "define it",
            }
        ],
    }


def create(d: Any, tmp_path: Path, options: list[str], *extra: str) -> tuple[int, dict[str, Any]]:
    result = run_cli(
        [
            "create",
            str(d.root),
            *options,
            "--no-warmup",
            "--runs-dir",
            str(tmp_path / "runs"),
            "--json",
            *extra,
        ]
    )
    assert result.out.strip(), result.err
    return result.code, json.loads(result.out)


def test_a_section_less_should_fix_is_audited_again_before_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = make_repo(tmp_path)

    def review(turn: Turn) -> dict[str, Any]:
        return unplaced() if turn.role == "readability-auditor" and turn.round == 1 else PASS

    with role_server(reviewers(author_writes(DOC), review), monkeypatch) as (server, options):
        code, data = create(d, tmp_path, options)
    # The author left the text as it was; round 2 must read it again rather than call it settled.
    assert server.requests_of("readability-auditor", 2) > 0
    assert (code, data["outcome"], data["rounds"]) == (0, "PASS", 2)


def test_a_section_less_should_fix_nobody_fixed_never_ends_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = make_repo(tmp_path)

    def review(turn: Turn) -> dict[str, Any]:
        return unplaced() if turn.role == "readability-auditor" else PASS

    with role_server(reviewers(author_writes(DOC), review), monkeypatch) as (server, options):
        _, data = create(d, tmp_path, options)
    assert data["outcome"] == "SHOULD-FIX REMAINS"
    assert [f["message"] for f in data["findings"]] == ["the reader cannot tell what a tenant is"]
    assert server.requests_of("readability-auditor", 3) > 0
    entry = entry_text(d, parse_entries(d.mutations)[-1].number)
    assert "should-fix: readability" in entry and "(SHOULD-FIX REMAINS)" in entry


def test_an_unplaced_comprehension_finding_reopens_the_whole_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = make_repo(tmp_path)

    def review(turn: Turn) -> dict[str, Any]:
        return unplaced() if turn.role == "comprehension-review" and turn.round == 1 else PASS

    with role_server(reviewers(author_writes(DOC), review), monkeypatch) as (server, options):
        _, data = create(d, tmp_path, options)
    # A whole-doc role's finding placed nowhere keeps every section unsettled: round 2 audits all.
    assert server.requests_of("readability-auditor", 2) == server.requests_of("readability-auditor", 1)
    assert data["outcome"] == "PASS"


def test_an_author_that_never_confirms_its_draft_does_not_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The author writes the draft, then answers in plain text instead of its output: its round
    is INCONCLUSIVE. The run asks it again while the budget lasts, and never ends PASS on it."""
    d = make_repo(tmp_path)

    def author(turn: Turn) -> list[Any]:
        if not turn.wrote() and turn.round == 1:
            return [("write", {"path": turn.params["output_path"], "content": DOC})]
        return [("final_result", {"summary": 7})]  # schema-violating, every time

    with role_server(reviewers(author), monkeypatch) as (_, options):
        code, data = create(d, tmp_path, options)
    entry = entry_text(d, parse_entries(d.mutations)[-1].number)
    assert (code, data["outcome"], data["rounds"]) == (5, "INCONCLUSIVE", 3)
    assert "(INCONCLUSIVE)" in entry
    assert "should-fix: inconclusive: design-author returned no valid output twice in round 3" in entry
    assert (
        "note: earlier round: inconclusive: design-author returned no valid output twice in round 1" in entry
    )


def test_an_author_inconclusive_once_is_asked_again_and_the_entry_agrees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = make_repo(tmp_path)

    def author(turn: Turn) -> list[Any]:
        if turn.round == 1 and not turn.wrote():
            return [("write", {"path": turn.params["output_path"], "content": DOC})]
        if turn.round == 1:
            return [("final_result", {"summary": 7})]
        return [("final_result", {"summary": "checked the draft", "output_path": turn.params["output_path"]})]

    with role_server(reviewers(author), monkeypatch) as (_, options):
        code, data = create(d, tmp_path, options)
    entry = entry_text(d, parse_entries(d.mutations)[-1].number)
    assert (code, data["outcome"], data["rounds"]) == (0, "PASS", 2)
    assert data["findings"] == []
    # History, not an open finding: no should-fix line in a PASS entry.
    assert "- should-fix" not in entry
    assert (
        "note: earlier round: inconclusive: design-author returned no valid output twice in round 1" in entry
    )


def located(severity: str, decision: bool = False) -> dict[str, Any]:
    return {
        "verdict": "NEEDS REVISION",
        "findings": [
            {
                "severity": severity,
                "section": "Part of the service 1",
                "line": None,
                "quote": "Component 1 keeps one counter per tenant.",
                "rule": "readability",
                "message": f"a {severity} the author does not fix",
                "suggested_fix": "fix it",
                "decision_shaped": decision,
            }
        ],
    }


def _finding_lines(entry: str) -> list[str]:
    body = entry.split("**Findings**:", 1)[1].split("**Iterations**", 1)[0]
    return [line[2:] for line in body.splitlines() if line.startswith(("- blocker:", "- should-fix:"))]


OUTCOMES = {
    "PASS": ("create", lambda turn: PASS),
    "SHOULD-FIX REMAINS": (
        "create",
        lambda turn: located("should-fix") if turn.role == "readability-auditor" else PASS,
    ),
    "BLOCKER REMAINS": (
        "create",
        lambda turn: located("blocker") if turn.role == "readability-auditor" else PASS,
    ),
    "INCONCLUSIVE": (
        "create",
        lambda turn: {"verdict": "maybe"} if turn.role == "absorption-check" else PASS,
    ),
    "DECISION NEEDED": (
        "final",
        lambda turn: located("should-fix", decision=True) if turn.role == "comprehension-review" else PASS,
    ),
}


@pytest.mark.parametrize("outcome", list(OUTCOMES))
def test_outcome_entry_and_json_agree(outcome: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = make_repo(tmp_path)
    command, review = OUTCOMES[outcome]
    if command == "final":
        d.design.write_text(DOC)
    with role_server(reviewers(author_writes(DOC), review), monkeypatch) as (_, options):
        result = run_cli(
            [command, str(d.root), *options, "--no-warmup", "--runs-dir", str(tmp_path / "runs"), "--json"]
        )
    data = json.loads(result.out)
    entry = entry_text(d, data["review_log_entry"])
    lines = _finding_lines(entry)
    assert data["outcome"] == outcome
    assert re.search(rf"\*\*Iterations\*\*: \d+ of \d+ \({re.escape(outcome)}\)", entry)
    assert len(lines) == len(data["findings"])
    for line, found in zip(lines, data["findings"], strict=True):
        assert line.startswith(found["severity"] + ":") and found["message"] in line
    assert (outcome == "PASS") == (not lines)
    expected = {
        "PASS": 0,
        "SHOULD-FIX REMAINS": 0,
        "BLOCKER REMAINS": 1,
        "INCONCLUSIVE": 5,
        "DECISION NEEDED": 1,
    }
    assert result.code == data["exit_code"] == expected[outcome]
