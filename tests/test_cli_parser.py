"""One argument parser for the whole command line: a bare command or group prints its help,
every command suggests what a typo meant, every JSON document leads with its schema version,
and the command line imports no private module of a dependency."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from conftest import EXAMPLE, ROOT, run_cli

PIPELINE = ROOT / "pipeline"


@pytest.mark.parametrize("command", [[], ["batch"], ["enqueue"], ["check"], ["create"], ["gate"], ["drift"]])
def test_a_bare_command_or_group_prints_its_help(command: list[str]) -> None:
    bare = run_cli(command)
    assert bare.code == 2
    assert bare.err.startswith(f"Usage: designloop {' '.join(command)}".rstrip()), bare.err
    assert "Show this message and exit." in bare.err


@pytest.mark.parametrize(
    ("argv", "meant"),
    [
        (["craete", "x"], "create"),
        (["check", "--formt", "text", "x"], "--format"),
        (["drift", "--jsn", "x"], "--json"),
        (["gate", "--jsno", "x"], "--json"),
        (["check", "--target", "desing", "x"], "design"),
    ],
)
def test_every_command_says_what_a_typo_meant(argv: list[str], meant: str) -> None:
    done = run_cli(argv)
    assert done.code == 2
    assert meant in done.err and "what to do:" in done.err, done.err


def test_json_is_accepted_wherever_json_is_printed_and_leads_with_its_schema_version(tmp_path: Path) -> None:
    for argv in (
        ["gate", str(EXAMPLE), "--json"],
        ["gate", str(EXAMPLE)],
        ["rule", "dsc-reverse-ref", "--json"],
    ):
        done = run_cli(argv)
        assert done.code == 0, done.err
        assert next(iter(json.loads(done.out))) == "schema_version", argv


def _private_imports(path: Path) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] != "pipeline" and any(
                p.startswith("_") and not p.startswith("__") for p in parts[1:]
            ):
                found.append(f"{path.relative_to(ROOT)}: {name}")
    return found


def test_no_module_imports_a_private_module_of_a_dependency() -> None:
    found = [hit for path in sorted(PIPELINE.rglob("*.py")) for hit in _private_imports(path)]
    assert not [hit for hit in found if hit.split(": ")[1].startswith(("typer.", "click."))], found


def test_rule_explains_a_rule_and_lists_them_all() -> None:
    shown = run_cli(["rule", "dsc-parenthetical-aside"])
    assert shown.code == 0
    for part in ("# dsc-parenthetical-aside", "Severity: blocker", "## Why", "## Example", "(per D3)"):
        assert part in shown.out, shown.out
    every = run_cli(["rule", "--all"])
    assert every.code == 0
    lines = every.out.splitlines()
    assert lines[0].split("\t")[:3] == ["rule", "family", "severity"]
    families = {line.split("\t")[1] for line in lines[1:]}
    assert {"mechanical", "house-style", "comprehension", "claims", "drift"} <= families
    typo = run_cli(["rule", "hs-hegde"])
    assert typo.code == 2 and "did you mean hs-hedge?" in typo.err
