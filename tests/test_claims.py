"""Grounded claims: the mentions a design makes of the code, their spans and fingerprints.

Fingerprints ignore layout and comments and change with the code, in every language PSI has a
grammar for and in files it reads as text; claims come from prose and fenced code; a name that
resolves to nothing and a quoted value the cited code does not hold are findings.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write

from pipeline.grounding.claims import Grounding
from pipeline.grounding.ledger import ledger_path, load_ledger
from pipeline.grounding.mentions import extract_claims
from pipeline.grounding.spans import CodeFile, definitions, read_code, span_fingerprint

# name -> (file, symbol, original, reformatted with comments, body changed)
LANGUAGES: dict[str, tuple[str, str, str, str, str]] = {
    "python": (
        "m.py",
        "Bucket.take",
        'class Bucket:\n    def take(self, n):\n        """Take n."""\n        return self.left - n\n',
        "class Bucket:\n    # takes\n    def take(  self,\n               n ):  # n tokens\n"
        '        """Take n tokens, or fewer."""\n\n        return self.left  -  n\n',
        'class Bucket:\n    def take(self, n):\n        """Take n."""\n        return self.left + n\n',
    ),
    "go": (
        "m.go",
        "Bucket.Take",
        "package m\n\nfunc (b *Bucket) Take(n int) int { return b.left - n }\n",
        "package m\n\n// Take takes.\nfunc (b *Bucket) Take(n int) int {\n\t// subtract\n\treturn b.left - n\n}\n",
        "package m\n\nfunc (b *Bucket) Take(n int) int { return b.left - n - 1 }\n",
    ),
    "rust": (
        "m.rs",
        "Bucket.take",
        "impl Bucket {\n    fn take(&mut self, n: u32) -> u32 { self.left - n }\n}\n",
        "impl Bucket {\n    /// Takes n.\n    fn take(\n        &mut self,\n        n: u32,\n    ) -> u32 {\n"
        "        self.left - n // rest\n    }\n}\n",
        "impl Bucket {\n    fn take(&mut self, n: u32) -> u32 { self.left.saturating_sub(n) }\n}\n",
    ),
    "typescript": (
        "m.ts",
        "Limiter.take",
        "class Limiter {\n  take(n: number): number { return this.left - n; }\n}\n",
        "class Limiter {\n  /** takes */\n  take(n: number): number {\n    return this.left - n; // rest\n  }\n}\n",
        "class Limiter {\n  take(n: number): number { return this.left - n * 2; }\n}\n",
    ),
    "javascript": (
        "m.js",
        "refill",
        "function refill(b) { return b.capacity; }\n",
        "// refill\nfunction refill( b ) {\n    return b.capacity;   /* full */\n}\n",
        "function refill(b) { return b.capacity / 2; }\n",
    ),
    "java": (
        "Gate.java",
        "Gate.open",
        "class Gate {\n  boolean open(int n) { return n > 0; }\n}\n",
        "class Gate {\n  // opens\n  boolean open(int n) {\n    return n > 0;\n  }\n}\n",
        "class Gate {\n  boolean open(int n) { return n >= 0; }\n}\n",
    ),
    "c": (
        "m.c",
        "take",
        "int take(int left, int n) { return left - n; }\n",
        "/* take */\nint take(int left,\n         int n)\n{\n    return left - n;  // rest\n}\n",
        "int take(int left, int n) { return left - n - 1; }\n",
    ),
    "ruby": (
        "m.rb",
        "Bucket.take",
        "class Bucket\n  def take(n)\n    @left - n\n  end\nend\n",
        "class Bucket\n  # takes\n  def take( n )\n\n    @left - n  # rest\n  end\nend\n",
        "class Bucket\n  def take(n)\n    @left - n - 1\n  end\nend\n",
    ),
    "perl (text)": (
        "take.pl",
        "take",
        "sub take {\n    my ($left, $n) = @_;\n    return $left - $n;\n}\n",
        "# take\nsub take {\n    my ($left, $n)   = @_;\n\n    return $left - $n;  # rest\n}\n",
        "sub take {\n    my ($left, $n) = @_;\n    return $left - $n - 1;\n}\n",
    ),
    "makefile (text)": (
        "Makefile",
        "build",
        "build:\n\tcc -O2 -o app main.c\n\ntest:\n\t./app --check\n",
        "# build it\nbuild:\n\tcc   -O2 -o app main.c\n\ntest:\n\t./app --check\n",
        "build:\n\tcc -O3 -o app main.c\n\ntest:\n\t./app --check\n",
    ),
    "sql (text)": (
        "schema.sql",
        "buckets",
        "CREATE TABLE buckets (\n  key text PRIMARY KEY,\n  tokens real NOT NULL\n);\n",
        "-- the buckets\nCREATE TABLE buckets (\n  key    text PRIMARY KEY,\n  tokens real NOT NULL -- left\n);\n",
        "CREATE TABLE buckets (\n  key text PRIMARY KEY,\n  tokens integer NOT NULL\n);\n",
    ),
}


def _fingerprint(root: Path, name: str, symbol: str, text: str) -> tuple[str, str]:
    write(root / name, text)
    code = read_code(root, name)
    assert isinstance(code, CodeFile)
    spans = definitions(code, symbol)
    assert spans, f"{symbol} not found in {name}"
    return span_fingerprint(code, spans[0]), code.method


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_fingerprints_ignore_layout_and_comments_and_see_the_code(tmp_path: Path, language: str) -> None:
    name, symbol, original, reformatted, changed = LANGUAGES[language]
    first, method = _fingerprint(tmp_path, name, symbol, original)
    assert method == ("text" if "(text)" in language else "tree-sitter")
    assert _fingerprint(tmp_path, name, symbol, reformatted)[0] == first
    assert _fingerprint(tmp_path, name, symbol, changed)[0] != first


def test_a_renamed_definition_keeps_its_fingerprint(tmp_path: Path) -> None:
    before = _fingerprint(tmp_path, "m.py", "refill", "def refill(b):\n    return refill_rate(b)\n")[0]
    after = _fingerprint(tmp_path, "m.py", "top_up", "def top_up(b):\n    return refill_rate(b)\n")[0]
    assert before == after


def test_a_decorator_belongs_to_the_definition(tmp_path: Path) -> None:
    plain = _fingerprint(tmp_path, "m.py", "rate", "def rate():\n    return 3\n")[0]
    cached = _fingerprint(tmp_path, "m.py", "rate", "@cache\ndef rate():\n    return 3\n")[0]
    assert plain != cached


DESIGN = """# Limits

## Overview

`Bucket.take` refuses a request when fewer than 5 tokens are left. It never blocks.
Refill runs in `src/limits.py`; see `src/limits.py:9` for the cap, `MAX_TOKENS`, which is 100.
The CLI's `parse` takes `--burst`. `Buckett.take` and `Bucket.tkae` name what the code lacks.
A `Clock` is injected, and `json.loads` parses the settings.

```python
bucket = Bucket(capacity=MAX_TOKENS)
bucket.take(1)
helper = make_helper()
```
"""

CODE = """import json

LEFT = 5


class Bucket:
    def take(self, n):
        return self.left >= LEFT
MAX_TOKENS = 100


def parse(text):
    return json.loads(text)
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    write(tmp_path / "src" / "limits.py", CODE)
    write(tmp_path / "docs" / "adr" / "one" / "design-final.md", DESIGN)
    return tmp_path


def test_mentions_come_from_prose_and_fenced_code() -> None:
    claims = extract_claims(DESIGN)
    found = {(m.text, m.kind, m.line, m.fenced) for m in claims.mentions}
    assert ("Bucket.take", "symbol", 5, False) in found
    assert ("src/limits.py", "path", 6, False) in found
    assert ("src/limits.py:9", "location", 6, False) in found
    assert ("Bucket", "symbol", 11, True) in found
    assert ("MAX_TOKENS", "symbol", 11, True) in found
    assert ("make_helper", "symbol", 13, True) in found
    first = next(m for m in claims.mentions if m.text == "Bucket.take")
    assert first.quote == "`Bucket.take` refuses a request when fewer than 5 tokens are left."
    assert "--burst" in {lit.text for lits in claims.literals.values() for lit in lits}


def test_claims_resolve_to_spans_and_unresolved_names_are_findings(repo: Path) -> None:
    design = repo / "docs" / "adr" / "one" / "design-final.md"
    resolution = Grounding(repo, repo).resolve(design)
    entries = {(e.mention, e.line): e for e in resolution.ledger.claims}
    take = entries["Bucket.take", 5]
    assert (take.kind, take.symbol, take.file, take.first, take.last) == (
        "symbol",
        "Bucket.take",
        "src/limits.py",
        7,
        8,
    )
    assert take.method == "tree-sitter"
    assert entries["src/limits.py:9", 6].kind == "location"
    assert entries["src/limits.py:9", 6].symbol == "MAX_TOKENS"  # the sentence's name on that line
    assert ("MAX_TOKENS", 6) not in entries  # located by the citation, not pinned to its definition
    assert entries["Bucket", 11].kind == "symbol"  # fenced code: a name the code defines
    assert ("make_helper", 13) not in entries  # an example's local name: no claim, no finding
    assert ("Clock", 8) not in entries
    rules = {(f.rule, f.quote, f.line) for f in resolution.findings}
    # `json.loads` is a library's name the code uses: neither a claim nor a finding
    assert rules == {
        ("clm-unresolved", "Buckett.take", 7),
        ("clm-unresolved", "Bucket.tkae", 7),
        ("clm-literal", "5", 5),  # the sentence cites Bucket.take, whose span holds LEFT, not 5
        ("clm-literal", "--burst", 7),  # not in `parse`, the code the sentence cites
    }
    unresolved = next(f for f in resolution.findings if f.rule == "clm-unresolved")
    assert unresolved.severity == "should-fix" and unresolved.file == "docs/adr/one/design-final.md"
    assert unresolved.section == "Overview"


def test_a_quoted_value_the_cited_span_holds_is_no_finding(repo: Path) -> None:
    design = repo / "docs" / "adr" / "one" / "design-final.md"
    # the cited line (src/limits.py:9) holds 100, so the sentence's 100 is no finding
    resolution = Grounding(repo, repo).resolve(design)
    assert not [f for f in resolution.findings if f.quote == "100"]
    location = next(e for e in resolution.ledger.claims if e.kind == "location")
    assert location.literals == ["100"]


def test_the_ledger_is_written_deterministically_beside_the_design(repo: Path) -> None:
    design = repo / "docs" / "adr" / "one" / "design-final.md"
    grounding = Grounding(repo, repo)
    _, written = grounding.refresh(design)
    ledger = ledger_path(design)
    assert written and ledger.name == "design-final.claims.json"
    first = ledger.read_bytes()
    assert Grounding(repo, repo).refresh(design)[1] is False  # the same bytes: not rewritten
    assert ledger.read_bytes() == first
    loaded = load_ledger(ledger)
    assert loaded.design == "design-final.md" and loaded.code_root == "."
    assert str(repo) not in first.decode()  # nothing absolute: the ledger is committed


def test_claims_never_resolve_to_documents_or_design_directories(repo: Path) -> None:
    write(repo / "README.md", "```python\nclass Buckett:\n    pass\n```\n")
    write(repo / "docs" / "adr" / "two" / "_workflow" / "notes.py", "class Buckett:\n    pass\n")
    design = repo / "docs" / "adr" / "one" / "design-final.md"
    resolution = Grounding(repo, repo).resolve(design)
    # README.md is no definition (Markdown is never code), and the notes under a design
    # directory's _workflow/ are designloop's: only the document is said to hold the name
    [found] = [f for f in resolution.findings if f.quote == "Buckett.take"]
    assert found.rule == "clm-undefined" and found.severity == "suggestion"
    assert "no definition in a source file" in found.message and "appears in README.md" in found.message
    assert "notes.py" not in found.message


OVERLOADED = """import typing as t


class Signer:
    @t.overload
    def unsign(self, value: str) -> str: ...

    @t.overload
    def unsign(self, value: bytes) -> bytes: ...

    def unsign(self, value):
        return value[:-4]
"""


def test_overloads_are_one_claim_spanning_every_definition(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    write(tmp_path / "signer.py", OVERLOADED)
    design = write(
        tmp_path / "docs" / "adr" / "one" / "design-final.md", "# S\n\n`Signer.unsign` drops the tag.\n"
    )
    [entry] = Grounding(tmp_path, tmp_path).resolve(design).ledger.claims
    assert (entry.first, entry.last) == (6, 12)  # from the first overload to the implementation's end
    write(tmp_path / "signer.py", OVERLOADED.replace("value[:-4]", "value[:-5]"))
    [again] = Grounding(tmp_path, tmp_path).resolve(design).ledger.claims
    assert again.fingerprint != entry.fingerprint


def test_the_psi_tool_never_reads_a_claims_ledger(repo: Path) -> None:
    from pipeline.agents.tools import ToolContext

    design = repo / "docs" / "adr" / "one" / "design-final.md"
    Grounding(repo, repo).refresh(design)
    assert "Bucket.take" in ledger_path(design).read_text(encoding="utf-8")
    index = ToolContext(role="fidelity-check", repo_root=repo).index()
    assert ledger_path(design).relative_to(repo).as_posix() not in index.files
    assert not [r for r in index.references_to("Bucket") if r.file.endswith(".claims.json")]
    assert [r for r in index.references_to("Bucket") if r.file == "docs/adr/one/design-final.md"]


SCRIPTS_DESIGN = """# The scripts

## Overview

- `_adr_help` works out the help text; `adr-help` shows it through a pager.
- `template.md` is the default template.
- It picks `templates/template.md` in the records directory when it exists.
- The file name is the number and a slug of the title, for example `0012-use-postgresql.md`.
- The installer is `src/install.sh`, and `_adr_halp` names a script nobody wrote.
"""


def test_file_names_examples_and_runtime_paths_are_no_unresolved_claims(tmp_path: Path) -> None:
    """A script without an extension and a template are files of the code (path claims); a file
    name given as an example and a path in the user's records directory are not the
    repository's; a missing file in a directory the code has, and a name nothing has, are."""
    (tmp_path / ".git").mkdir()
    write(tmp_path / "src" / "_adr_help", '#!/bin/bash\nset -e\necho "usage: adr help COMMAND"\n')
    write(tmp_path / "src" / "adr-help", '#!/bin/bash\nexec "$(dirname $0)/_adr_help" "$@" | less\n')
    write(tmp_path / "src" / "template.md", "# NUMBER. TITLE\n\nDate: DATE\n")
    design = write(tmp_path / "docs" / "adr" / "one" / "design-final.md", SCRIPTS_DESIGN)
    resolution = Grounding(tmp_path, tmp_path / "src").resolve(design)
    claims = {(e.mention, e.kind, e.file) for e in resolution.ledger.claims}
    assert ("_adr_help", "path", "src/_adr_help") in claims
    assert ("template.md", "path", "src/template.md") in claims
    assert {(f.rule, f.quote) for f in resolution.findings} == {
        ("clm-unresolved", "src/install.sh"),
        ("clm-unresolved", "_adr_halp"),
    }


def test_a_class_counts_by_its_declaration_and_each_member_by_its_own_span(tmp_path: Path) -> None:
    """A method added to a class, or a field's default changed, leaves the class's claim alone;
    its bases or decorator do not; the member's own claim sees its change."""
    base = "@attr.s\nclass Record(Base):\n    status = attr.ib(default=None)\n\n    def load(self):\n        return 1\n"
    record = _fingerprint(tmp_path, "m.py", "Record", base)[0]
    status = _fingerprint(tmp_path, "m.py", "Record.status", base)[0]
    grown = base + "\n    def unrelated(self):\n        return 2\n"
    assert _fingerprint(tmp_path, "m.py", "Record", grown)[0] == record
    changed = base.replace("default=None", "default='Unknown'")
    assert _fingerprint(tmp_path, "m.py", "Record", changed)[0] == record
    assert _fingerprint(tmp_path, "m.py", "Record.status", changed)[0] != status
    assert _fingerprint(tmp_path, "m.py", "Record", base.replace("(Base)", "(Other)"))[0] != record
    assert _fingerprint(tmp_path, "m.py", "Record", base.replace("@attr.s\n", ""))[0] != record
    rust = "pub struct Header {\n    pub height: u64,\n}\n"
    header = _fingerprint(tmp_path, "m.rs", "Header", rust)[0]
    assert _fingerprint(tmp_path, "m.rs", "Header", rust.replace("u64", "u32"))[0] == header
    assert (
        _fingerprint(tmp_path, "m.rs", "Header.height", rust.replace("u64", "u32"))[0]
        != (_fingerprint(tmp_path, "m.rs", "Header.height", rust)[0])
    )
