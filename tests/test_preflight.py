"""The pre-flight checks every input a run will read before it writes anything, and every exit-2
message says what to do. (The cases over every command are in test_bad_input_campaign.py.)"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from agentkit import make_repo
from conftest import run_cli
from test_store import snapshot

from pipeline.errors import ExitCode, InputError
from pipeline.settings import run_settings

ROOT = Path(__file__).resolve().parent.parent


def _input_errors() -> set[str]:
    """InputError and every class that derives from it in the package."""
    names = {"InputError"}
    trees = [ast.parse(p.read_text()) for p in (ROOT / "pipeline").rglob("*.py")]
    grew = True
    while grew:
        grew = False
        for tree in trees:
            for node in ast.walk(tree):
                bases = [getattr(b, "id", getattr(b, "attr", "")) for b in getattr(node, "bases", [])]
                if isinstance(node, ast.ClassDef) and node.name not in names and set(bases) & names:
                    names.add(node.name)
                    grew = True
    return names


def test_every_bad_input_error_carries_what_to_do() -> None:
    """Every exit-2 error the package raises names what to do (its ``hint``): a check that reads
    the source, so a new one without it fails here."""
    names = _input_errors()
    assert {"InputError", "MalformedEdit", "DamagedStore", "RunLocked"} <= names
    missing = []
    for path in sorted((ROOT / "pipeline").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            called = getattr(node, "func", None)
            name = getattr(called, "id", getattr(called, "attr", ""))
            if (
                isinstance(node, ast.Call)
                and name in names
                and not any(k.arg in ("hint", None) for k in node.keywords)
            ):
                missing.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert missing == []


@pytest.mark.parametrize(
    "value", ["nan", "inf", "-inf", "-1", "0", '"soon"', "true", "1e400"], ids=lambda v: f"spawn_timeout={v}"
)
def test_run_settings_refuse_what_is_not_a_finite_positive_number(value: str, tmp_path: Path) -> None:
    import tomllib

    source = tmp_path / "designloop.toml"
    data = tomllib.loads(f"[run]\nspawn_timeout = {value}\n")
    with pytest.raises(InputError, match="spawn_timeout must be a number of seconds, above 0") as caught:
        run_settings(data, source)
    assert caught.value.hint and caught.value.file == str(source)


def test_run_settings_take_finite_numbers() -> None:
    settings = run_settings(
        {"run": {"spawn_timeout": 90, "first_turn_timeout": 12.5, "warmup_cap": 0}}, Path("x")
    )
    assert (settings.spawn_timeout, settings.first_turn_timeout, settings.warmup_cap) == (90, 12.5, 0)
    with pytest.raises(InputError, match="spawn_requests must be a whole number"):
        run_settings({"run": {"spawn_requests": 2.5}}, Path("x"))


@pytest.mark.parametrize(
    "log",
    [
        "",
        "\n\n   \n",
        "# Research log\n\n## Decision Log\n\n## Adversarial gate record\n",
        "# Research log\n\n## Problem\n\nWe need a limiter.\n\n## Adversarial gate record\n\n### 2026-11-22 — PASS\n",
    ],
    ids=["empty", "blank", "headings only", "no decision"],
)
def test_a_log_with_nothing_to_write_from_spends_no_round(log: str, tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    d.research_log.write_text(log)
    before = snapshot(tmp_path)
    result = run_cli(["create", str(d.root), "--runs-dir", str(tmp_path / "runs")])
    assert result.code == ExitCode.BAD_INPUT, result.err + result.out[-300:]
    assert "research log" in result.err and "what to do:" in result.err
    assert snapshot(tmp_path) == before


def test_an_override_that_is_not_a_file_is_refused_before_the_run(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    (d.repo_root / ".designloop" / "prompts" / "house-style.md").mkdir(parents=True)
    before = snapshot(tmp_path)
    result = run_cli(["create", str(d.root), "--runs-dir", str(tmp_path / "runs")])
    assert result.code == ExitCode.BAD_INPUT and "is a directory" in result.err, result.err
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("source", ["/dev/zero", "fifo"])
def test_a_content_file_that_never_ends_is_refused(source: str, tmp_path: Path) -> None:
    import os

    d = make_repo(tmp_path)
    path = Path(source)
    if source == "fifo":
        path = tmp_path / "pipe.md"
        os.mkfifo(path)
    before = snapshot(d.repo_root)
    args = ["edit", str(d.root), "--kind", "structural-rewrite", "--content", str(path)]
    result = run_cli([*args, "--runs-dir", str(tmp_path / "runs")])
    assert result.code == ExitCode.BAD_INPUT and "not a regular file" in result.err, result.err
    assert snapshot(d.repo_root) == before
