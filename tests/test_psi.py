"""PSI reads every language in params/psi.toml: definitions, qualified names, references; any
other text file through the text fallback."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write

from pipeline.grounding.psi import build_index

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
        "go 1 file, java 1 file, javascript 1 file, python 1 file, rust 1 file, text 1 file, typescript 1 file"
    )
    assert "src/README.txt" in index.files and not index.definitions("README")


def test_a_root_without_any_text_says_so(tmp_path: Path) -> None:
    write(tmp_path / "docs" / "blob.bin", "\x00\x01binary")
    index = build_index(tmp_path, tmp_path / "docs")
    assert index.describe_sources().startswith("no source file PSI can read (it reads bash, c, cpp")


LANGUAGES = Path(__file__).parent / "corpus" / "psi"


@pytest.fixture(scope="module")
def languages():  # type: ignore[no-untyped-def]
    return build_index(LANGUAGES.parent, LANGUAGES)


@pytest.mark.parametrize(
    ("query", "qualified", "kind", "line", "file"),
    [
        ("refill_bucket", "refill_bucket", "function", 3, "sample.sh"),
        ("take_token", "take_token", "function", 7, "sample.sh"),
        ("LIMIT", "LIMIT", "variable", 2, "sample.sh"),
        ("refill_bucket", "refill_bucket", "function", 8, "sample.c"),
        ("refill_bucket", "refill_bucket", "declaration", 7, "sample.c"),
        ("bucket", "bucket", "struct", 3, "sample.c"),
        ("bucket_t", "bucket_t", "type", 4, "sample.c"),
        ("LIMIT", "LIMIT", "macro", 2, "sample.c"),
        ("Bucket.take", "limiter.Bucket.take", "method", 10, "sample.cpp"),
        ("Bucket.take", "limiter.Bucket.take", "member", 6, "sample.cpp"),
        ("limiter.refill", "limiter.refill", "function", 11, "sample.cpp"),
        ("Mode", "limiter.Mode", "enum", 13, "sample.cpp"),
        ("Bucket.Take", "Limiter.Bucket.Take", "method", 6, "sample.cs"),
        ("Bucket.Tokens", "Limiter.Bucket.Tokens", "property", 8, "sample.cs"),
        ("IBucket", "Limiter.IBucket", "interface", 2, "sample.cs"),
        ("Request", "Limiter.Request", "record", 12, "sample.cs"),
        ("Bucket.take", "Limiter.Bucket.take", "method", 7, "sample.rb"),
        ("Bucket.build", "Limiter.Bucket.build", "method", 10, "sample.rb"),
        ("LIMIT", "Limiter.LIMIT", "constant", 2, "sample.rb"),
        ("Bucket.take", "Bucket.take", "method", 8, "sample.php"),
        ("Refills", "Refills", "trait", 5, "sample.php"),
        ("make_bucket", "make_bucket", "function", 11, "sample.php"),
        ("LIMIT", "LIMIT", "constant", 3, "sample.php"),
        ("Bucket.take", "Bucket.take", "method", 10, "sample.kt"),
        ("Bucket.build", "Bucket.build", "method", 13, "sample.kt"),
        ("Registry", "Registry", "object", 17, "sample.kt"),
        ("refill", "refill", "function", 28, "sample.kt"),
        ("Bucket.take", "Bucket.take", "method", 7, "sample.swift"),
        ("Taker", "Taker", "protocol", 3, "sample.swift"),
        ("Bucket.tokens", "Bucket.tokens", "property", 5, "sample.swift"),
        ("refill", "refill", "function", 12, "sample.swift"),
        ("Limits.refill", "Limits.refill", "method", 8, "sample.scala"),
        ("Taker", "Taker", "trait", 2, "sample.scala"),
        ("Limit", "Limits.Limit", "value", 7, "sample.scala"),
        ("Bucket.new", "Bucket.new", "function", 4, "sample.lua"),
        ("Bucket.take", "Bucket.take", "function", 7, "sample.lua"),
        ("make_bucket", "make_bucket", "function", 13, "sample.lua"),
    ],
)
def test_definitions_in_the_languages_people_write(  # type: ignore[no-untyped-def]
    languages, query: str, qualified: str, kind: str, line: int, file: str
) -> None:
    found = [(s.qualified, s.kind, s.line) for s in languages.definitions(query) if s.file == f"psi/{file}"]
    assert (qualified, kind, line) in found


def test_references_in_the_languages_people_write(languages) -> None:  # type: ignore[no-untyped-def]
    calls = {(r.file, r.line) for r in languages.references_to("refill_bucket")}
    assert ("psi/sample.sh", 8) in calls and ("psi/sample.c", 12) in calls
    assert ("psi/sample.sh", 3) not in calls  # the definition's own name is not a reference
    assert ("psi/sample.cpp", 10) in {(r.file, r.line) for r in languages.references_to("refill")}
    assert languages.describe_sources() == (
        "bash 1 file, c 1 file, cpp 1 file, csharp 1 file, kotlin 1 file, lua 1 file, php 1 file, "
        "ruby 1 file, scala 1 file, swift 1 file"
    )


def test_a_script_without_an_extension_is_read_by_its_interpreter_line(tmp_path: Path) -> None:
    write(tmp_path / "bin" / "limit", "#!/usr/bin/env bash\nrefill() {\n  echo 1\n}\nrefill\n")
    write(tmp_path / "bin" / "tool", "#!/usr/bin/python3.11\ndef main():\n    pass\n")
    index = build_index(tmp_path, tmp_path / "bin")
    assert [(s.kind, s.file, s.line, s.exact) for s in index.definitions("refill")] == [
        ("function", "bin/limit", 2, True)
    ]
    assert [(s.kind, s.file) for s in index.definitions("main")] == [("function", "bin/tool")]
    assert index.describe_sources() == "bash 1 file, python 1 file"


def test_any_other_text_file_answers_definitions_and_references_as_text(tmp_path: Path) -> None:
    write(
        tmp_path / "src" / "Limit.pm",
        "package Limit;\nmy $rate = 5;\nsub refill {\n  return $rate;\n}\nsub take { refill() }\n1;\n",
    )
    write(tmp_path / "src" / "Makefile", "PREFIX ?= /usr\ninstall: build\n\tcp refill $(PREFIX)\n")
    write(tmp_path / "src" / "schema.sql", "CREATE TABLE IF NOT EXISTS buckets (id int);\n")
    index = build_index(tmp_path, tmp_path / "src")
    assert [(s.kind, s.file, s.line, s.exact) for s in index.definitions("refill")] == [
        ("text match", "src/Limit.pm", 3, False)
    ]
    assert [(s.file, s.line) for s in index.definitions("rate")] == [("src/Limit.pm", 2)]
    assert [(s.file, s.line) for s in index.definitions("Limit")] == [("src/Limit.pm", 1)]
    assert [(s.file, s.line) for s in index.definitions("PREFIX")] == [("src/Makefile", 1)]
    assert [(s.file, s.line) for s in index.definitions("install")] == [("src/Makefile", 2)]
    assert [(s.file, s.line) for s in index.definitions("buckets")] == [("src/schema.sql", 1)]
    assert not index.definitions("return") and not index.definitions("usr")
    refs = {(r.file, r.line, r.exact) for r in index.references_to("refill")}
    assert refs == {("src/Limit.pm", 3, False), ("src/Limit.pm", 6, False), ("src/Makefile", 3, False)}
    assert index.describe_sources() == "text 3 files"


def test_a_name_that_starts_with_a_dot_is_looked_up_whole(tmp_path: Path) -> None:
    write(tmp_path / "bin" / "find-dir", "#!/bin/bash\nif [ -f .adr-dir ]; then cat .adr-dir; fi\n")
    index = build_index(tmp_path, tmp_path / "bin")
    assert [(r.file, r.line) for r in index.references_to(".adr-dir")] == [("bin/find-dir", 2)] * 2
