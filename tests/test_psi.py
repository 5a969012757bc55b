"""PSI reads every language in params/psi.toml: definitions, qualified names, references."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write

from pipeline.agents.psi import build_index

SOURCES = {
    "store.py": "class Store:\n    def take(self, n):\n        return n\n\nLIMIT = 3\n\ndef make():\n    return Store()\n",
    "bucket.go": (
        "package m\n\ntype Bucket struct{ n int }\n\n"
        "func (b *Bucket) Take(n int) bool { return true }\n\nfunc New() *Bucket { return nil }\n"
    ),
    "lib.rs": (
        "struct Bucket { n: u32 }\nimpl Bucket {\n    fn take(&mut self) -> bool { true }\n}\n"
        "fn new() -> Bucket { Bucket { n: 0 } }\ntrait Store { fn get(&self); }\n"
    ),
    "limit.ts": (
        "export class Limiter {\n  take(n: number): boolean { return true }\n}\n"
        "export function build(): Limiter { return new Limiter() }\nconst MAX = 3;\n"
        "interface Source { read(k: string): number }\n"
    ),
    "app.js": "class Server {\n  listen(port) { return port }\n}\nfunction start() { return new Server() }\n",
    "Gate.java": "class Gate {\n  boolean open(int n) { return true; }\n  Gate() {}\n}\ninterface Door { int size(); }\n",
}


@pytest.fixture
def index(tmp_path: Path):  # type: ignore[no-untyped-def]
    for name, text in SOURCES.items():
        write(tmp_path / "src" / name, text)
    write(tmp_path / "src" / "README.txt", "not code\n")
    return build_index(tmp_path, tmp_path / "src")


@pytest.mark.parametrize(
    ("query", "qualified", "kind", "file"),
    [
        ("Store.take", "Store.take", "method", "src/store.py"),
        ("LIMIT", "LIMIT", "variable", "src/store.py"),
        ("Bucket.Take", "Bucket.Take", "method", "src/bucket.go"),
        ("New", "New", "function", "src/bucket.go"),
        ("take", "Bucket.take", "method", "src/lib.rs"),
        ("Store.get", "Store.get", "method", "src/lib.rs"),
        ("Limiter.take", "Limiter.take", "method", "src/limit.ts"),
        ("build", "build", "function", "src/limit.ts"),
        ("MAX", "MAX", "variable", "src/limit.ts"),
        ("Source.read", "Source.read", "method", "src/limit.ts"),
        ("Server.listen", "Server.listen", "method", "src/app.js"),
        ("Gate.open", "Gate.open", "method", "src/Gate.java"),
        ("Door", "Door", "interface", "src/Gate.java"),
    ],
)
def test_definitions_in_every_language(index, query: str, qualified: str, kind: str, file: str) -> None:  # type: ignore[no-untyped-def]
    found = [(s.qualified, s.kind, s.file) for s in index.definitions(query) if s.file == file]
    assert (qualified, kind, file) in found


def test_references_and_what_was_read(index) -> None:  # type: ignore[no-untyped-def]
    assert {r.file for r in index.references_to("Bucket")} >= {"src/bucket.go", "src/lib.rs"}
    assert index.describe_sources() == (
        "go 1 file, java 1 file, javascript 1 file, python 1 file, rust 1 file, typescript 1 file"
    )
    assert "src/README.txt" in index.files and not index.definitions("README")


def test_a_root_without_readable_source_says_so(tmp_path: Path) -> None:
    write(tmp_path / "docs" / "notes.md", "# notes\n")
    index = build_index(tmp_path, tmp_path / "docs")
    assert index.describe_sources().startswith("no source file PSI can read (it reads go, java")
