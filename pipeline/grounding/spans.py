"""Code spans and their fingerprints: what a claim rests on, taken so that layout does not count.

Where PSI has a grammar for a file, a definition's fingerprint is the SHA-256 of its tokens
(tree-sitter's leaves) without comments, Python docstrings or whitespace, so reformatting,
re-indenting and comment edits leave it alone and any change of the code changes it. A class
(any scope: a struct, an interface) counts by its declaration alone: its decorators, its name,
its bases and whatever its body holds that defines nothing; each member (a method, a field) is
the claim of the sentences that name it, so a class that gains an unrelated method is
unchanged. A configuration entry counts by its lines (a ``.env`` variable by its name alone:
its value is never digested). Every other file is fingerprinted as normalised text: comment
lines dropped, a trailing comment cut, whitespace collapsed, blank lines ignored. Either way the
definition's own name is masked (``@name``), so a renamed symbol keeps its fingerprint: that is
how a rename is recognised.

A code file is read for a claim only when it is a regular UTF-8 text file of at most
``max_file_bytes`` (params/claims.toml); any other is skipped with a note, never a traceback.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tree_sitter import Node, Tree

from pipeline import confinement
from pipeline.grounding.config import env_file
from pipeline.grounding.ledger import Method
from pipeline.grounding.psi import LanguageSpec, language_of, parser_for, read_entry
from pipeline.grounding.psi_text import bare_name, text_definitions
from pipeline.grounding.rules import claim_rules
from pipeline.grounding.symbols import Symbol

MAX_TEXT_SPAN = 400
"""A text definition (a file no grammar reads) runs at most this many lines."""
COMMENT_LINE_RE = re.compile(r"^(?://|#(?:\s|$|#|!)|--(?:\s|$)|;|%(?:\s|$)|/\*|\*(?:\s|/|$)|rem\s)", re.I)
TRAILING_COMMENT_RE = re.compile(r"\s+(?:#|//|--)\s.*$")
CLOSING_TOKENS = frozenset({")", "]", "}", ">"})
OPENERS, CLOSERS = "({[", ")}]"
CLOSING_WORDS = ("}", ")", "]", "end", "fi", "done", "esac")


def digest(parts: Iterator[str] | list[str]) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8", "replace"))
        h.update(b"\x1f")
    return h.hexdigest()[:24]


@dataclass(slots=True)
class CodeFile:
    """A code file read for claims: its lines and, where PSI has a grammar, its syntax tree; a
    configuration file's entries are its symbols."""

    rel: str
    lines: list[str]
    spec: LanguageSpec | None = None
    tree: Tree | None = None
    symbols: list[Symbol] = field(default_factory=list)
    config: bool = False

    @property
    def method(self) -> Method:
        if self.config:
            return "config"
        return "tree-sitter" if self.tree is not None else "text"


def read_code(repo_root: Path, rel: str) -> CodeFile | str:
    """The file at ``rel`` (repository-relative), or why it is skipped (a note). A path that is
    absolute, climbs out with ``..`` or resolves outside the repository is refused
    (:class:`~pipeline.confinement.OutsideRepository`): it is never read, whatever names it."""
    confinement.recorded(repo_root, rel, what="code file")
    path = repo_root / rel
    try:
        info = os.stat(path)
    except OSError:
        return "missing"
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    limit = claim_rules().max_file_bytes
    if info.st_size > limit:
        return f"skipped: {info.st_size} bytes, more than {limit}"
    try:
        data = confinement.read_bytes(path, repo_root, limit=limit)
    except confinement.TooLarge as exc:
        return f"skipped: {exc.size} bytes, more than {limit}"
    except OSError as exc:
        return f"skipped: unreadable ({exc.strerror})"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"skipped: not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})"
    if "\x00" in text:
        return "skipped: holds a NUL byte (a binary file)"
    lines = text.split("\n")
    entry, _ = read_entry(rel, data, path)
    spec = language_of(path, data[:200])
    if spec is None:
        return CodeFile(rel, lines, symbols=entry.symbols, config=entry.config)
    tree = parser_for(spec.grammar, spec.language).parse(data)
    return CodeFile(rel, lines, spec, tree, entry.symbols)


@dataclass(frozen=True, slots=True)
class Span:
    """A definition found in a code file: its name, qualified name and lines."""

    name: str
    qualified: str
    kind: str
    first: int
    last: int
    parts: tuple[Span, ...] = ()
    """The definitions merged into this one (overloads; a declaration and its body)."""


def definitions(code: CodeFile, query: str) -> list[Span]:
    """The definitions of ``query`` (bare, qualified or a dotted suffix) in one file."""
    query = query.strip().strip("`").removesuffix("()")
    if code.tree is not None or code.config:
        return [
            Span(s.name, s.qualified, s.kind, s.line, s.end or s.line)
            for s in code.symbols
            if s.qualified == query or s.name == query or s.qualified.endswith("." + query)
        ]
    name = bare_name(query)[1]
    return [
        Span(name, query, "text match", n, text_end(code.lines, n))
        for n in text_definitions(query, code.lines)
    ]


def all_definitions(code: CodeFile) -> list[Span]:
    """Every definition a grammar finds in the file (none for a file read as text), those of
    one qualified name merged."""
    return merged([Span(s.name, s.qualified, s.kind, s.line, s.end or s.line) for s in code.symbols])


def merged(spans: list[Span]) -> list[Span]:
    """The spans with those of one qualified name merged into one (overloads, a declaration
    and its definition): it runs from the first one's first line to the last one's last."""
    groups: dict[str, list[Span]] = {}
    for span in spans:
        groups.setdefault(span.qualified, []).append(span)
    out = []
    for qualified, group in groups.items():
        if len(group) == 1:
            out.append(group[0])
            continue
        first, last = min(g.first for g in group), max(g.last for g in group)
        out.append(Span(group[0].name, qualified, group[0].kind, first, last, tuple(group)))
    return sorted(out, key=lambda s: (s.first, s.qualified))


def symbol_spans(code: CodeFile, query: str) -> list[Span]:
    """The definitions of ``query`` in one file, those of one qualified name merged."""
    return merged(definitions(code, query))


def text_end(lines: list[str], start: int) -> int:
    """The last line of a text definition starting at ``start``: brackets are balanced, and the
    lines indented deeper than its first line (a recipe, a block) belong to it."""
    first = lines[start - 1]
    indent = len(first) - len(first.lstrip())
    depth = _depth(first)
    last = start
    for number in range(start + 1, min(len(lines), start + MAX_TEXT_SPAN) + 1):
        line = lines[number - 1]
        stripped = line.strip()
        if not stripped:
            continue
        deeper = len(line) - len(line.lstrip()) > indent
        if depth <= 0 and not deeper:
            if stripped.startswith(CLOSING_WORDS) and number == last + 1:
                last = number
            break
        depth += _depth(line)
        last = number
    return last


def _depth(line: str) -> int:
    code = TRAILING_COMMENT_RE.sub("", line)
    return sum(code.count(c) for c in OPENERS) - sum(code.count(c) for c in CLOSERS)


def _masked(text: str, name: str | None) -> str:
    return re.sub(rf"(?<![\w$]){re.escape(name)}(?![\w$])", "@name", text) if name else text


def text_fingerprint(lines: list[str], name: str | None = None, comments: bool = False) -> str:
    """Normalised text: without comment lines and trailing comments (unless ``comments``),
    whitespace collapsed, blank lines dropped, ``name`` masked."""
    out: list[str] = []
    for line in lines:
        stripped = line.strip()
        if not comments:
            if COMMENT_LINE_RE.match(stripped):
                continue
            stripped = TRAILING_COMMENT_RE.sub("", stripped)
        words = " ".join(stripped.split())
        if words:
            out.append(_masked(words, name))
    return digest(out)


def _definition_node(code: CodeFile, span: Span) -> tuple[Node, Node, bool] | None:
    """The definition's node with its wrapper (a decorator), the node itself, and whether it is
    a scope (a class, a struct: its members are theirs, not its own)."""
    assert code.tree is not None and code.spec is not None
    wanted = code.spec.definitions
    stack = [code.tree.root_node]
    while stack:
        node = stack.pop()
        if node.start_point[0] > span.first - 1 or node.end_point[0] < span.first - 1:
            continue
        lines = (node.start_point[0] + 1, node.end_point[0] + 1)
        if node.type in wanted and lines == (span.first, span.last):
            wrappers = claim_rules().wrappers.get(code.spec.name, frozenset())
            parent = node.parent
            outer = parent if parent is not None and parent.type in wrappers else node
            return outer, node, wanted[node.type].scope
        stack.extend(node.children)
    return None


def _member(current: Node, scope: Node, code: CodeFile) -> bool:
    """Whether ``current``, inside the definition ``scope``, is a member's own definition (or a
    member's decorated wrapper): the member's claim, not the scope's."""
    assert code.spec is not None
    definitions = code.spec.definitions
    if current.start_byte <= scope.start_byte and current.end_byte >= scope.end_byte:
        return False  # the scope itself, or its wrapper
    if current.type in definitions:
        return True
    wrappers = claim_rules().wrappers.get(code.spec.name, frozenset())
    return current.type in wrappers and any(c.type in definitions for c in current.children)


def _tokens(
    node: Node, code: CodeFile, name: str | None, outline: bool = False, scope: Node | None = None
) -> Iterator[str]:
    """The leaf tokens of ``node`` but comments and docstrings; with ``outline`` (a class,
    ``scope`` its own node inside a wrapper), its declaration alone: every member's definition is
    left out (it is the member's own claim)."""
    assert code.spec is not None
    docstrings = claim_rules().docstrings.get(code.spec.name, frozenset())
    stack = [node]
    while stack:
        current = stack.pop()
        if "comment" in current.type:
            continue
        if current.type in docstrings and all("string" in c.type for c in current.named_children):
            continue
        if outline and _member(current, scope or node, code):
            continue
        if current.child_count == 0:
            text = (current.text or b"").decode("utf-8", "replace")
            if name and text == name and current.type in code.spec.identifiers:
                text = "@name"
            if text.strip():
                yield text
            continue
        stack.extend(reversed(current.children))


def _significant(tokens: Iterator[str]) -> Iterator[str]:
    """The tokens without trailing commas (a comma right before a closing bracket: layout)."""
    held: str | None = None
    for token in tokens:
        if held is not None and not (held == "," and token in CLOSING_TOKENS):
            yield held
        held = token
    if held is not None:
        yield held


def span_fingerprint(code: CodeFile, span: Span) -> str:
    """A definition's fingerprint, its own name masked (merged ones: each part's, in order)."""
    if span.parts:
        return digest([span_fingerprint(code, part) for part in span.parts])
    if code.config and env_file(code.rel):
        return digest(["variable", span.name])  # a secret's value is never digested
    if code.tree is not None:
        found = _definition_node(code, span)
        if found is not None:
            node, inner, outline = found
            return digest(_significant(_tokens(node, code, span.name, outline, inner)))
    return text_fingerprint(code.lines[span.first - 1 : span.last], span.name)


def file_fingerprint(code: CodeFile) -> str:
    """A whole file's fingerprint (a path claim keeps it to recognise the file elsewhere)."""
    if code.tree is not None:
        return digest(_significant(_tokens(code.tree.root_node, code, None)))
    return text_fingerprint(code.lines)


def lines_fingerprint(code: CodeFile, first: int, last: int) -> str:
    """The cited lines of a location claim, whitespace collapsed (comments count: they were cited)."""
    return text_fingerprint(code.lines[first - 1 : last], comments=True)


def find_lines(code: CodeFile, length: int, fingerprint: str) -> int | None:
    """The first line where ``length`` lines of the file have ``fingerprint`` now."""
    for start in range(1, len(code.lines) - length + 2):
        if lines_fingerprint(code, start, start + length - 1) == fingerprint:
            return start
    return None
