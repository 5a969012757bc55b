"""The code index kept on disk: a later build on unchanged code parses nothing, a change to one
file re-indexes that file only, and the index is the same as one built afresh; a damaged store is
rebuilt, never an error; ``claims`` keeps it in the runs directory, ``drift`` never makes one."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, write

from pipeline.grounding.index_store import IndexStore
from pipeline.grounding.lookup import claims_private
from pipeline.grounding.psi import CodeIndex, build_index

Cli = Callable[[list[str]], CliResult]


def _shape(index: CodeIndex) -> tuple[object, ...]:
    return (
        sorted((s.qualified, s.file, s.line, s.end, s.kind, s.exact) for s in index.symbols),
        sorted(index.files),
        sorted(index.used_names()),
        sorted((r.name, r.file, r.line, r.text, r.exact) for r in index.references),
        dict(index.sources),
        {k: v for k, v in index.texts.items()},
        sorted(index.configs),
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    write(
        tmp_path / "src" / "a.py",
        "class A:\n    size: int = 0\n\n    def go(self):\n        return 'ready'\n",
    )
    write(tmp_path / "src" / "b.ts", "export interface B {\n  url: string;\n}\n")
    write(tmp_path / "src" / "Makefile", "build:\n\tcc -o app main.c\n")
    write(tmp_path / "compose.yml", "services:\n  db:\n    image: postgres:16\n")
    return tmp_path


def test_a_later_build_reuses_every_unchanged_file_and_reparses_a_changed_one(repo: Path) -> None:
    store = repo / "runs" / "index"
    (repo / "runs").mkdir()
    first = IndexStore(store, repo, repo)
    built = first.build(claims_private(repo))
    assert sorted(first.reparsed) == ["compose.yml", "src/Makefile", "src/a.py", "src/b.ts"]
    assert _shape(built) == _shape(build_index(repo, repo, claims_private(repo)))
    again = IndexStore(store, repo, repo)
    assert _shape(again.build(claims_private(repo))) == _shape(built) and again.reparsed == []
    write(repo / "src" / "a.py", "class A:\n    size: int = 1\n")
    changed = IndexStore(store, repo, repo)
    index = changed.build(claims_private(repo))
    assert changed.reparsed == ["src/a.py"]
    assert _shape(index) == _shape(build_index(repo, repo, claims_private(repo)))


def test_a_damaged_store_is_rebuilt_not_an_error(repo: Path) -> None:
    store = repo / "runs" / "index"
    (repo / "runs").mkdir()
    first = IndexStore(store, repo, repo)
    first.build(claims_private(repo))
    first.path.write_text('{"format": 1, "files": {"src/a.py": {"digest": 3}}', encoding="utf-8")
    rebuilt = IndexStore(store, repo, repo)
    rebuilt.build(claims_private(repo))
    assert len(rebuilt.reparsed) == 4
    json.loads(rebuilt.path.read_text(encoding="utf-8"))  # written whole again


def test_claims_keeps_the_index_in_runs_and_drift_never_makes_runs(
    repo: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(
        repo / "docs" / "adr" / "one" / "design-final.md", "# D\n\n## Overview\n\n`A.go` returns `ready`.\n"
    )
    monkeypatch.chdir(repo)
    assert cli(["drift", "docs/adr/one"]).code == 2  # no ledger yet
    assert not (repo / "runs").exists()
    assert cli(["claims", "docs/adr/one"]).code == 0
    assert (repo / "runs" / ".gitignore").is_file()
    [kept] = (repo / "runs" / "index").glob("*.json")
    assert "src/a.py" in json.loads(kept.read_text(encoding="utf-8"))["files"]
    assert cli(["drift", "docs/adr/one"]).code == 0
