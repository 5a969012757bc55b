"""The docs describe each role's tools as the role registry grants them: docs/agents.md's role
table, every `**ROLE** role (tools: ...)` mention in docs/agents.md and docs/edit.md, and any
sentence of theirs that says which tools one role has "only"."""

from __future__ import annotations

import re
from pathlib import Path

from pipeline.agents.roles import TOOLS, load_roles

DOCS = Path(__file__).resolve().parent.parent / "docs"
ROLES = load_roles()
MENTION = re.compile(r"\*\*([a-z-]+)\*\* role \(tools: ([A-Za-z, ]+)\)")
TOOL = re.compile(rf"\b({'|'.join(TOOLS)})\b")


def _spoken(role: str) -> list[str]:
    """How the docs name a role: by its name, and in words (``inline-editor``: the inline editor)."""
    return [role, role.replace("-", " ")]


def _table(text: str) -> dict[str, tuple[tuple[str, ...], str]]:
    """docs/agents.md's table of roles: each role's tools and whether it reads the research log."""
    start = text.index("| role | tools | research log |")
    rows: dict[str, tuple[tuple[str, ...], str]] = {}
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        role, tools, log = (cell.strip() for cell in line.strip("|").split("|"))
        rows[role] = (tuple(t.strip() for t in tools.split(",")), log)
    return rows


def test_the_role_table_is_the_registry() -> None:
    rows = _table((DOCS / "agents.md").read_text())
    assert set(rows) == set(ROLES)
    for name, role in ROLES.items():
        assert rows[name] == (role.tools, "reads" if role.reads_research_log else "never"), name


def test_every_tools_mention_names_the_registry_s_tools() -> None:
    found: dict[str, int] = {}
    for doc in ("agents.md", "edit.md"):
        for role, tools in MENTION.findall((DOCS / doc).read_text()):
            assert role in ROLES, f"docs/{doc} names a role that does not exist: {role}"
            listed = tuple(t.strip() for t in tools.split(","))
            assert listed == ROLES[role].tools, f"docs/{doc}: {role} has {ROLES[role].tools}, not {listed}"
            found[doc] = found.get(doc, 0) + 1
    assert found.get("edit.md", 0) >= 1, "docs/edit.md names the inline editor's tools"


def _sentences(text: str) -> list[str]:
    flat = re.sub(r"\s+", " ", re.sub(r"```.*?```", " ", text, flags=re.S))
    return re.split(r"(?<=[.;:])\s+(?=[A-Z(*`])", flat)


LIMITED = re.compile(rf"\b(?:{'|'.join(TOOLS)})\b(?:, (?:{'|'.join(TOOLS)}))*,? and \w+ only")


def wrong_limits(text: str) -> list[str]:
    """Sentences that name one role and say it has some tools "only", where the tools named
    are not the role's reading and editing tools (its Write and Bash aside)."""
    out = []
    for sentence in _sentences(text):
        named = [r for r in ROLES if any(s in sentence for s in _spoken(r))]
        if len(named) != 1 or not LIMITED.search(sentence):
            continue
        have = set(ROLES[named[0]].tools)
        said = set(TOOL.findall(sentence))
        if not (said <= have and said >= have - {"Write", "Bash"}):
            out.append(sentence)
    return out


def test_no_sentence_says_a_role_has_only_other_tools() -> None:
    for doc in ("agents.md", "edit.md"):
        assert wrong_limits((DOCS / doc).read_text()) == [], doc


def test_the_check_catches_the_stale_sentence() -> None:
    """The sentence docs/edit.md once had: the editor with Read and Edit only, while its
    registry entry gives it Grep and PSI too."""
    stale = "One spawn of the **inline-editor** role (Read and Edit only, confined to the file)."
    assert wrong_limits(stale) == [stale]
    true = "One spawn of the **inline-editor** role (Read, Grep, Edit and PSI only)."
    assert wrong_limits(true) == []
