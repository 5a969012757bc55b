"""A model that declines part of an instruction (as its prompt asks, when the code contradicts
it) ends the run with the parts named, never a plain PASS: through the CLI against a scripted
model on 127.0.0.1 (tests/rolekit.py) that searches the code the way models do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli
from editkit import entry_text, stamped_repo
from rolekit import Call, Turn, role_server

SECTION = "Buckets per tenant and route"
OLD = "reads the tenant from the `x-tenant` header"
NEW = "takes the tenant from the `x-tenant` header"
DECLINED = "that the middleware retries a refused request twice: the code shows no retry in middleware.py"


def _editor(turn: Turn) -> list[Call]:
    if turn.role != "inline-editor":
        return [("final_result", {"verdict": "PASS", "findings": []})]
    out = turn.params["output_path"]
    if not any("code/ratelimit" in r for r in turn.results):
        # A quoted alternation and an anchor, as a model writes them for grep.
        return [("grep", {"pattern": "retry|refuse", "path": "code", "glob": "*.py", "context": 1})]
    if not turn.wrote():
        return [("edit", {"path": out, "old_string": OLD, "new_string": NEW})]
    summary = "Reworded how the tenant is read; left out the retry claim, which the code contradicts."
    return [("final_result", {"summary": summary, "output_path": out, "declined": [DECLINED]})]


def test_a_model_s_declined_part_is_named_in_every_place_the_outcome_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = stamped_repo(tmp_path)
    with role_server(_editor, monkeypatch) as (server, options):
        args = ["edit", str(d.root), "--kind", "content-edit", "--section", SECTION]
        args += [
            "--instruction",
            "Say the tenant is taken from the header, and that refused requests retry twice.",
        ]
        result = run_cli([*args, *options, "--runs-dir", str(tmp_path / "runs"), "--json"])
    data = json.loads(result.out)
    assert result.code == 0 and data["outcome"] == "PASS" and data["declined"] == [DECLINED]
    assert NEW in d.design.read_text() and "retries" not in d.design.read_text().split(SECTION)[1][:400]
    assert server.requests_of("inline-editor") == 3
    entry = entry_text(d, data["review_log_entry"])
    assert f"- declined: {DECLINED} (the inline editor did not carry it out)" in entry
    assert "(PASS, 1 part of the instruction declined)" in entry
    summary = (tmp_path / "runs" / data["run_id"] / "summary.md").read_text()
    assert f"PASS — declined: {DECLINED}" in summary
    # What status and runs say of the run afterwards.
    runs = ["--runs-dir", str(tmp_path / "runs")]
    status = run_cli(["status", data["run_id"], *runs])
    assert "outcome PASS, 1 part of the instruction declined" in status.out
    assert f"declined: {DECLINED}" in status.out
    assert json.loads(run_cli(["status", data["run_id"], *runs, "--json"]).out)["declined"] == [DECLINED]
    assert "PASS, 1 part of the instruction declined" in run_cli(["runs", *runs]).out


def test_the_grep_a_model_sends_reaches_the_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scripted editor's search came back with matches and their context (what it read)."""
    d = stamped_repo(tmp_path)
    seen: list[str] = []

    def script(turn: Turn) -> list[Call]:
        seen.extend(turn.results)
        return _editor(turn)

    with role_server(script, monkeypatch) as (_, options):
        args = ["edit", str(d.root), "--kind", "content-edit", "--section", SECTION, "--instruction", "x y"]
        run_cli([*args, *options, "--runs-dir", str(tmp_path / "runs"), "--json"])
    found = next(r for r in seen if "code/ratelimit" in r)
    assert "code/ratelimit/bucket.py:" in found and "code/ratelimit/bucket.py-" in found and "--" in found
