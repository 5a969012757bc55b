"""Agent tools confined to the repository root, registered strictly from a role's allow-list.

Read, Grep and Glob resolve every path (symlinks included) and refuse anything outside the
repository root, and the private paths (run records, the model-call cache, other spawns'
params files) inside it. For cold roles the research log is refused by resolved real path
and by normalised content (hard links, copies, excerpts and earlier versions under any name;
agents.confine), and is invisible to Grep and Glob. Write and Edit accept only the
spawn's output_path. Bash runs an allow-list of read-only commands and options without a
shell (agents.shell), with a stripped environment and a time limit. A refusal is returned to
the model as the tool's result and recorded on the context.
"""

from __future__ import annotations

import difflib
import fnmatch
import glob as globbing
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import regex
from pydantic_ai import RunContext, Tool

from pipeline import confinement
from pipeline.agents.command_line import ShellSyntax, Word, split_command
from pipeline.agents.confine import ForbiddenFile, LogGuard, Private
from pipeline.agents.readable import walk
from pipeline.agents.regex_search import (
    MAX_MATCHES,
    LineSearch,
    Match,
    TimedOut,
    compile_pattern,
    globbed,
    no_match,
    shown,
)
from pipeline.agents.run_command import run_planned
from pipeline.agents.shell import ShellRefusal, describe, installed, plan_command
from pipeline.agents.spawn import PARAMS_TOKEN
from pipeline.errors import InputError
from pipeline.formats.paging import cut_note, file_lines, numbered, page_note
from pipeline.formats.space import OutOfSpace
from pipeline.formats.textio import atomic_write
from pipeline.grounding.ledger import LEDGER_NAMES
from pipeline.grounding.psi import CodeIndex, answer, build_index

__all__ = ["ForbiddenFile", "ToolContext", "tools_for"]

MAX_READ_CHARS = 400_000
MAX_FILE_BYTES = 64 << 20
"""The largest file Read opens (a page of it is returned; a larger file is no text to review)."""
MAX_OUTPUT_CHARS = 30_000
"""The most a Bash command or a search answers at once (about 7,500 tokens), cut at a line's end
with a note that says how to narrow it: Read pages a file instead."""


class Refused(Exception):
    """A tool call outside the role's permissions."""


@dataclass(slots=True)
class ToolContext:
    """The dependencies a spawn's tools run against."""

    role: str
    repo_root: Path
    tools: tuple[str, ...] = ()
    """The role's allow-list: what a refusal may point to instead."""
    output_path: Path | None = None
    companion_path: Path | None = None
    """A second writable file: the mechanics companion of a target=both spawn."""
    forbidden: list[ForbiddenFile] = field(default_factory=list)
    bash_timeout: float = 10.0
    code_root: Path | None = None
    views: dict[Path, frozenset[int] | None] | None = None
    """When set, the only readable files; a line set shows those lines and blanks the rest."""
    private: Private = field(default_factory=Private)
    """Paths no role reads: the runs directory and other spawns' params files."""
    params_path: Path | None = None
    """The spawn's own params file, which the Read tool opens for the prompt's token."""
    reviewed: frozenset[Path] = frozenset()
    """The design documents the spawn reviews (its params name them): held to the copy rules
    of ``confine.ForbiddenFile.matches`` with ``reviewed``."""
    refusals: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    _index: CodeIndex | None = None
    _guard: LogGuard | None = None
    _writes: dict[Path, Path] = field(default_factory=dict)
    """Each writable file's real path and the path it is written at (a link there is refused)."""

    def __post_init__(self) -> None:
        self.repo_root = self.repo_root.resolve()
        given = [
            self._absolute(str(p)) if p is not None else None for p in (self.output_path, self.companion_path)
        ]
        self.output_path, self.companion_path = (p.resolve() if p is not None else None for p in given)
        self._writes = {p.resolve(): p for p in given if p is not None}

    def _absolute(self, raw: str) -> Path:
        path = Path(raw).expanduser()
        return path if path.is_absolute() else self.repo_root / path

    def refuse(self, message: str) -> Refused:
        self.refusals.append(message)
        return Refused(message)

    def is_forbidden(self, real: Path) -> bool:
        """A private path, or (for a cold role) the research log by path, inode or content."""
        return self.private.covers(real) or self.holds_log(real)

    def holds_log(self, real: Path) -> bool:
        """For a cold role, the research log by path or content (a hard link included), private
        paths aside (agents.confine.LogGuard)."""
        self._guard = self._guard or LogGuard(self.forbidden, self.reviewed)
        return self._guard.holds(real)

    def confine(self, raw: str) -> Path:
        """Resolve ``raw`` inside the repository root, refusing escapes and forbidden files.
        The spawn prompt's params token names the spawn's own params file."""
        if raw.strip() == PARAMS_TOKEN and self.params_path is not None:
            return self.params_path.resolve()
        try:
            real = confinement.confined(self._absolute(raw), self.repo_root)
        except confinement.OutsideRepository:
            raise self.refuse(f"{raw}: outside the repository root") from None
        if self.private.covers(real):
            raise self.refuse(
                f"{raw}: run records, the model-call cache and other spawns' params files are not readable"
            )
        if self.holds_log(real):  # private paths were refused just above
            raise self.refuse(f"{raw}: the research log is not readable by the {self.role} role")
        if self.views is not None and real not in self.views and real != self.repo_root:
            raise self.refuse(
                f"{raw}: the {self.role} role reads only its params file and its slice of the draft"
            )
        return real

    def visible(self, real: Path, text: str) -> str:
        """The text of ``real`` as this role may see it: masked lines are left empty."""
        lines = self.views.get(real) if self.views is not None else None
        if lines is None:
            return text
        return "".join(
            line if number in lines else ("\n" if line.endswith("\n") else "")
            for number, line in enumerate(file_lines(text), start=1)
        )

    def rel(self, path: Path) -> str:
        return (
            path.relative_to(self.repo_root).as_posix() if path.is_relative_to(self.repo_root) else str(path)
        )

    def index(self) -> CodeIndex:
        if self._index is None:
            root = (self.code_root or self.repo_root).resolve()
            if not root.is_relative_to(self.repo_root):
                root = self.repo_root
            # A cold role's index leaves out what it may not read: no lookup quotes the log either.
            # The claims ledgers are designloop's record of the design, not code.
            self._index = build_index(
                self.repo_root, root, lambda p: p.name in LEDGER_NAMES or self.is_forbidden(p.resolve())
            )
        return self._index


PsiKind = Literal["definition", "signature", "references", "file", "sources"]


def _refusal(exc: Refused) -> str:
    return f"refused: {exc}"


def read(ctx: RunContext[ToolContext], path: str, offset: int = 1, limit: int | None = None) -> str:
    """Read a text file in the repository (a directory lists its entries).

    Each line comes back as its number, a tab, then the line exactly as the file has it: the
    number is the file's own (1-based), to cite as a finding's `line`; copy a `quote` from the
    text after the tab. A result that is not the whole file ends with a note
    `[lines X-Y of N; call again with offset=...]`.

    Args:
        path: the file or directory, relative to the repository root
        offset: the first line to return (1-based)
        limit: at most this many lines
    """
    deps = ctx.deps
    try:
        real = deps.confine(path)
    except Refused as exc:
        return _refusal(exc)
    if real.is_dir():
        if deps.views is not None:
            return _refusal(deps.refuse(f"{path}: the {deps.role} role may not list directories"))
        entries = [
            e.name + ("/" if e.is_dir() else "")
            for e in sorted(real.iterdir())
            if not e.name.startswith(".") and not deps.is_forbidden(e.resolve())
        ]
        deps.reads.append(deps.rel(real) + "/")
        return "\n".join(entries) if entries else "(empty directory)"
    if not real.exists():
        return missing(deps, path, real)
    if not real.is_file():
        return f"error: {path}: not a regular file"
    try:
        raw = confinement.read_bytes(real, deps.repo_root, limit=MAX_FILE_BYTES)
    except (OSError, confinement.OutsideRepository) as exc:
        return f"error: {path}: cannot be read ({exc})"
    data = deps.visible(real, raw.decode("utf-8", "replace"))
    deps.reads.append(deps.rel(real))
    return _page(file_lines(data), offset, limit)


def _page(lines: list[str], offset: int, limit: int | None) -> str:
    """Numbered whole lines from ``offset`` up to the page size, and the note when partial."""
    total = len(lines)
    start = max(1, offset) - 1
    stop = min(total, start + limit) if limit and limit > 0 else total
    if start >= total:
        return (
            "" if total == 0 and start == 0 else f"[no lines from offset={start + 1}; the file has {total}]"
        )
    taken, size = start, 0
    while taken < stop and size + len(lines[taken]) + len(f"{taken + 1}\t") <= MAX_READ_CHARS:
        size += len(lines[taken]) + len(f"{taken + 1}\t")
        taken += 1
    if taken == start:  # one line longer than a whole page: return it cut, and say so
        cut = numbered([lines[start][:MAX_READ_CHARS].rstrip("\n")], start + 1)
        return cut + "\n" + cut_note(start + 1, total, MAX_READ_CHARS)
    text = numbered(lines[start:taken], start + 1)
    if start == 0 and taken == total:
        return text
    return text + ("" if text.endswith("\n") else "\n") + page_note(start + 1, taken, total)


def _walk_files(deps: ToolContext, base: Path) -> list[Path]:
    """The files Grep and Glob search: the shared walk (agents.readable), regular files only."""
    if base.is_file():
        return [base]
    found: list[Path] = []
    for path in walk(base, lambda p: deps.private.covers(p.resolve()), root=deps.repo_root):
        real = path.resolve()
        if deps.views is not None and real not in deps.views:
            continue
        # The walk left the private paths out already.
        if real.is_relative_to(deps.repo_root) and not deps.holds_log(real):
            found.append(path)
    return found


def search(
    deps: ToolContext,
    pattern: regex.Pattern[str],
    base: Path,
    glob: str | None = None,
    limit: float | None = None,
) -> Iterator[tuple[Match, list[str]]]:
    """Every line under ``base`` that ``pattern`` matches, in the files the role may read (the
    shared walk, the private paths and, for a cold role, the research log left out; a view's
    hidden lines read as empty), with the lines of its file; ``TimedOut`` once the matching
    took ``limit`` seconds (by default the role's tool time limit)."""
    lines_of = LineSearch(pattern, limit if limit is not None else deps.bash_timeout)
    globs = globbed(glob)
    for file in _walk_files(deps, base):
        rel = deps.rel(file)
        if globs and not any(fnmatch.fnmatch(rel, g) or fnmatch.fnmatch(file.name, g) for g in globs):
            continue
        try:
            text = deps.visible(file.resolve(), confinement.read_bytes(file, deps.repo_root).decode("utf-8"))
        except (OSError, UnicodeDecodeError, confinement.OutsideRepository):
            continue
        lines = [line.removesuffix("\n") for line in file_lines(text)]
        for match in lines_of.matching(rel, lines):
            yield match, lines


BAD_PATTERN = "a ( ) [ ] { } * + ? . | or \\ meant as itself takes a backslash before it: def take\\("


def missing(deps: ToolContext, path: str, real: Path) -> str:
    """The answer for a path that does not exist, with the names beside it that come close."""
    parent = real.parent
    names = [e.name for e in parent.iterdir() if not e.name.startswith(".")] if parent.is_dir() else []
    close = difflib.get_close_matches(real.name, names, n=3)
    hint = f" (did you mean {' or '.join(deps.rel(parent / n) for n in close)}?)" if close else ""
    if not hint and any(c in path for c in "*?[{"):
        hint = " (a path is no pattern: give the directory as path and the pattern as glob, such as '*.py')"
    return f"error: {path}: no such file or directory{hint}"


def grep(
    ctx: RunContext[ToolContext],
    pattern: str,
    path: str = ".",
    glob: str | None = None,
    ignore_case: bool = False,
    context: int = 0,
) -> str:
    """Search the repository's files for a regular expression, with no shell and no binary.
    Returns `file:line:text` lines (at most 200 matches), numbered as `read` numbers them.

    Args:
        pattern: a Python regular expression: `a|b` for either, `^def `, `x$`, `[A-Z]\\w+`,
            `[[:space:]]`, `\\.` for a dot (grep's `\\|` is a literal `|` here)
        path: a file or directory to search, relative to the repository root
        glob: only files whose path or name matches this glob, such as `*.py` or `*.{py,md}`
        ignore_case: match letters in either case
        context: also show this many lines before and after each match (at most 10), as
            `file-line-text`, with `--` between groups
    """
    deps = ctx.deps
    try:
        base = deps.confine(path)
        compiled = compile_pattern(pattern, ignore_case)
    except Refused as exc:
        return _refusal(exc)
    except regex.error as exc:
        return f"error: bad pattern: {exc} ({BAD_PATTERN})"
    if not base.exists():
        return missing(deps, path, base)
    if not base.is_dir() and not base.is_file():
        return f"error: {path}: not a regular file"
    try:
        out, cut = shown(search(deps, compiled, base, glob), context, MAX_OUTPUT_CHARS)
    except TimedOut as exc:
        return (
            f"error: the search stopped at its time limit ({deps.bash_timeout:g}s) in {exc.path}: the"
            " pattern takes too long there (nested repetition such as (\\w+\\s?)* can take exponential"
            " time); simplify it, or narrow the path or the glob"
        )
    if out:
        return "\n".join([*out, cut] if cut else out)
    return no_match(pattern)


def glob_files(ctx: RunContext[ToolContext], pattern: str) -> str:
    """List repository files matching a glob pattern, such as `src/**/*.py`."""
    deps = ctx.deps
    if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
        return _refusal(deps.refuse(f"{pattern}: patterns are relative to the repository root"))
    matches = []
    patterns = globbed(pattern)
    for file in _walk_files(deps, deps.repo_root):
        rel = deps.rel(file)
        if any(fnmatch.fnmatch(rel, p) for p in patterns):
            matches.append(rel)
    return "\n".join(matches[:MAX_MATCHES]) if matches else "no matches"


def _writable(deps: ToolContext, path: str) -> Path:
    """The output file ``path`` names, at the path its params give (never through a link)."""
    target = deps._absolute(path).resolve()
    if deps.output_path is None or target not in (deps.output_path, deps.companion_path):
        raise deps.refuse(f"{path}: the {deps.role} role may write only its output_path")
    given = deps._writes[target]
    if given.is_symlink() or not given.parent.resolve().is_relative_to(deps.repo_root):
        raise deps.refuse(f"{path}: is a symbolic link or lies outside the repository; it is not written")
    return given


def _save(deps: ToolContext, target: Path, text: str) -> str | None:
    """Write ``text`` to ``target``; the write layer's refusal (a link, a NUL byte) as the tool's result."""
    try:
        atomic_write(target, text)
    except OutOfSpace:
        raise  # a full disk stops the run (bad input), it is not the model's to work around
    except InputError as exc:
        return _refusal(deps.refuse(f"{deps.rel(target)}: {exc.message}"))
    return None


def write(ctx: RunContext[ToolContext], path: str, content: str) -> str:
    """Write the whole content of your output file."""
    deps = ctx.deps
    try:
        target = _writable(deps, path)
    except Refused as exc:
        return _refusal(exc)
    return _save(deps, target, content) or f"wrote {len(content.splitlines())} lines to {deps.rel(target)}"


def edit(ctx: RunContext[ToolContext], path: str, old_string: str, new_string: str) -> str:
    """Replace one exact, unique occurrence of `old_string` in your output file."""
    deps = ctx.deps
    try:
        target = _writable(deps, path)
    except Refused as exc:
        return _refusal(exc)
    if not target.is_file():
        return f"error: {path}: no such file; write it first"
    try:
        text = confinement.read_bytes(target, deps.repo_root).decode("utf-8")
    except (OSError, UnicodeDecodeError, confinement.OutsideRepository) as exc:
        return f"error: {path}: cannot be read ({exc})"
    count = text.count(old_string)
    if count != 1:
        return f"error: old_string occurs {count} times; it must occur exactly once"
    return _save(deps, target, text.replace(old_string, new_string, 1)) or f"edited {deps.rel(target)}"


BASH_DESCRIPTION = (
    "Run one read-only command with its arguments: {commands}.\n\n"
    "No shell runs it: quote a pattern as a shell would ('a|b', \"^def \", 'x$'); an unquoted glob"
    " (src/*.py) names the files it matches and braces expand as in bash (--include=*.{{py,md}});"
    " pipes, redirection, `;`, `&&` and $VARIABLES are refused. Each command takes only the options"
    " on its allow-list, and paths stay inside the repository. An output longer than {limit:,}"
    " characters is cut at a line's end, with a note."
)


READERS = frozenset({"cat", "less", "more", "nl", "bat"})
"""Commands a model reaches for to show a file, which the read tool does (numbered lines)."""


def bash_description() -> str:
    """The Bash tool's description: the commands this machine has (found at start-up)."""
    commands = describe(installed()) or "none is installed on this machine"
    return BASH_DESCRIPTION.format(commands=commands, limit=MAX_OUTPUT_CHARS)


def _expanded(deps: ToolContext, words: list[Word]) -> list[str]:
    """The words with each unquoted glob replaced by the readable paths it matches, sorted (a
    glob that matches none stays as it is, as in a shell)."""
    out: list[str] = []
    for word in words:
        if word.pattern is None or Path(word.pattern).is_absolute() or word.pattern.startswith("~"):
            out.append(word.text)
            continue
        found = [
            rel
            for rel in sorted(globbing.glob(word.pattern, root_dir=deps.repo_root))
            if confinement.inside(deps.repo_root / rel, deps.repo_root)
            and not deps.is_forbidden((deps.repo_root / rel).resolve())
        ]
        out += found or [word.text]
    return out


def bash(ctx: RunContext[ToolContext], command: str) -> str:
    """Run one read-only command (the description lists them). No shell, no network.

    Args:
        command: the command line, quoted as for a shell, such as `grep -rn "a\\|b" src`
    """
    deps = ctx.deps
    try:
        line = split_command(command)
    except ShellSyntax as exc:
        return _refusal(deps.refuse(str(exc)))
    try:
        argv = plan_command(_expanded(deps, line.words), deps.confine, deps.repo_root, deps.private)
    except ValueError as exc:
        return f"error: {exc}"
    except ShellRefusal as exc:
        reader = bool(line.words) and line.words[0].text in READERS and "Read" in deps.tools
        return _refusal(deps.refuse(str(exc) + ("; to read a file, use the read tool" if reader else "")))
    except Refused as exc:
        return _refusal(exc)
    return run_planned(
        argv, deps.repo_root, deps.bash_timeout, MAX_OUTPUT_CHARS, line.drop_errors, deps.tools
    )


def psi(ctx: RunContext[ToolContext], query: str, kind: PsiKind = "definition") -> str:
    """Look up code by name under the code root. Files in a language PSI has no grammar for are
    searched as text (those results say `text match`). A missed definition says whether the
    name appears anywhere under the code root.

    Args:
        query: a name (`take`), a qualified name (`Bucket.take`), or a path ending for `file`
        kind: definition (where it is defined), signature, references (every use, as
            `file:line:text`), file (files whose path ends with the query), or sources (which
            languages PSI read; the query is ignored)
    """
    index = ctx.deps.index()
    if kind == "sources":
        return f"{index.describe_sources()} under {ctx.deps.rel(index.root_under)}"
    return answer(index, query, kind, MAX_MATCHES)


ToolFunction = Callable[..., str]
TOOL_FUNCTIONS: dict[str, tuple[ToolFunction, str]] = {
    "Read": (read, "read"),
    "Grep": (grep, "grep"),
    "Glob": (glob_files, "glob"),
    "Write": (write, "write"),
    "Edit": (edit, "edit"),
    "Bash": (bash, "bash"),
    "PSI": (psi, "psi"),
}


WRITERS = frozenset({"Write", "Edit"})
"""Tools that change a file: each runs alone (pydantic-ai's sequential tools), so N edits a
model sends in one turn are applied one after the other, never as racing read-modify-writes."""


def tools_for(allow_list: tuple[str, ...]) -> list[Tool[ToolContext]]:
    """pydantic-ai tools for exactly the names on the allow-list (Bash described with the
    commands this machine has)."""
    return [
        Tool(
            fn,
            name=name,
            takes_ctx=True,
            sequential=key in WRITERS,
            description=bash_description() if key == "Bash" else None,
        )
        for key in allow_list
        for fn, name in [TOOL_FUNCTIONS[key]]
    ]
