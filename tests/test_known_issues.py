"""Every issue the real-model runs found is held by a test that exists: docs/agents.md lists
each with the test that keeps it fixed."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEADING = "## What the real-model runs found, and the test that holds each"
CITED = re.compile(r"`(tests/[\w/]+\.py)::(test_\w+)`")


def _cited() -> list[tuple[str, str]]:
    text = (ROOT / "docs" / "agents.md").read_text()
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    return CITED.findall(section)


def test_each_known_issue_names_a_test_that_exists() -> None:
    cited = _cited()
    items = (ROOT / "docs" / "agents.md").read_text().split(HEADING, 1)[1].split("\n## ", 1)[0].count("\n- ")
    assert len(cited) == items >= 11, "one test per issue"
    for path, name in cited:
        tree = ast.parse((ROOT / path).read_text())
        defined = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
        assert name in defined, f"{path} has no {name}"
