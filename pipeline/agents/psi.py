"""PSI: symbol lookup over the code (definitions, references, signatures) with tree-sitter.

The languages, their file extensions and the nodes that define symbols are data
(params/psi.toml); the grammars come from tree-sitter-language-pack, whose wheels carry
them compiled, so nothing is downloaded at run time. Definitions are qualified by their
enclosing scopes (``Bucket.take``); references are identifier uses outside a definition's
own name.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from tree_sitter import Node, Parser
from tree_sitter_language_pack import get_parser

from pipeline.agents.readable import nothing, walk
from pipeline.settings import data_dir, load_toml


@dataclass(frozen=True, slots=True)
class DefinitionRule:
    kind: str
    name: str = "name"
    scope: bool = False
    define: bool = True
    qualifier: str | None = None
    top_level: bool = False
    nested_kind: str | None = None


@dataclass(frozen=True, slots=True)
class LanguageSpec:
    name: str
    grammar: str
    extensions: tuple[str, ...]
    identifiers: frozenset[str]
    definitions: dict[str, DefinitionRule]


@cache
def languages() -> dict[str, LanguageSpec]:
    table: dict[str, Any] = load_toml(data_dir("params") / "psi.toml")
    out: dict[str, LanguageSpec] = {}
    for name, spec in table.items():
        rules = {node: DefinitionRule(**rule) for node, rule in spec["definitions"].items()}
        out[name] = LanguageSpec(
            name, spec["grammar"], tuple(spec["extensions"]), frozenset(spec["identifiers"]), rules
        )
    return out


@cache
def _by_extension() -> dict[str, LanguageSpec]:
    return {ext: spec for spec in languages().values() for ext in spec.extensions}


@cache
def _parser(grammar: str) -> Parser:
    return get_parser(grammar)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Symbol:
    name: str
    qualified: str
    kind: str
    file: str
    line: int
    signature: str


@dataclass(frozen=True, slots=True)
class Reference:
    name: str
    file: str
    line: int
    text: str


@dataclass(slots=True)
class CodeIndex:
    root: Path
    root_under: Path
    """The directory indexed (the code root), inside ``root``."""
    symbols: list[Symbol] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    sources: Counter[str] = field(default_factory=Counter)
    """Source files read, per language."""

    def definitions(self, query: str) -> list[Symbol]:
        """Match a bare name (``take``), a qualified one (``TokenBucket.take``) or a dotted suffix."""
        query = query.strip().strip("`").removesuffix("()")
        return [
            s
            for s in self.symbols
            if s.qualified == query or s.name == query or s.qualified.endswith("." + query)
        ]

    def references_to(self, name: str) -> list[Reference]:
        bare = name.strip().strip("`").removesuffix("()").split(".")[-1]
        return [r for r in self.references if r.name == bare]

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


class _Walker:
    def __init__(self, spec: LanguageSpec, rel: str, lines: list[str], index: CodeIndex) -> None:
        self.spec, self.rel, self.lines, self.index = spec, rel, lines, index

    def walk(self, node: Node, scope: list[str], inside: bool) -> None:
        rule = self.spec.definitions.get(node.type)
        if rule is None:
            if node.type in self.spec.identifiers and node.child_count == 0:
                line = node.start_point[0] + 1
                self.index.references.append(
                    Reference(_text(node), self.rel, line, self.lines[line - 1].strip())
                )
            for child in node.children:
                self.walk(child, scope, inside)
            return
        name_node = node.child_by_field_name(rule.name)
        name = _text(name_node) if rule.define else _first_type_name(name_node)
        if rule.define and (name_node is None or name_node.type not in self.spec.identifiers):
            name = ""  # a pattern or an attribute, not a plain name
        if rule.top_level and inside:
            name = ""
        qualifier = _first_type_name(node.child_by_field_name(rule.qualifier)) if rule.qualifier else ""
        path = [*scope, qualifier] if qualifier else scope
        if name and rule.define:
            kind = rule.nested_kind if rule.nested_kind and scope else rule.kind
            line = node.start_point[0] + 1
            self.index.symbols.append(
                Symbol(name, ".".join([*path, name]), kind, self.rel, line, self._signature(node))
            )
        inner = [*path, name] if rule.scope and name else path
        for child in node.children:
            if name_node is not None and child == name_node:
                continue
            self.walk(child, inner, True)

    def _signature(self, node: Node) -> str:
        body = node.child_by_field_name("body")
        end = body.start_byte if body is not None else node.end_byte
        source = node.text or b""
        return " ".join(source[: end - node.start_byte].decode("utf-8", "replace").split()).rstrip(":{ ")


def iter_sources(root: Path, private: Callable[[Path], bool] = nothing) -> Iterator[Path]:
    """The files the index lists: the shared walk (agents.readable), hidden directories and the
    paths ``private`` covers left out."""
    return walk(root, private, hidden_dirs=False)


def build_index(
    root: Path, under: Path | None = None, private: Callable[[Path], bool] = nothing
) -> CodeIndex:
    index = CodeIndex(root=root, root_under=under or root)
    by_ext = _by_extension()
    for path in iter_sources(under or root, private):
        rel = path.relative_to(root).as_posix()
        index.files.append(rel)
        spec = by_ext.get(path.suffix)
        if spec is None:
            continue
        try:
            data = path.read_bytes()
        except OSError:
            continue
        tree = _parser(spec.grammar).parse(data)
        lines = data.decode("utf-8", "replace").splitlines() or [""]
        index.sources[spec.name] += 1
        _Walker(spec, rel, lines, index).walk(tree.root_node, [], False)
    return index
