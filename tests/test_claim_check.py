"""What a claim is and how it resolves: fields, members and configuration entries as claims;
names without backticks; rejected alternatives and examples; ambiguous names reported with their
candidates; generated trees and tests; quoted values checked; findings that say what is true."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write

from pipeline.grounding.claims import Grounding, Resolution
from pipeline.grounding.ledger import ClaimEntry

RECORD_PY = """import attr


@attr.s
class Record:
    status = attr.ib(default=None)
    size: int = attr.ib(default=0)

    def load(self, path):
        with open(path) as f:
            for line in f:
                yield line
"""

SOURCE_TS = """export interface Source {
  url: string;
  read(key: string): Promise<number>;
}

export class GitService {
  constructor(private readonly root: string) {}
}
"""

HEADER_RS = """pub struct Header {
    pub height: u64,
    pub hash: [u8; 32],
}
"""

COMPOSE = """services:
  postgres:
    image: postgres:16
  redis:
    image: redis:7
"""

PYPROJECT = """[tool.ruff]
line-length = 110
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    write(tmp_path / "src" / "record.py", RECORD_PY)
    write(tmp_path / "src" / "source.ts", SOURCE_TS)
    write(tmp_path / "src" / "header.rs", HEADER_RS)
    write(tmp_path / "docker-compose.yml", COMPOSE)
    write(tmp_path / "pyproject.toml", PYPROJECT)
    return tmp_path


def resolve(repo: Path, body: str) -> Resolution:
    design = write(repo / "docs" / "adr" / "one" / "design-final.md", f"# D\n\n## Overview\n\n{body}\n")
    return Grounding(repo, repo).resolve(design)


def claims(resolution: Resolution) -> dict[str, ClaimEntry]:
    return {e.mention: e for e in resolution.ledger.claims}


def rules(resolution: Resolution) -> set[tuple[str, str]]:
    return {(f.rule, f.quote or "") for f in resolution.findings}


def test_fields_members_and_configuration_entries_are_claims_in_every_language(repo: Path) -> None:
    found = resolve(
        repo,
        "`Record.status` holds the parse state. A `Source.url` names the remote. "
        "`Header.height` counts blocks. The `services.postgres` service runs the database. "
        "`[tool.ruff].line-length` is 110.",
    )
    entries = claims(found)
    assert (entries["Record.status"].file, entries["Record.status"].first) == ("src/record.py", 6)
    assert entries["Record.status"].last == 6  # the field, not the class
    assert (entries["Source.url"].file, entries["Source.url"].first) == ("src/source.ts", 2)
    assert (entries["Header.height"].file, entries["Header.height"].first) == ("src/header.rs", 2)
    postgres = entries["services.postgres"]
    assert (postgres.file, postgres.first, postgres.last, postgres.method) == (
        "docker-compose.yml",
        2,
        3,
        "config",
    )
    ruff = entries["[tool.ruff].line-length"]
    assert (ruff.symbol, ruff.file, ruff.literals) == ("tool.ruff.line-length", "pyproject.toml", ["110"])
    assert found.findings == []


def test_a_quoted_value_the_cited_code_lacks_is_a_finding(repo: Path) -> None:
    found = resolve(
        repo,
        '`Record.status` is set to `Unknown` when a line does not parse. Its `size` starts at "0".\n'
        '`Record.load` keeps "Unknown" lines.',
    )
    assert rules(found) == {("clm-literal", "`Unknown`"), ("clm-literal", '"Unknown"')}
    message = next(f.message for f in found.findings if f.quote == "`Unknown`")
    assert "src/record.py" in message
    assert claims(found)["size"].symbol == "Record.size"  # the member of the type the sentence names


def test_names_without_backticks_are_claims_when_the_code_has_them(repo: Path) -> None:
    found = resolve(
        repo,
        "The compactor reuses GitService from the snapshotter and reads Record.load() line by line. "
        "PostgreSQL and GitHub are products, and iter_frames names nothing here.",
    )
    entries = claims(found)
    assert entries["GitService"].symbol == "GitService" and entries["Record.load()"].symbol == "Record.load"
    assert "PostgreSQL" not in entries and "iter_frames" not in entries
    assert found.findings == []  # prose names that resolve to nothing are never findings


def test_a_member_named_with_its_class_rests_on_the_member_and_ambiguity_is_reported(repo: Path) -> None:
    write(repo / "src" / "a.py", "class Reader:\n    def close(self):\n        pass\n")
    write(repo / "src" / "b.py", "class Writer:\n    def close(self):\n        return 1\n")
    found = resolve(repo, "`Writer` flushes before `close` returns.\nLater `close` is called once.")
    bound = [e for e in found.ledger.claims if e.line == 5 and e.mention == "close"]
    assert [(e.symbol, e.candidates) for e in bound] == [("Writer.close", 1)]
    ambiguous = [e for e in found.ledger.claims if e.mention == "close" and e.candidates > 1]
    assert sorted(e.symbol or "" for e in ambiguous) == ["Reader.close", "Writer.close"]
    [finding] = found.findings
    assert (finding.rule, finding.severity, finding.quote) == ("clm-ambiguous", "should-fix", "close")
    assert "Reader.close (src/a.py:2)" in finding.message and "Writer.close (src/b.py:2)" in finding.message


def test_rejected_alternatives_and_examples_claim_nothing(repo: Path) -> None:
    found = resolve(
        repo,
        "We keep `Record` instead of `RecordV2` or `LegacyRow`, for example `row_cache`.\n\n"
        "## Decision Records\n\n### D1: Keep records\n\n"
        "**Decision:** Keep `Record`.\n**Alternatives rejected:** `PageCache` (stale); `ReadReplica`.\n"
        "**Rationale:** `Record.load` streams.",
    )
    assert found.findings == []
    assert {e.mention for e in found.ledger.claims} == {"Record", "Record.load"}


def test_generated_trees_and_tests_are_not_what_a_name_means(repo: Path) -> None:
    write(repo / "out" / "source.js", "class GitService {\n  constructor(root) {}\n}\n")
    write(repo / "src" / "source.js", "class GitService {}\n")  # compiled beside source.ts
    write(repo / "tests" / "test_record.py", "class Record:\n    pass\n")
    found = resolve(repo, "`GitService` owns the repository root; `Record` is one line.")
    entries = claims(found)
    assert (entries["GitService"].file, entries["GitService"].candidates) == ("src/source.ts", 1)
    assert (entries["Record"].file, entries["Record"].candidates) == ("src/record.py", 1)
    assert found.findings == []


def test_an_unresolved_name_says_truthfully_where_it_appears(repo: Path) -> None:
    write(repo / "docs" / "guide.md", "Call `fetch_all` to warm the cache.\n")
    write(repo / "src" / "util.py", "# TODO: warm_cache() once the index lands\nVALUE = 1\n")
    found = resolve(repo, "`fetch_all` warms it. `warm_cache()` runs first. `Recrod.load` streams.")
    by_quote = {f.quote: f for f in found.findings}
    assert by_quote["fetch_all"].rule == "clm-undefined" and by_quote["fetch_all"].severity == "suggestion"
    assert "no definition in a source file" in by_quote["fetch_all"].message
    assert "docs/guide.md" in by_quote["fetch_all"].message  # Markdown holds it; no code uses it
    assert (
        by_quote["warm_cache()"].rule == "clm-undefined" and "src/util.py" in by_quote["warm_cache()"].message
    )
    assert by_quote["Recrod.load"].rule == "clm-unresolved"
    assert "appears nowhere in the repository" in by_quote["Recrod.load"].message


def test_a_location_on_blank_lines_is_no_claim(repo: Path) -> None:
    found = resolve(repo, "See `src/record.py:3` for the decorator.")
    assert found.ledger.claims == []
    [finding] = found.findings
    assert finding.rule == "clm-unresolved" and "a blank line" in finding.message
