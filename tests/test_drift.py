"""designloop drift through the CLI: each stale claim at the design line that makes it, with
what happened to its code; exit 0 current, 1 stale, 2 bad input."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult, write

Cli = Callable[[list[str]], CliResult]

LIMITS_PY = """class Bucket:
    def take(self, n):
        return self.left - n

    def refill(self, now):
        self.left = min(self.capacity, self.left + self.rate * now)


def key_for(tenant, route):
    return f"rl:{tenant}:{route}"
"""

SERVER_GO = """package server

// Serve answers one request.
func Serve(port int) error {
\treturn listen(port)
}
"""

MAKEFILE = "build:\n\tgo build ./...\n\ncheck:\n\tgo vet ./...\n"

ONE = """# Limits

## Overview

`Bucket.take` subtracts the cost from what is left.
`Bucket.refill` tops the bucket up to its capacity.
Keys come from `key_for`, defined at `src/limits.py:9`.
A key names the tenant and the route: `key_for` joins them.
"""

TWO = """# Serving

## Overview

`Serve` listens on the port it is given.
The `build` target compiles every package; the code lives in `src/server/`.
"""


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Cli) -> Path:
    (tmp_path / ".git").mkdir()
    write(tmp_path / "src" / "limits.py", LIMITS_PY)
    write(tmp_path / "src" / "server" / "serve.go", SERVER_GO)
    write(tmp_path / "Makefile", MAKEFILE)
    write(tmp_path / "docs" / "adr" / "one" / "design-final.md", ONE)
    write(tmp_path / "docs" / "adr" / "two" / "_workflow" / "design.md", TWO)
    monkeypatch.chdir(tmp_path)
    result = cli(["claims", "docs/adr/*"])
    assert result.code == 0, result.err
    return tmp_path


def drift(cli: Cli, *args: str) -> tuple[int, dict[str, Any]]:
    result = cli(["drift", "docs/adr/*", "--json", *args])
    return result.code, json.loads(result.out)


def stale(report: dict[str, Any]) -> list[tuple[str, int, str, str]]:
    return sorted((s["file"], s["line"], s["mention"], s["status"]) for s in report["stale"])


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_every_claim_current_exits_0(repo: Path, cli: Cli) -> None:
    code, report = drift(cli)
    assert code == 0 and report["stale"] == []
    assert report["claims"] == report["current"] == 7
    kinds = {json.loads((repo / f).read_text())["design"] for f in ("docs/adr/one/design-final.claims.json",)}
    assert kinds == {"design-final.md"}
    assert (repo / "docs/adr/two/_workflow/design.claims.json").is_file()


def test_formatting_and_comments_change_nothing(repo: Path, cli: Cli) -> None:
    edit(
        repo / "src/limits.py",
        "        return self.left - n\n",
        "        return self.left-n  # what is left\n",
    )
    edit(
        repo / "src/server/serve.go",
        "func Serve(port int) error {",
        "// Serving.\nfunc Serve(port int) error {",
    )
    code, report = drift(cli)
    assert code == 0, report["stale"]


def test_a_body_change_names_exactly_the_sentences_resting_on_it(repo: Path, cli: Cli) -> None:
    edit(repo / "src/limits.py", "self.left + self.rate * now", "self.left + self.rate * now * 2")
    code, report = drift(cli)
    assert code == 1
    assert stale(report) == [("docs/adr/one/design-final.md", 6, "Bucket.refill", "changed")]
    item = report["stale"][0]
    assert item["quote"] == "`Bucket.refill` tops the bucket up to its capacity."
    assert item["code"] == {"file": "src/limits.py", "first": 5, "last": 6}
    text = cli(["drift", "docs/adr/*"])
    assert text.code == 1
    assert "docs/adr/one/design-final.md:6: stale (changed): `Bucket.refill` changed" in text.out
    assert "7 claims in 2 design files: 6 current, 1 stale" in text.out


def test_lines_moving_above_a_cited_location_make_it_stale(repo: Path, cli: Cli) -> None:
    edit(repo / "src/limits.py", "class Bucket:\n", '"""Limits."""\n\n\nclass Bucket:\n')
    code, report = drift(cli)
    assert code == 1
    assert stale(report) == [("docs/adr/one/design-final.md", 7, "src/limits.py:9", "moved")]
    assert report["stale"][0]["now"] == "src/limits.py:12"


def test_rename_move_and_removal_are_told_apart(repo: Path, cli: Cli) -> None:
    edit(repo / "src/limits.py", "def take(self, n):", "def take_some(self, n):")
    limits = (repo / "src/limits.py").read_text(encoding="utf-8")
    start = limits.index("def key_for")
    (repo / "src/limits.py").write_text(limits[:start], encoding="utf-8")
    write(repo / "src/keys.py", limits[start:])
    (repo / "Makefile").write_text("check:\n\tgo vet ./...\n", encoding="utf-8")
    code, report = drift(cli)
    assert code == 1
    by_mention = {s["mention"]: s for s in report["stale"]}
    assert by_mention["Bucket.take"]["status"] == "renamed"
    assert "`Bucket.take_some`" in by_mention["Bucket.take"]["what"]
    assert by_mention["key_for"]["status"] == "moved"
    assert by_mention["key_for"]["now"] == "src/keys.py:1-2"
    assert by_mention["src/limits.py:9"]["status"] in ("changed", "removed")
    assert by_mention["build"]["status"] == "removed"
    assert "src/server/" not in by_mention  # the directory is still there


def test_a_design_line_that_no_longer_holds_its_quote_is_stale(repo: Path, cli: Cli) -> None:
    design = repo / "docs/adr/one/design-final.md"
    edit(design, "# Limits\n", "# Limits\n\nAn added line.\n")
    code, report = drift(cli)
    assert code == 1
    assert {s["status"] for s in report["stale"]} == {"quote"}
    first = min(report["stale"], key=lambda s: s["line"])
    assert first["line"] == 7 and "line 5 no longer holds" in first["what"]


def test_a_damaged_or_missing_ledger_is_bad_input_by_name(repo: Path, cli: Cli) -> None:
    ledger = repo / "docs/adr/one/design-final.claims.json"
    ledger.write_text('{"format": 1,\n "design": "design-final.md",\n "claims": [\n', encoding="utf-8")
    result = cli(["drift", "docs/adr/*"])
    assert result.code == 2
    assert "docs/adr/one/design-final.claims.json" in result.err and "damaged" in result.err
    assert "what to do:" in result.err and "Traceback" not in result.err
    assert "claims in 1 design file" in result.out  # the other directory is still checked
    ledger.unlink()
    result = cli(["drift", "docs/adr/one"])
    assert result.code == 2 and "has no claims ledger" in result.err


def test_a_ledger_of_the_wrong_shape_names_the_field(repo: Path, cli: Cli) -> None:
    ledger = repo / "docs/adr/one/design-final.claims.json"
    data = json.loads(ledger.read_text(encoding="utf-8"))
    data["claims"][0]["line"] = "five"
    ledger.write_text(json.dumps(data), encoding="utf-8")
    result = cli(["drift", "docs/adr/one"])
    assert result.code == 2 and "claims.0.line" in result.err


def test_unreadable_code_is_skipped_with_a_note(repo: Path, cli: Cli) -> None:
    (repo / "src/limits.py").write_bytes(LIMITS_PY.encode() + b"# caf\xe9\n")
    code, report = drift(cli)
    assert code == 0  # not stale: not checked, and said so
    assert {s["status"] for s in report["unchecked"]} == {"unchecked"}
    assert all("not UTF-8" in s["what"] for s in report["unchecked"])
    text = cli(["drift", "docs/adr/*"])
    assert "not checked (unchecked)" in text.out and "Traceback" not in text.err


def test_a_huge_code_file_is_skipped_with_a_note(repo: Path, cli: Cli) -> None:
    (repo / "src/limits.py").write_text(LIMITS_PY + "#" * (4 * 2**20 + 1) + "\n", encoding="utf-8")
    code, report = drift(cli)
    assert code == 0
    assert report["unchecked"] and all("more than" in s["what"] for s in report["unchecked"])


def test_sarif_marks_each_stale_claim_at_its_design_line(repo: Path, cli: Cli) -> None:
    edit(repo / "src/server/serve.go", "return listen(port)", "return listen(port + 1)")
    result = cli(["drift", "docs/adr/*", "--sarif", "drift.sarif"])
    assert result.code == 1
    sarif = json.loads((repo / "drift.sarif").read_text(encoding="utf-8"))
    results = sarif["runs"][0]["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [("drift-changed", "warning")]
    location = results[0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "docs/adr/two/_workflow/design.md"
    assert location["region"]["startLine"] == 5
    assert location["region"]["snippet"]["text"] == "`Serve` listens on the port it is given."


def test_a_pattern_naming_no_design_directory_is_bad_input(repo: Path, cli: Cli) -> None:
    result = cli(["drift", "nowhere/*"])
    assert result.code == 2 and "names no design directory" in result.err


def test_writing_a_ledger_skips_unreadable_code_with_a_note(repo: Path, cli: Cli) -> None:
    (repo / "src/server/serve.go").write_bytes(SERVER_GO.encode() + b"// caf\xe9\n")
    result = cli(["claims", "docs/adr/two"])
    assert result.code == 0 and "Traceback" not in result.err
    assert "note: src/server/serve.go: skipped: not UTF-8" in result.out
