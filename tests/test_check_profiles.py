"""`check` as ruff users expect it: profiles (designloop's own designs get the house rules, any
other Markdown the rules that hold for any design document), selection from designloop.toml,
pyproject.toml and the command line, inline suppression with a finding for a comment that
suppresses nothing, stdin, and every output format."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import STAMP, run_cli, write

FOREIGN = """---
title: A proposal from elsewhere
---

# Summary

No Overview and no TL;DR, as most projects write. See [the plan](#the-plan) and [gone](#nowhere).

## The plan

Text (per D3).

## The plan
"""


def _repo(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    return tmp_path


def _json(done: object) -> dict[str, object]:
    out = getattr(done, "out")  # noqa: B009
    data = json.loads(out)
    assert isinstance(data, dict) and next(iter(data)) == "schema_version"
    return data


def _rules(data: dict[str, object]) -> list[str]:
    findings = data["findings"]
    assert isinstance(findings, list)
    return sorted(f["rule"] for f in findings)


def test_another_projects_document_gets_only_the_rules_for_any_design(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path)
    doc = write(repo / "docs" / "proposal.md", FOREIGN)
    monkeypatch.chdir(repo)
    done = run_cli(["check", str(doc)])
    data = _json(done)
    assert done.code == 0  # no house blocker: no Overview, no TL;DR, an aside, a repeated name
    assert _rules(data) == ["dsc-broken-anchor"]
    finding: dict[str, object] = data["findings"][0]  # type: ignore[index]
    assert (
        finding["line"] == 7
        and finding["quote"] == "#nowhere"
        and finding["column"] == FOREIGN.splitlines()[6].index("#nowhere") + 1
    )
    assert data["files"] == [
        {
            "path": "docs/proposal.md",
            "profile": "any",
            "why": "not a designloop design: no research log beside it, no stamp",
        }
    ]
    forced = _json(run_cli(["check", str(doc), "--profile", "house"]))
    assert {"dsc-section-shape", "dsc-parenthetical-aside", "dsc-duplicate-section"} <= set(_rules(forced))


def test_a_stamped_design_or_one_beside_a_research_log_gets_the_house_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path)
    stamped = write(repo / "a.md", STAMP + "\n" + FOREIGN.split("---\n", 2)[2])
    beside = write(repo / "d" / "_workflow" / "design.md", FOREIGN.split("---\n", 2)[2])
    write(repo / "d" / "_workflow" / "research-log.md", "# Log\n")
    monkeypatch.chdir(repo)
    for doc, why in (
        (stamped, "stamped by designloop"),
        (beside, "in a design directory with a research log"),
    ):
        data = _json(run_cli(["check", str(doc)]))
        assert data["files"][0]["profile"] == "house" and data["files"][0]["why"] == why  # type: ignore[index]
        assert "dsc-section-shape" in _rules(data)
    text = run_cli(["check", str(beside), "--output-format", "text"])
    assert "d/_workflow/design.md: profile house (in a design directory with a research log)" in text.err


def test_select_ignore_and_per_file_ignores_from_designloop_toml_and_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path)
    doc = write(repo / "docs" / "proposal.md", FOREIGN)
    monkeypatch.chdir(repo)
    write(repo / "designloop.toml", '[check]\nselect = ["mechanical"]\nignore = ["dsc-section-shape"]\n')
    picked = _rules(_json(run_cli(["check", str(doc)])))
    assert "dsc-section-shape" not in picked and {"dsc-parenthetical-aside", "dsc-broken-anchor"} <= set(
        picked
    )
    only = _rules(_json(run_cli(["check", str(doc), "--select", "dsc-parenthetical-aside"])))
    assert only == ["dsc-parenthetical-aside"]
    less = _rules(
        _json(run_cli(["check", str(doc), "--ignore", "dsc-broken-anchor,dsc-parenthetical-aside"]))
    )
    assert "dsc-broken-anchor" not in less and "dsc-parenthetical-aside" not in less
    write(repo / "designloop.toml", '[check.per-file-ignores]\n"docs/*.md" = ["dsc-broken-anchor"]\n')
    assert _rules(_json(run_cli(["check", str(doc)]))) == []
    write(repo / "designloop.toml", '[rules.dsc-broken-anchor]\nseverity = "blocker"\n')
    raised = run_cli(["check", str(doc)])
    assert raised.code == 1 and _json(raised)["findings"][0]["severity"] == "blocker"  # type: ignore[index]
    shown = run_cli(["rule", "dsc-broken-anchor"])
    assert "Severity: blocker (designloop.toml; the default is should-fix)" in shown.out


def test_pyproject_tool_designloop_is_read_when_there_is_no_designloop_toml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path)
    doc = write(repo / "proposal.md", FOREIGN)
    write(
        repo / "pyproject.toml",
        '[project]\nname = "x"\n\n[tool.designloop.check]\nignore = ["dsc-broken-anchor"]\n',
    )
    monkeypatch.chdir(repo)
    assert _rules(_json(run_cli(["check", str(doc)]))) == []


@pytest.mark.parametrize(
    ("config", "argv", "where", "meant"),
    [
        ('[check]\nselect = ["dsc-sectoin-shape"]\n', [], "designloop.toml:2", "dsc-section-shape"),
        ('[check]\n\nignore = ["dsc-broken-anchr"]\n', [], "designloop.toml:3", "dsc-broken-anchor"),
        ('[rules.dsc-broken-anchr]\nseverity = "blocker"\n', [], "designloop.toml:1", "dsc-broken-anchor"),
        ("", ["--select", "dsc-reverse-reff"], "", "dsc-reverse-ref"),
        ("", ["--ignore", "hs-hegde"], "", "hs-hedge"),
    ],
)
def test_an_unknown_rule_is_bad_input_naming_the_one_meant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: str, argv: list[str], where: str, meant: str
) -> None:
    repo = _repo(tmp_path)
    doc = write(repo / "proposal.md", FOREIGN)
    if config:
        write(repo / "designloop.toml", config)
    monkeypatch.chdir(repo)
    done = run_cli(["check", str(doc), *argv])
    assert done.code == 2 and done.out == ""
    assert f"did you mean {meant}?" in done.err and "what to do:" in done.err
    assert where in done.err


def test_inline_comments_turn_rules_off_and_one_that_turns_off_nothing_is_a_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path)
    text = FOREIGN.replace(
        "See [the plan]", "<!-- designloop-disable-next-line dsc-broken-anchor -->\nSee [the plan]"
    ).replace("Text (per D3).", "<!-- designloop-disable-line dsc-reverse-ref --> Text (per D3).")
    text += "\n```md\n<!-- designloop-disable nothing-at-all -->\n```\n"
    doc = write(repo / "proposal.md", text)
    monkeypatch.chdir(repo)
    data = _json(run_cli(["check", str(doc)]))
    assert _rules(data) == ["dl-unused-suppression"]
    unused: dict[str, object] = data["findings"][0]  # type: ignore[index]
    assert unused["line"] == 12 and "designloop-disable-line" in str(unused["quote"])
    block = write(
        repo / "block.md",
        "<!-- designloop-disable -->\n" + FOREIGN.split("---\n", 2)[2] + "<!-- designloop-enable -->\n",
    )
    assert _rules(_json(run_cli(["check", str(block)]))) == []
    bad = write(repo / "bad.md", "# T\n\n<!-- designloop-disable dsc-broken-anchr -->\n")
    done = run_cli(["check", str(bad)])
    assert done.code == 2 and "bad.md:3" in done.err and "did you mean dsc-broken-anchor?" in done.err


def test_check_reads_stdin_and_refuses_a_terminal_or_nothing(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    env = {"PATH": str(Path(sys.executable).parent), "HOME": str(tmp_path)}
    piped = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "check", "-", "--stdin-filename", "docs/x.md", "--output-format", "text"],
        input=FOREIGN.encode(), capture_output=True, cwd=repo, env=env, timeout=300,
    )  # fmt: skip
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout.decode().startswith("docs/x.md:7:")
    closed = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "check", "-"],
        stdin=subprocess.DEVNULL, capture_output=True, cwd=repo, env=env, timeout=300,
    )  # fmt: skip
    assert closed.returncode == 2 and b"what to do:" in closed.stderr and closed.stdout == b""
    from ptykit import designloop_argv, in_terminal

    terminal = in_terminal(designloop_argv("check", "-"), repo)
    assert terminal.code == 2 and "stdin is a terminal" in terminal.text
    assert [p.name for p in repo.iterdir()] == [".git"]  # nothing written


def test_every_output_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _repo(tmp_path)
    doc = write(repo / "docs" / "proposal.md", FOREIGN)
    monkeypatch.chdir(repo)
    text = run_cli(["check", str(doc), "--output-format", "text"]).out.splitlines()
    assert text[0].startswith("docs/proposal.md:7:") and "dsc-broken-anchor [should-fix]" in text[0]
    github = run_cli(["check", str(doc), "--output-format", "github"]).out.strip()
    assert (
        github.startswith("::warning file=docs/proposal.md,line=7,col=")
        and "title=dsc-broken-anchor (should-fix)::" in github
    )
    rd = json.loads(run_cli(["check", str(doc), "--output-format", "rdjson"]).out)
    (diag,) = rd["diagnostics"]
    assert diag["location"]["path"] == "docs/proposal.md" and diag["severity"] == "WARNING"
    assert diag["code"]["value"] == "dsc-broken-anchor" and diag["location"]["range"]["start"]["line"] == 7
    junit = ET.fromstring(run_cli(["check", str(doc), "--output-format", "junit"]).out)
    suite = junit.find("testsuite")
    assert suite is not None and suite.get("failures") == "1"
    sarif = json.loads(run_cli(["check", str(doc), "--output-format", "sarif"]).out)
    assert (
        sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        == "docs/proposal.md"
    )
    out = repo / "report.xml"
    done = run_cli(["check", str(doc), "--output-format", "junit", "--output-file", str(out)])
    assert done.out == "" and ET.parse(out).getroot().tag == "testsuites"
    assert run_cli(["check", str(doc), "--output-format", "yaml"]).code == 2
