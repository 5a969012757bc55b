"""Bounded parsing of what a user can edit: JSON and TOML within depth and size, duplicate keys
refused, and exit 2 naming the file (never a ``RecursionError``, never the last value winning)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult
from test_confinement_guard import ledgered

from pipeline.bounded import MAX_DEPTH, Unbounded, load_json, load_toml

__all__ = ["ledgered"]
Cli = Callable[[list[str]], CliResult]


def test_json_past_its_depth_is_refused_at_its_line() -> None:
    text = '{\n"a": ' + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "\n}"
    with pytest.raises(Unbounded) as caught:
        load_json(text, file="x.json", what="ledger", hint="h")
    assert caught.value.line == 2 and "deeper than" in caught.value.message
    assert load_json("[" * MAX_DEPTH + "]" * MAX_DEPTH, file="x", what="w", hint="h") is not None


def test_brackets_inside_strings_are_no_depth() -> None:
    assert load_json(json.dumps({"q": "[" * 10_000}), file="x", what="w", hint="h") == {"q": "[" * 10_000}


def test_a_key_given_twice_is_refused() -> None:
    with pytest.raises(Unbounded, match="'actor' twice") as caught:
        load_json('{"actor": "alice",\n "actor": "mallory"}', file="x.json", what="record", hint="h")
    assert caught.value.line == 2


def test_toml_past_its_depth_and_with_a_key_twice_is_refused() -> None:
    with pytest.raises(Unbounded, match="deeper than"):
        load_toml("a = " + "[" * 100_000 + "]" * 100_000, file="x.toml", what="settings", hint="h")
    with pytest.raises(Exception, match="invalid TOML"):
        load_toml("a = 1\na = 2\n", file="x.toml", what="settings", hint="h")
    assert load_toml('s = "[[[[["\n', file="x.toml", what="settings", hint="h") == {"s": "[[[[["}


@pytest.mark.parametrize("damage", ["100,000 nested arrays", "a key twice", "claims nested"])
@pytest.mark.parametrize("command", ["drift", "ready", "status"])
def test_a_damaged_ledger_is_exit_2_for_every_reader(
    ledgered: tuple[Path, Path, Path], cli: Cli, damage: str, command: str
) -> None:
    _, ledger, _ = ledgered
    text = ledger.read_text()
    if damage == "100,000 nested arrays":
        ledger.write_text(
            text.replace('"claims": [', '"junk": ' + "[" * 100_000 + "]" * 100_000 + ',\n  "claims": [')
        )
    elif damage == "a key twice":
        ledger.write_text(text.replace('"code_root":', '"code_root": "..",\n  "code_root":', 1))
    else:
        ledger.write_text(text.replace('"literals": []', '"literals": ' + "[" * 5000 + "]" * 5000, 1))
    target = "docs/adr/one" if command != "drift" else "docs/adr/*"
    result = cli([command, target])
    assert result.code == 2, (damage, command, result.err[-500:])
    assert "claims ledger is damaged" in result.err and "Traceback" not in result.err
    assert "RecursionError" not in result.out + result.err


def test_an_event_nested_100000_deep_is_a_damaged_line(tmp_path: Path, cli: Cli) -> None:
    from agentkit import make_repo
    from graphkit import go, start

    d = make_repo(tmp_path)
    run_dir = start(d, tmp_path)
    go(run_dir)
    with (run_dir / "events.jsonl").open("a") as handle:
        handle.write('{"type": "x", "v": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    result = cli(["status", run_dir.name, "--runs-dir", str(run_dir.parent)])
    assert result.code == 2 and "events.jsonl:" in result.err and "deeper than" in result.err
    (run_dir / "run.json").write_text('{"format": 2,\n "format": 3}')
    result = cli(["resume", run_dir.name, "--runs-dir", str(run_dir.parent)])
    assert result.code == 2 and "run.json" in result.err and "twice" in result.err


def test_an_approvals_record_naming_a_field_twice_is_refused(tmp_path: Path, cli: Cli) -> None:
    from agentkit import make_repo

    d = make_repo(tmp_path)
    record = (
        "# Approvals\n\n## 2026-12-01T17:20:04Z — accepted — design r1\n\n"
        "- file: _workflow/design.md\n- sha256: " + "a" * 64 + "\n- actor: alice@example.com\n"
        "- actor: mallory@evil\n- requested_by: cli\n- evidence: run 20261201-171303-p1-daf3cd\n"
    )
    (d.root / "design-approvals.md").write_text(record)
    for command in (["status", str(d.root)], ["ready", str(d.root)], ["approve", str(d.root)]):
        result = cli([*command, "--runs-dir", str(tmp_path / "runs")])
        assert result.code == 2, (command, result.err)
        assert "design-approvals.md:8" in result.err and '"actor" is given twice' in result.err
        assert "mallory" not in result.out
