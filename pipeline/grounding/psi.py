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
from pipeline.confinement import OutsideRepository, TooLarge
from pipeline.grounding.config import config_entries, config_kind
from pipeline.grounding.psi_text import TEXT, bare_name, readable_text, text_definitions, text_references
from pipeline.grounding.rules import claim_rules
from pipeline.grounding.sources import edges, generated_dir, generated_path, generated_text
from pipeline.grounding.symbols import Reference, Symbol
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
    fields: bool = False
    """With ``top_level``: also right in a type's body (a class's field), never in a function."""
    receiver: str | None = None
    """In a method, an assignment to ``<receiver>.<name>`` defines the field ``Type.name`` (the
    first such assignment in the file: Python's ``self.size = size``)."""
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


Uses = dict[str, list[int]]
"""A file's uses of names as the index keeps them: each name's 1-based lines, negative where the
use was found as text (a string literal holding the name), not by the parser."""


@dataclass(slots=True)
class FileEntry:
    """What the index holds of one file: a function of its path and bytes alone, so it can be
    kept on disk keyed by them (grounding.index_store)."""

    rel: str
    language: str | None = None
    """The language a grammar read it in, ``text``, or None (not read: ``note`` says why)."""
    symbols: list[Symbol] = field(default_factory=list)
    uses: Uses = field(default_factory=dict)
    config: bool = False
    """A configuration file: its entries are its symbols, found by a parser, not by shape."""
    note: str | None = None


@dataclass(slots=True)
class CodeIndex:
    root: Path
    root_under: Path
    """The directory indexed (the code root), inside ``root``."""
    symbols: list[Symbol] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    sources: Counter[str] = field(default_factory=Counter)
    """Source files read, per language (``text`` for the files read as text)."""
    texts: dict[str, list[str]] = field(default_factory=dict)
    """The lines of the files no grammar reads, by path: the text fallback searches them."""
    configs: set[str] = field(default_factory=set)
    """The configuration files (their entries are parsed symbols, not text matches)."""
    notes: dict[str, str] = field(default_factory=dict)
    """Files listed but not read, and why (too large, generated, outside the repository)."""
    uses: dict[str, Uses] = field(default_factory=dict)
    """Each parsed file's uses of names (text files are searched on demand)."""
    _lines: dict[str, list[str]] = field(default_factory=dict)

    def add(self, entry: FileEntry, lines: list[str] | None = None) -> None:
        """Add one file's entry (``lines``: its text, kept when no grammar reads it)."""
        self.files.append(entry.rel)
        if entry.note is not None:
            self.notes[entry.rel] = entry.note
        if entry.language is None:
            return
        self.sources[entry.language] += 1
        self.symbols += entry.symbols
        if entry.uses:
            self.uses[entry.rel] = entry.uses
        if entry.config:
            self.configs.add(entry.rel)
        if entry.language == TEXT and lines is not None:
            self.texts[entry.rel] = lines

    def lines_of(self, rel: str) -> list[str]:
        """A file's lines, read once when a use's text is asked for."""
        if rel in self.texts:
            return self.texts[rel]
        if rel not in self._lines:
            try:
                data = confinement.read_bytes(self.root / rel, self.root)
                self._lines[rel] = data.decode("utf-8", "replace").split("\n")
            except OSError:
                self._lines[rel] = []
        return self._lines[rel]

    def _reference(self, rel: str, name: str, line: int) -> Reference:
        lines = self.lines_of(rel)
        at = abs(line)
        text = lines[at - 1].strip() if 0 < at <= len(lines) else ""
        return Reference(name, rel, at, text, line > 0)

    @property
    def references(self) -> list[Reference]:
        return [
            self._reference(rel, name, line)
            for rel, uses in self.uses.items()
            for name, lines in uses.items()
            for line in lines
        ]

    def used_names(self) -> set[str]:
        """Every name a parsed file uses or defines."""
        names: set[str] = {s.name for s in self.symbols}
        for uses in self.uses.values():
            names.update(uses)
        return names

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
            if rel not in self.configs
            for n in text_definitions(query, lines)
        ]
        return parsed + found

    def references_to(self, name: str) -> list[Reference]:
        bare = bare_name(name)[1]
        parsed = [
            self._reference(rel, bare, line) for rel, uses in self.uses.items() for line in uses.get(bare, ())
        ]
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
    def __init__(self, spec: LanguageSpec, rel: str, lines: list[str], entry: FileEntry) -> None:
        self.spec, self.rel, self.lines, self.entry = spec, rel, lines, entry
        self.names: set[tuple[int, int]] = set()
        """The definitions' own names (by byte span): not references."""
        self.fields_seen: set[str] = set()
        """What this file defined so far (``Bucket.size``): an instance field is defined by the
        first assignment to it, and never over a class-level field of that name."""

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
            self.entry.uses.setdefault(value, []).append(-(node.start_point[0] + 1))

    def walk(
        self, node: Node, scope: list[str], inside: bool, member: bool = False, body: bool = False
    ) -> None:
        """Index ``node``: ``scope`` qualifies its names, ``inside`` says it is within a
        definition, ``member`` that it is within a type (its functions are methods), ``body``
        that the innermost definition around it is a type (what it defines there is a field)."""
        rule = self.spec.definitions.get(node.type)
        if rule is None or (rule.needs and node.child_by_field_name(rule.needs) is None):
            span = (node.start_byte, node.end_byte)
            if node.type in self.spec.identifiers and node.child_count == 0 and span not in self.names:
                self.entry.uses.setdefault(_text(node), []).append(node.start_point[0] + 1)
            elif "string" in node.type and node.child_count == 0:
                self._literal(node)
            for child in node.children:
                self.walk(child, scope, inside, member, body)
            return
        name_node = self.name_node(node, rule)
        if name_node is not None:
            self.names.add((name_node.start_byte, name_node.end_byte))
        if rule.define:
            heads, name = self.split_name(name_node, rule)
        else:
            heads, name = [], _first_type_name(name_node)
        if rule.top_level and inside and not (rule.fields and body):
            heads, name = self._instance_field(name_node, rule, scope, member)
        qualifier = _first_type_name(node.child_by_field_name(rule.qualifier)) if rule.qualifier else ""
        path = [*scope, qualifier] if qualifier else scope
        path = [*path, *heads]
        if name and rule.define:
            kind = rule.nested_kind if rule.nested_kind and (member or heads) else rule.kind
            line, end = node.start_point[0] + 1, node.end_point[0] + 1
            qualified = ".".join([*path, name])
            self.fields_seen.add(qualified)
            self.entry.symbols.append(
                Symbol(name, qualified, kind, self.rel, line, self._signature(node), end=end)
            )
        inner = [*path, name] if rule.scope and name else path
        typed = rule.scope and not rule.namespace
        within = member or typed
        for child in node.children:
            if name_node is not None and child == name_node:
                continue
            self.walk(child, inner, True, within, typed)

    def _instance_field(
        self, node: Node | None, rule: DefinitionRule, scope: list[str], member: bool
    ) -> tuple[list[str], str]:
        """``self.size`` assigned in a method of ``Bucket`` (whose scope is ``Bucket``'s: a
        function does not qualify what it holds): ``size``, the first time in this file."""
        if node is None or not rule.receiver or not member or not scope:
            return [], ""
        target, field = node.child_by_field_name("object"), node.child_by_field_name("attribute")
        if target is None or field is None or _text(target) != rule.receiver:
            return [], ""
        qualified = ".".join([*scope, _text(field)])
        if qualified in self.fields_seen:
            return [], ""
        self.fields_seen.add(qualified)
        return [], _text(field)

    def _signature(self, node: Node) -> str:
        body = node.child_by_field_name("body")
        end = body.start_byte if body is not None else node.end_byte
        source = node.text or b""
        return " ".join(source[: end - node.start_byte].decode("utf-8", "replace").split()).rstrip(":{ ")


def iter_sources(
    under: Path, private: Callable[[Path], bool] = nothing, root: Path | None = None
) -> Iterator[Path]:
    """The files the index lists: the shared walk (agents.readable) of ``under``, hidden
    directories, the generated and vendored trees (grounding.sources), the paths ``private``
    covers and every file resolving outside ``root`` (the repository) left out."""

    def left_out(path: Path) -> bool:
        return private(path) or (generated_dir(path.name) and path.is_dir())

    return walk(under, left_out, hidden_dirs=False, root=root)


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
        data, why = source_bytes(index.root, rel, path, data)
    except OutsideRepository:  # a link out of the repository: never listed, never quoted
        return
    if data is None:
        index.add(FileEntry(rel, note=why))
        return
    entry, lines = read_entry(rel, data, path)
    index.add(entry, lines)


def source_bytes(root: Path, rel: str, path: Path, data: bytes | None = None) -> tuple[bytes | None, str]:
    """A file's bytes when it is source the index reads, else None and why not: larger than
    ``max_file_bytes``, unreadable, or generated. A file resolving outside the repository is
    :class:`~pipeline.confinement.OutsideRepository` (pipeline.confinement reads every file)."""
    limit = claim_rules().max_file_bytes
    if generated_path(rel, root=root):
        return None, "not read: generated or vendored"
    try:
        data = confinement.read_bytes(path, root, limit=limit) if data is None else data
    except TooLarge as exc:
        return None, f"not read: {exc.size} bytes, more than {limit}"
    except OSError as exc:
        return None, f"not read: unreadable ({exc.strerror})"
    if len(data) > limit:
        return None, f"not read: {len(data)} bytes, more than {limit}"
    if generated_text(edges(data)):
        return None, "not read: generated (its first or last lines say so, or it is minified)"
    return data, ""


def read_entry(rel: str, data: bytes, path: Path | None = None) -> tuple[FileEntry, list[str] | None]:
    """One file as the index holds it, and its lines when it is read as text (a configuration
    file's entries are its symbols)."""
    spec = language_of(path or Path(rel), data[:200])
    if spec is None:
        text = readable_text(data)
        if text is None or not text.strip():
            return FileEntry(rel), None
        lines = text.split("\n")
        entry = FileEntry(rel, TEXT)
        if config_kind(rel) is not None and len(data) <= claim_rules().max_config_bytes:
            entry.symbols, entry.config = config_entries(rel, text, lines), True
        return entry, lines
    tree = parser_for(spec.grammar, spec.language).parse(data)
    lines = data.decode("utf-8", "replace").split("\n")
    entry = FileEntry(rel, spec.name)
    _Walker(spec, rel, lines, entry).walk(tree.root_node, [], False)
    return entry, None


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
