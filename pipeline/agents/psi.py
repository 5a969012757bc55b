"""PSI: symbol lookup over the code (definitions, references, signatures) with tree-sitter.

The index covers Python source under the repository root. Definitions are classes,
functions and methods (qualified as ``Class.method``) and module-level assignments;
references are identifier and attribute uses outside the definition's own name.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import tree_sitter_python
from tree_sitter import Language, Node, Parser

SKIP_DIRS = frozenset(
    {
        ".git",
        ".venv",
        "venv",
        "node_modules",
        "__pycache__",
        "runs",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".hypothesis",
        "build",
        "dist",
    }
)
_LANGUAGE = Language(tree_sitter_python.language())


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
    symbols: list[Symbol] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

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


def _text(node: Node) -> str:
    return node.text.decode("utf-8", "replace") if node.text is not None else ""


def _walk(node: Node, scope: list[str], rel: str, lines: list[str], index: CodeIndex) -> None:
    for child in node.children:
        kind = child.type
        if kind == "decorated_definition":
            inner = child.child_by_field_name("definition")
            if inner is not None:
                _define(inner, scope, rel, lines, index)
            continue
        if kind in ("function_definition", "class_definition"):
            _define(child, scope, rel, lines, index)
            continue
        if kind == "expression_statement" and not scope:
            assign = child.children[0] if child.children else None
            if assign is not None and assign.type == "assignment":
                target = assign.child_by_field_name("left")
                if target is not None and target.type == "identifier":
                    name = _text(target)
                    line = child.start_point[0] + 1
                    index.symbols.append(Symbol(name, name, "variable", rel, line, lines[line - 1].strip()))
        _collect_refs(child, rel, lines, index)


def _define(node: Node, scope: list[str], rel: str, lines: list[str], index: CodeIndex) -> None:
    name_node = node.child_by_field_name("name")
    if name_node is None:
        return
    name = _text(name_node)
    kind = "class" if node.type == "class_definition" else ("method" if scope else "function")
    line = node.start_point[0] + 1
    body = node.child_by_field_name("body")
    header_end = body.start_byte if body is not None else node.end_byte
    source = node.text or b""
    signature = " ".join(source[: header_end - node.start_byte].decode("utf-8", "replace").split()).rstrip(
        ":"
    )
    index.symbols.append(Symbol(name, ".".join([*scope, name]), kind, rel, line, signature))
    for part in ("parameters", "superclasses", "return_type"):
        sub = node.child_by_field_name(part)
        if sub is not None:
            _collect_refs(sub, rel, lines, index)
    if body is not None:
        _walk(body, [*scope, name], rel, lines, index)


def _collect_refs(node: Node, rel: str, lines: list[str], index: CodeIndex) -> None:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in ("function_definition", "class_definition", "decorated_definition"):
            continue  # nested definitions are walked by _walk
        if current.type == "identifier":
            line = current.start_point[0] + 1
            index.references.append(Reference(_text(current), rel, line, lines[line - 1].strip()))
        stack.extend(reversed(current.children))


def iter_sources(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            yield Path(dirpath) / name


def build_index(root: Path, under: Path | None = None) -> CodeIndex:
    parser = Parser(_LANGUAGE)
    index = CodeIndex(root=root)
    for path in iter_sources(under or root):
        rel = path.relative_to(root).as_posix()
        index.files.append(rel)
        if path.suffix != ".py":
            continue
        try:
            data = path.read_bytes()
        except OSError:
            continue
        tree = parser.parse(data)
        lines = data.decode("utf-8", "replace").splitlines() or [""]
        _walk(tree.root_node, [], rel, lines, index)
    return index
