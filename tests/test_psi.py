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


FIELDS = {
    "record.py": (
        "import attr\nfrom dataclasses import dataclass\n\n\n@attr.s\nclass Record:\n"
        "    status = attr.ib(default=None)\n    size: int = attr.ib(default=0)\n\n\n"
        "@dataclass\nclass Point:\n    x: float\n\n\nclass Plain:\n    def __init__(self, n):\n"
        "        self.n = n\n        self.n = n + 1\n        local = 3\n"
    ),
    "source.ts": "export interface Source {\n  url: string;\n  read(k: string): number;\n}\n"
    "class Cache {\n  private entries = new Map();\n}\n",
    "header.rs": "pub struct Header {\n    pub height: u64,\n    hash: [u8; 32],\n}\n"
    "enum Mode { Light, Full { peers: u8 } }\n",
    "conn.go": "package m\n\ntype Conn struct {\n\tAddr string\n}\n",
}


@pytest.mark.parametrize(
    ("query", "file", "line"),
    [
        ("Record.status", "src/record.py", 7),
        ("Record.size", "src/record.py", 8),
        ("Point.x", "src/record.py", 13),
        ("Plain.n", "src/record.py", 18),
        ("Source.url", "src/source.ts", 2),
        ("Cache.entries", "src/source.ts", 6),
        ("Header.height", "src/header.rs", 2),
        ("Mode.Full.peers", "src/header.rs", 5),
        ("Conn.Addr", "src/conn.go", 4),
    ],
)
def test_fields_of_classes_interfaces_and_structs_are_definitions(
    tmp_path: Path, query: str, file: str, line: int
) -> None:
    for name, text in FIELDS.items():
        write(tmp_path / "src" / name, text)
    index = build_index(tmp_path, tmp_path / "src")
    assert [(s.file, s.line, s.kind) for s in index.definitions(query)] == [(file, line, "field")]
    assert not index.definitions("local")  # a method's local variable is no field


def test_configuration_entries_are_definitions_by_their_dotted_path(tmp_path: Path) -> None:
    write(
        tmp_path / "docker-compose.yml",
        "services:\n  postgres:\n    image: postgres:16\n\n  redis:\n    image: redis:7\n",
    )
    write(tmp_path / "pyproject.toml", '[tool.ruff]\nline-length = 110\nselect = [\n  "E",\n]\n')
    write(tmp_path / ".env.example", "DATABASE_URL=postgres://u:secret@db/app\n")
    write(tmp_path / "Dockerfile", "FROM python:3.12 AS builder\nENV PYTHONUNBUFFERED=1\n")
    write(tmp_path / "package.json", '{\n  "scripts": {\n    "build": "tsc -p ."\n  }\n}\n')
    index = build_index(tmp_path)
    found = {s.qualified: (s.file, s.line, s.end, s.exact) for s in index.symbols}
    assert found["services.postgres"] == ("docker-compose.yml", 2, 3, True)
    assert found["services.redis"] == ("docker-compose.yml", 5, 6, True)
    assert found["tool.ruff.line-length"] == ("pyproject.toml", 2, 2, True)
    assert found["tool.ruff.select"] == ("pyproject.toml", 3, 5, True)
    assert found["tool.ruff"] == ("pyproject.toml", 1, 5, True)
    assert found["DATABASE_URL"][:2] == (".env.example", 1)
    assert found["builder"] == ("Dockerfile", 1, 1, True)
    assert found["PYTHONUNBUFFERED"][:2] == ("Dockerfile", 2)
    assert found["scripts.build"] == ("package.json", 3, 3, True)
    assert [s.file for s in index.definitions("postgres")] == ["docker-compose.yml"]
    # a parsed configuration file is not searched again by the text fallback's shapes
    assert [s.exact for s in index.definitions("services")] == [True]
    assert "secret" not in " ".join(s.signature for s in index.symbols)  # a .env value is never kept


def test_generated_vendored_and_oversized_files_are_not_source(tmp_path: Path) -> None:
    write(tmp_path / "src" / "bucket.ts", "export class Bucket {}\n")
    write(tmp_path / "src" / "bucket.js", "class Bucket {}\n")  # compiled beside its source
    write(tmp_path / "out" / "bucket.js", "class Bucket {}\n")
    write(tmp_path / "vendor" / "lib.go", "package lib\n\ntype Bucket struct{}\n")
    write(tmp_path / "src" / "api_pb2.py", "class Bucket:\n    pass\n")
    write(tmp_path / "src" / "gen.py", "# Code generated by protoc. DO NOT EDIT.\nclass Bucket:\n    pass\n")
    write(tmp_path / "src" / "app.min.css", "a{}\n")
    write(tmp_path / "src" / "blob.js", "var Bucket=1;" + "x=1;" * 400 + "\n")
    write(tmp_path / "src" / "huge.py", "class Bucket:\n    pass\n" + "#" * (4 * 2**20) + "\n")
    outside = write(tmp_path.parent / f"{tmp_path.name}-outside" / "secret.py", "class Bucket:\n    pass\n")
    (tmp_path / "src" / "linked.py").symlink_to(outside)
    index = build_index(tmp_path)
    assert [s.file for s in index.definitions("Bucket")] == ["src/bucket.ts"]
    assert "out/bucket.js" not in index.files and "vendor/lib.go" not in index.files
    notes = index.notes
    assert notes["src/bucket.js"] == notes["src/api_pb2.py"] == "not read: generated or vendored"
    assert notes["src/gen.py"].startswith("not read: generated") and notes["src/blob.js"].startswith(
        "not read"
    )
    assert "more than" in notes["src/huge.py"]
    assert "src/linked.py" not in index.files  # a link out of the repository is never listed
