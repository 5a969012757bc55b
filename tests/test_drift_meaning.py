"""Drift that means it: a claim goes stale when the span it rests on changed in a way that can
make its sentence false, and stays current when the change is elsewhere; stale claims carry a
confidence class; sentences naming no code under a stale heading are at risk; a frozen design
never fails CI; ``claims`` never hides stale claims."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult, write

Cli = Callable[[list[str]], CliResult]

STORE_PY = """import attr


@attr.s
class Store:
    status = attr.ib(default="ready")

    def get(self, key):
        return self.data[key]
"""

TEST_PY = """from src.store import Store


def test_get():
    assert Store().get("k") is None
"""

COMPOSE = """services:
  postgres:
    image: postgres:16
  redis:
    image: redis:7
"""

DESIGN = """# Storage

## Overview

**TL;DR:** One store, two services.

`Store` keeps every entry in memory. `Store.get` returns the value of a key.
A new store starts with `status` set to "ready".

## Services

**TL;DR:** What runs beside the store.

The `docker-compose.yml` file starts `postgres` for the archive.
Every night the archive is copied to the backup bucket.
"""


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Cli) -> Path:
    (tmp_path / ".git").mkdir()
    write(tmp_path / "src" / "store.py", STORE_PY)
    write(tmp_path / "tests" / "test_store.py", TEST_PY)
    write(tmp_path / "docker-compose.yml", COMPOSE)
    write(tmp_path / "README.md", "# Storage\n\n`Store.get` returns a value.\n")
    write(tmp_path / "docs" / "adr" / "one" / "design-final.md", DESIGN)
    monkeypatch.chdir(tmp_path)
    result = cli(["claims", "docs/adr/*"])
    assert result.code == 0, result.out + result.err
    return tmp_path


def drift(cli: Cli) -> tuple[int, dict[str, Any]]:
    result = cli(["drift", "docs/adr/*", "--json"])
    return result.code, json.loads(result.out)


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_json_documents_start_with_their_schema_version(repo: Path, cli: Cli) -> None:
    for args in (["drift", "docs/adr/*", "--json"], ["claims", "docs/adr/*", "--json"]):
        out = cli(args).out
        assert next(iter(json.loads(out))) == "schema_version", args


def test_test_docs_and_readme_commits_and_unrelated_members_leave_every_claim_current(
    repo: Path, cli: Cli
) -> None:
    edit(repo / "tests/test_store.py", "is None", "== 1")
    edit(repo / "README.md", "returns a value", "returns the stored value")
    edit(
        repo / "src/store.py",
        "        return self.data[key]\n",
        "        return self.data[key]\n\n    def size(self):\n        return len(self.data)\n",
    )
    edit(repo / "docker-compose.yml", "image: redis:7", "image: redis:8")
    code, report = drift(cli)
    assert code == 0 and report["stale"] == [] and report["at_risk"] == []


def test_a_removed_compose_service_is_stale_at_its_sentence_with_its_heading_at_risk(
    repo: Path, cli: Cli
) -> None:
    (repo / "docker-compose.yml").write_text("services:\n  redis:\n    image: redis:7\n", encoding="utf-8")
    code, report = drift(cli)
    assert code == 1
    [stale] = report["stale"]
    assert (stale["line"], stale["mention"], stale["status"], stale["confidence"]) == (
        14,
        "postgres",
        "removed",
        "removed",
    )
    tldr, risk = report["at_risk"]  # the heading's TL;DR and its other sentence naming no code
    assert (tldr["line"], risk["line"], risk["heading"], risk["stale_lines"]) == (12, 15, "Services", [14])
    assert risk["quote"] == "Every night the archive is copied to the backup bucket."
    text = cli(["drift", "docs/adr/*"]).out
    assert "docs/adr/one/design-final.md:15: at risk" in text and "2 sentences at risk" in text


def test_a_value_the_sentence_quotes_going_away_is_a_change(repo: Path, cli: Cli) -> None:
    edit(repo / "src/store.py", 'default="ready"', 'default="idle"')
    code, report = drift(cli)
    assert code == 1
    assert [(s["mention"], s["status"], s["confidence"]) for s in report["stale"]] == [
        ("status", "changed", "changed")
    ]
    assert "no longer holds ready" in report["stale"][0]["what"]


def test_a_renamed_member_is_reported_with_its_new_name(repo: Path, cli: Cli) -> None:
    edit(repo / "src/store.py", "def get(self, key):", "def fetch(self, key):")
    code, report = drift(cli)
    [stale] = report["stale"]
    assert code == 1 and (stale["status"], stale["confidence"]) == ("renamed", "renamed")
    assert "`Store.fetch`" in stale["what"] and stale["now"] == "src/store.py:8-9"


def test_a_frozen_design_is_shown_but_never_fails(repo: Path, cli: Cli) -> None:
    workflow = repo / "docs/adr/one/_workflow"
    write(workflow / "design.md", "# Storage\n\n## Overview\n\n`Store.get` returns the value of a key.\n")
    assert cli(["claims", "docs/adr/one"]).code == 0
    edit(repo / "src/store.py", "return self.data[key]", "return self.data.get(key)")
    code, report = drift(cli)
    assert code == 1  # design-final.md's own claim on Store.get is stale: in stage
    assert {s["file"] for s in report["stale"]} == {"docs/adr/one/design-final.md"}
    assert {s["file"] for s in report["stale_shown_only"]} == {"docs/adr/one/_workflow/design.md"}
    frozen = next(f for f in report["files"] if f["design"].endswith("_workflow/design.md"))
    assert frozen["in_stage"] is False
    edit(
        repo / "docs/adr/one/design-final.md",
        "`Store.get` returns the value of a key.",
        "Reads go through the store.",
    )
    # the sentence corrected: claims writes its ledger (nothing is hidden); design.md stays frozen
    refreshed = cli(["claims", "docs/adr/one"])
    assert refreshed.code == 1 and "design-final.claims.json: 4 claims (written)" in refreshed.out
    assert "design.claims.json: left alone" in refreshed.out  # the frozen one still says Store.get
    code, report = drift(cli)
    assert code == 0 and report["stale"] == [] and report["stale_shown_only"]
    assert "shown only" in cli(["drift", "docs/adr/*"]).out


def test_claims_never_hides_stale_claims_unless_told_and_then_lists_them(repo: Path, cli: Cli) -> None:
    ledger = repo / "docs/adr/one/design-final.claims.json"
    before = ledger.read_bytes()
    (repo / "docker-compose.yml").write_text("services:\n  redis:\n    image: redis:7\n", encoding="utf-8")
    refused = cli(["claims", "docs/adr/one"])
    assert refused.code == 1 and ledger.read_bytes() == before
    assert "left alone: 1 stale claim(s)" in refused.out and "postgres" in refused.out
    code, report = drift(cli)
    assert code == 1 and report["stale"]  # still there to see
    accepted = cli(["claims", "docs/adr/one", "--accept-current", "--json"])
    assert accepted.code == 0
    [row] = json.loads(accepted.out)["files"]
    assert [r["mention"] for r in row["reset"]] == ["postgres"] and row["written"] is True
    assert drift(cli)[0] == 0


def test_a_ledger_of_another_format_is_named_and_rewritten_only_when_told(repo: Path, cli: Cli) -> None:
    ledger = repo / "docs/adr/one/design-final.claims.json"
    data = json.loads(ledger.read_text(encoding="utf-8"))
    data["format"] = 1
    ledger.write_text(json.dumps(data), encoding="utf-8")
    result = cli(["drift", "docs/adr/one"])
    assert result.code == 2 and "format 1" in result.err and "--accept-current" in result.err
    assert cli(["claims", "docs/adr/one"]).code == 2
    assert cli(["claims", "docs/adr/one", "--accept-current"]).code == 0
    assert json.loads(ledger.read_text(encoding="utf-8"))["format"] == 2
