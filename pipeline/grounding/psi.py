"""PSI: symbol lookup over the code (definitions, references, signatures) with tree-sitter.

The languages, their file extensions and the nodes that define symbols are data
(params/psi.toml); each grammar comes compiled in its own package from PyPI
(tree-sitter-python, tree-sitter-bash, ...), so nothing is downloaded at run time.
Definitions are qualified by their enclosing scopes (``Bucket.take``); references are
identifier uses outside a definition's own name, and string literals that hold one name
(``"db_admin"``: a value the code uses, found as text). Any other text file under the code root is
read as text (pipeline.grounding.psi_text): its definitions are found by the shapes most
languages share, its references as whole words, and both are marked as text matches.
"""

from __future__ import annotations

import importlib
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from tree_sitter import Language, Node, Parser

from pipeline import confinement
from pipeline.agents.readable import nothing, walk
from pipeline.confinement import OutsideRepository
from pipeline.grounding.psi_text import TEXT, bare_name, readable_text, text_definitions, text_references
from pipeline.settings import data_dir, load_toml

LITERAL_NAME_RE = re.compile(r"[A-Za-z_][\w.\-]*[A-Za-z0-9_]")
"""A string literal's content that is one name ("db_admin", "eu-west-1", "GOV.UK")."""


@dataclass(frozen=True, slots=True)
class DefinitionRule:
    kind: str
    name: str = "name"
    name_child: str | None = None
    descend: bool = False
    name_types: tuple[str, ...] | None = None
    needs: str | None = None
    scope: bool = False
    namespace: bool = False
    """A scope that qualifies names without making what it holds members (a C++ namespace)."""
    define: bool = True
    qualifier: str | None = None
    top_level: bool = False
    nested_kind: str | None = None


@dataclass(frozen=True, slots=True)
class LanguageSpec:
    name: str
    grammar: str
    """The grammar package's module (``tree_sitter_python``)."""
    language: str
    """The function in it that returns the language."""
    extensions: tuple[str, ...]
    identifiers: frozenset[str]
    definitions: dict[str, DefinitionRule]
    qualified: dict[str, tuple[str, str]] = field(default_factory=dict)
    shebangs: tuple[str, ...] = ()
    """Interpreters whose ``#!`` line marks a file without an extension as this language."""


def _rule(raw: dict[str, Any]) -> DefinitionRule:
    fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()}
    return DefinitionRule(**fields)


@cache
def languages() -> dict[str, LanguageSpec]:
    table: dict[str, Any] = load_toml(data_dir("params") / "psi.toml")
    out: dict[str, LanguageSpec] = {}
    for name, spec in table.items():
        rules = {node: _rule(rule) for node, rule in spec["definitions"].items()}
        out[name] = LanguageSpec(
            name,
            spec["grammar"],
            spec.get("language", "language"),
            tuple(spec["extensions"]),
            frozenset(spec["identifiers"]),
            rules,
            {node: (pair[0], pair[1]) for node, pair in spec.get("qualified", {}).items()},
            tuple(spec.get("shebangs", [])),
        )
    return out


@cache
def _by_extension() -> dict[str, LanguageSpec]:
    return {ext: spec for spec in languages().values() for ext in spec.extensions}


@cache
def parser_for(grammar: str, language: str) -> Parser:
    module = importlib.import_module(grammar)
    return Parser(Language(getattr(module, language)()))


@dataclass(frozen=True, slots=True)
class Symbol:
    name: str
    qualified: str
    kind: str
    file: str
    line: int
    signature: str
    exact: bool = True
    """False for a text match (a file no grammar reads)."""
    end: int = 0
    """The definition's last line (0: not known, a text match)."""


@dataclass(frozen=True, slots=True)
class Reference:
    name: str
    file: str
    line: int
    text: str
    exact: bool = True


@dataclass(slots=True)
class CodeIndex:
    root: Path
    root_under: Path
    """The directory indexed (the code root), inside ``root``."""
    symbols: list[Symbol] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    sources: Counter[str] = field(default_factory=Counter)
    """Source files read, per language (``text`` for the files read as text)."""
    texts: dict[str, list[str]] = field(default_factory=dict)
    """The lines of the files no grammar reads, by path: the text fallback searches them."""

    def definitions(self, query: str) -> list[Symbol]:
        """Match a bare name (``take``), a qualified one (``TokenBucket.take``) or a dotted suffix;
        then the files read as text, by the shapes definitions share."""
        query = query.strip().strip("`").removesuffix("()")
        parsed = [
            s
            for s in self.symbols
            if s.qualified == query or s.name == query or s.qualified.endswith("." + query)
        ]
        name = bare_name(query)[1]
        found = [
            Symbol(name, query, "text match", rel, n, lines[n - 1].strip(), exact=False)
            for rel, lines in self.texts.items()
            for n in text_definitions(query, lines)
        ]
        return parsed + found

    def references_to(self, name: str) -> list[Reference]:
        bare = bare_name(name)[1]
        parsed = [r for r in self.references if r.name == bare]
        found = [
            Reference(bare, rel, n, lines[n - 1].strip(), exact=False)
            for rel, lines in self.texts.items()
            for n in text_references(name, lines)
        ]
        return parsed + found

    def find_files(self, query: str) -> list[str]:
        query = query.strip().strip("`").removeprefix("./").rstrip("/")
        if not query:
            return []
        return [
            f
            for f in self.files
            if f == query or f.endswith("/" + query) or f.startswith(query + "/") or ("/" + query + "/") in f
        ]

    def describe_sources(self) -> str:
        """What PSI read, for a reader: ``python 5 files, go 2 files``, or that it read nothing."""
        if not self.sources:
            readable = ", ".join(sorted(languages()))
            return f"no source file PSI can read (it reads {readable})"
        return ", ".join(
            f"{lang} {n} file{'s' if n != 1 else ''}" for lang, n in sorted(self.sources.items())
        )


def _text(node: Node | None) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


def _first_type_name(node: Node | None) -> str:
    """The first type name inside ``node`` (a Go receiver's type, a Rust impl's type), else
    its first identifier."""
    for wanted in ("type_identifier", "identifier"):
        queue = [node] if node is not None else []
        while queue:
            current = queue.pop(0)
            if current.type == wanted and current.child_count == 0:
                return _text(current)
            queue.extend(current.children)
    return ""


def _first_identifier(node: Node | None, identifiers: frozenset[str]) -> Node | None:
    """The first identifier inside ``node``, breadth first."""
    queue = [node] if node is not None else []
    while queue:
        current = queue.pop(0)
        if current.type in identifiers and current.child_count == 0:
            return current
        queue.extend(current.children)
    return None


class _Walker:
    def __init__(self, spec: LanguageSpec, rel: str, lines: list[str], index: CodeIndex) -> None:
        self.spec, self.rel, self.lines, self.index = spec, rel, lines, index
        self.names: set[tuple[int, int]] = set()
        """The definitions' own names (by byte span): not references."""

    def name_node(self, node: Node, rule: DefinitionRule) -> Node | None:
        """The node holding a definition's name, as the rule finds it."""
        start: Node | None = node
        if rule.name_child:
            start = next((c for c in node.children if c.type == rule.name_child), None)
        if not rule.name:
            return _first_identifier(start, self.spec.identifiers)
        target = start
        for part in rule.name.split("."):
            target = target.child_by_field_name(part) if target is not None else None
        last = rule.name.split(".")[-1]
        while rule.descend and target is not None and not self._named(target):
            deeper = target.child_by_field_name(last)
            if deeper is None:
                break
            target = deeper
        return target

    def _named(self, node: Node) -> bool:
        return node.type in self.spec.identifiers or node.type in self.spec.qualified

    def split_name(self, node: Node | None, rule: DefinitionRule) -> tuple[list[str], str]:
        """A name node as (qualifiers, name): ``Bucket::take`` is (["Bucket"], "take")."""
        if node is None:
            return [], ""
        fields = self.spec.qualified.get(node.type)
        if fields is not None:
            outer, inner = (node.child_by_field_name(f) for f in fields)
            head, last = self.split_name(inner, rule)
            scope = [part for part in _text(outer).replace("::", ".").split(".") if part]
            return [*scope, *head], last
        if node.type not in self.spec.identifiers:
            return [], ""  # a pattern or an attribute, not a plain name
        if rule.name_types is not None and node.type not in rule.name_types:
            return [], ""
        return [], _text(node)

    def _literal(self, node: Node) -> None:
        """A string literal that holds one name ("db_admin", 'fail_open'): the code uses that
        name as a value, a reference found by text (not exact)."""
        value = _text(node).strip().strip("'\"`")
        if LITERAL_NAME_RE.fullmatch(value):
            line = node.start_point[0] + 1
            self.index.references.append(
                Reference(value, self.rel, line, self.lines[line - 1].strip(), exact=False)
            )

    def walk(self, node: Node, scope: list[str], inside: bool, member: bool = False) -> None:
        """Index ``node``: ``scope`` qualifies its names, ``inside`` says it is within a
        definition, ``member`` that it is within a type (its functions are methods)."""
        rule = self.spec.definitions.get(node.type)
        if rule is None or (rule.needs and node.child_by_field_name(rule.needs) is None):
            span = (node.start_byte, node.end_byte)
            if node.type in self.spec.identifiers and node.child_count == 0 and span not in self.names:
                line = node.start_point[0] + 1
                self.index.references.append(
                    Reference(_text(node), self.rel, line, self.lines[line - 1].strip())
                )
            elif "string" in node.type and node.child_count == 0:
                self._literal(node)
            for child in node.children:
                self.walk(child, scope, inside, member)
            return
        name_node = self.name_node(node, rule)
        if name_node is not None:
            self.names.add((name_node.start_byte, name_node.end_byte))
        if rule.define:
            heads, name = self.split_name(name_node, rule)
        else:
            heads, name = [], _first_type_name(name_node)
        if rule.top_level and inside:
            name = ""
        qualifier = _first_type_name(node.child_by_field_name(rule.qualifier)) if rule.qualifier else ""
        path = [*scope, qualifier] if qualifier else scope
        path = [*path, *heads]
        if name and rule.define:
            kind = rule.nested_kind if rule.nested_kind and (member or heads) else rule.kind
            line, end = node.start_point[0] + 1, node.end_point[0] + 1
            self.index.symbols.append(
                Symbol(name, ".".join([*path, name]), kind, self.rel, line, self._signature(node), end=end)
            )
        inner = [*path, name] if rule.scope and name else path
        within = member or (rule.scope and not rule.namespace)
        for child in node.children:
            if name_node is not None and child == name_node:
                continue
            self.walk(child, inner, True, within)

    def _signature(self, node: Node) -> str:
        body = node.child_by_field_name("body")
        end = body.start_byte if body is not None else node.end_byte
        source = node.text or b""
        return " ".join(source[: end - node.start_byte].decode("utf-8", "replace").split()).rstrip(":{ ")


def iter_sources(
    under: Path, private: Callable[[Path], bool] = nothing, root: Path | None = None
) -> Iterator[Path]:
    """The files the index lists: the shared walk (agents.readable) of ``under``, hidden
    directories, the paths ``private`` covers and every file resolving outside ``root`` (the
    repository) left out."""
    return walk(under, private, hidden_dirs=False, root=root)


def language_of(path: Path, head: bytes) -> LanguageSpec | None:
    """The language of ``path``: by its extension, else (a script with none) by its ``#!`` line."""
    spec = _by_extension().get(path.suffix)
    if spec is not None or path.suffix or not head.startswith(b"#!"):
        return spec
    words = head.split(b"\n", 1)[0][2:].decode("utf-8", "replace").split()
    program = words[0].rsplit("/", 1)[-1] if words else ""
    if program == "env":
        rest = [w for w in words[1:] if not w.startswith("-")]
        program = rest[0] if rest else ""
    program = program.rstrip("0123456789.")
    return next((s for s in languages().values() if program in s.shebangs), None) if program else None


def build_index(
    root: Path, under: Path | None = None, private: Callable[[Path], bool] = nothing
) -> CodeIndex:
    index = CodeIndex(root=root, root_under=under or root)
    for path in iter_sources(under or root, private, root):
        index_file(index, path)
    return index


def index_file(index: CodeIndex, path: Path, data: bytes | None = None) -> None:
    """Add one file to ``index`` (``data``: its bytes, when the caller read them already)."""
    rel = path.relative_to(index.root).as_posix()
    try:
        data = confinement.read_bytes(path, index.root) if data is None else data
    except OutsideRepository:  # a link out of the repository: never listed, never quoted
        return
    except OSError:
        index.files.append(rel)
        return
    index.files.append(rel)
    spec = language_of(path, data[:200])
    if spec is None:
        text = readable_text(data)
        if text is not None and text.strip():
            index.texts[rel] = text.split("\n")
            index.sources[TEXT] += 1
        return
    tree = parser_for(spec.grammar, spec.language).parse(data)
    lines = data.decode("utf-8", "replace").split("\n")
    index.sources[spec.name] += 1
    _Walker(spec, rel, lines, index).walk(tree.root_node, [], False)


def answer(index: CodeIndex, query: str, kind: str, limit: int) -> str:
    """The PSI tool's answer to a ``definition``, ``signature``, ``references`` or ``file`` query."""
    if kind == "file":
        files = index.find_files(query)
        return "\n".join(files) if files else f"no file matches {query}"
    if kind == "references":
        refs = index.references_to(query)[:limit]
        lines = [f"{r.file}:{r.line}:{r.text}" for r in refs]
        if any(not r.exact for r in refs):
            lines.append("(lines from files no grammar reads, and string literals, are text matches)")
        return "\n".join(lines) or f"no references to {query} under the code root"
    symbols = index.definitions(query)
    if not symbols:
        return _not_found(index, query)
    if kind == "signature":
        return "\n".join(f"{s.file}:{s.line}: {s.signature}" for s in symbols)
    return "\n".join(
        f"{s.kind} {s.qualified} at {s.file}:{s.line}" + ("" if s.exact else f": {s.signature}")
        for s in symbols
    )


def _not_found(index: CodeIndex, query: str) -> str:
    """No definition: say what PSI read and whether the name appears at all."""
    read = index.describe_sources()
    if not index.sources:
        return f"no definition of {query} ({read} under the code root)"
    uses = index.references_to(query)
    if not uses:
        return f"no definition of {query}, and the name appears nowhere under the code root ({read})"
    files = sorted({r.file for r in uses})
    shown = ", ".join(files[:5]) + (" ..." if len(files) > 5 else "")
    return (
        f"no definition of {query}; the name appears on {len(uses)} line(s) in {shown} "
        "(kind=references lists them)"
    )
