"""The Bash tool's allow-list: every argument of a command is checked against params/bash.toml.

The command line is split into words first, as a shell would split it (agents.command_line):
an operator or an expansion outside quotes is refused, and an unquoted glob is expanded
against the files the role may read; a quoted pattern is one plain word, whatever it holds.

An option is accepted only when it is listed for its command, in any of its spellings
(``--opt=value``, ``--opt value``, ``-o value``, ``-ovalue``, a cluster such as ``-rn``);
its value must be of the listed kind. Anything else is refused, so an option that reads or
writes a file (``--contents=FILE``, ``--files0-from=FILE``, ``-f FILE``, ``--pre CMD``,
``--output``, ``--no-index`` ...) never runs, whatever its spelling or abbreviation.
Operands that are paths are confined like Read. A recursive search skips version control
(``.git/``) and the private directories (run records, the model-call cache, params files),
and git never runs an external diff or text conversion. A planned command runs without a
shell, with a stripped environment, no input and a time limit (``run_planned``).
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import IO

from pipeline.agents.confine import Private
from pipeline.settings import data_dir, load_toml

GIT_SUBCOMMANDS = ("log", "show", "diff", "blame", "grep")
GIT_DIFFING = frozenset({"log", "show", "diff"})
GIT_UNLIMITED = GIT_DIFFING | {"grep"}
"""git subcommands whose output, limited to no path, leaves the private directories out."""
VERSION_CONTROL = (".git", ".hg", ".svn")
"""Directories a recursive grep or rg never searches: a repository's history is not its code."""


class ShellRefusal(Exception):
    """A command or argument outside the allow-list."""


PATH_KIND = "path"
"""An option whose value is a path (``find -newer FILE``): confined like an operand."""
PATTERN_OPTIONS = frozenset({"-e", "--regexp", "--expression"})
"""Options that give a command its pattern (or sed its script): then no operand is one."""


@dataclass(frozen=True, slots=True)
class CommandSpec:
    name: str
    flags: frozenset[str]
    values: dict[str, re.Pattern[str] | None]
    """Each option with a value, and the value's kind (None: a path, confined)."""
    operands: str
    numeric: bool
    recursive: frozenset[str]
    pattern: bool
    """Whether the first operand is a pattern (unless an option of ``PATTERN_OPTIONS`` gave one)."""
    global_options: frozenset[str]
    """find's options that must come before its tests."""


@cache
def specs() -> dict[str, CommandSpec]:
    data = load_toml(data_dir("params") / "bash.toml")
    kinds: dict[str, re.Pattern[str] | None] = {
        name: re.compile(pattern) for name, pattern in data["kinds"].items()
    }
    kinds[PATH_KIND] = None
    out = {}
    for name, raw in data["commands"].items():
        out[name] = CommandSpec(
            name,
            frozenset(raw.get("flags", [])),
            {option: kinds[kind] for option, kind in raw.get("values", {}).items()},
            raw["operands"],
            bool(raw.get("numeric", False)),
            frozenset(raw.get("recursive", [])),
            raw["operands"] == "pattern" or bool(raw.get("pattern", False)),
            frozenset(raw.get("global", [])),
        )
    return out


def commands() -> list[str]:
    return sorted({name.split()[0] for name in specs()})


def usages() -> list[str]:
    """Every command line the allow-list runs, by its first words (``git log``, ``grep``)."""
    return sorted(specs())


@cache
def installed() -> tuple[str, ...]:
    """The listed commands this machine has, as found on the PATH at start-up."""
    path = os.environ.get("PATH", "/usr/bin:/bin")
    return tuple(name for name in usages() if shutil.which(name.split()[0], path=path) is not None)


SHOWN = {"sed": "sed -n (scripts that print: '10,20p')"}
"""How a command is named to a model when it runs only part of what it can do."""


def describe(names: tuple[str, ...]) -> str:
    """``names`` as a model reads them: the git subcommands after one ``git``."""
    git = [n.split()[1] for n in names if n.startswith("git ")]
    plain = [SHOWN.get(n, n) for n in names if not n.startswith("git ")]
    if git:
        plain.insert(0, "git " + "/".join(git))
    return ", ".join(plain)


SEARCHES = frozenset({"rg", "grep", "find"})


def not_installed(command: str, tools: tuple[str, ...] = ()) -> str:
    """What a listed command that this machine lacks answers, with what the role can use
    instead: the installed commands, and its own tools (``tools``, the role's allow-list)."""
    others = [n for n in installed() if n.split()[0] != command]
    instead: list[str] = []
    if command in SEARCHES and "grep" in others:
        instead.append("grep -rn PATTERN PATH")
    if command in SEARCHES and "Grep" in tools:
        instead.append("the grep tool")
    if not instead and others:
        instead.append(describe(tuple(others)))
    if "Read" in tools:
        instead.append("the read tool (a directory lists its entries)")
    tail = f"; use {' or '.join(instead)} instead" if instead else ""
    return f"{command} is not installed on this machine{tail}"


@dataclass(slots=True)
class Parsed:
    options: list[str]
    operands: list[str]
    paths_after: list[str] | None
    """Operands after ``--`` (None when there was no ``--``)."""
    pattern_given: bool
    recursive: bool
    option_paths: list[str] = field(default_factory=list)
    """Values of options that name a path (confined before the command runs)."""


def _value(spec: CommandSpec, option: str, value: str, out: Parsed) -> None:
    kind = spec.values[option]
    if kind is None:
        out.option_paths.append(value)
    elif not kind.match(value):
        raise ShellRefusal(f"{spec.name}: {option} does not take {value!r}")


def parse(spec: CommandSpec, args: list[str]) -> Parsed:
    """Check every argument against ``spec``; return the options and the operands."""
    out = Parsed([], [], None, False, "*" in spec.recursive)
    i = 0
    while i < len(args):
        arg = args[i]
        following = args[i + 1] if i + 1 < len(args) else None
        if arg == "--":
            out.paths_after = args[i + 1 :]
            break
        if arg.startswith("--"):
            taken = _long(spec, arg, following, out)
        elif arg.startswith("-") and len(arg) > 1:
            taken = _short(spec, arg, following, out)
        else:
            out.operands.append(arg)
            taken = 1
        i += taken
    return out


def _long(spec: CommandSpec, arg: str, following: str | None, out: Parsed) -> int:
    """A ``--name`` or ``--name=value`` option; returns how many arguments it took."""
    name, eq, value = arg.partition("=")
    if name in spec.flags and not eq:
        out.recursive |= name in spec.recursive
        out.options.append(arg)
        return 1
    if name not in spec.values:
        raise ShellRefusal(f"{spec.name}: option {name} is not allowed")
    out.pattern_given |= spec.pattern and name in PATTERN_OPTIONS
    if eq:
        _value(spec, name, value, out)
        out.options.append(arg)
        return 1
    if following is None:
        raise ShellRefusal(f"{spec.name}: {name} needs a value")
    _value(spec, name, following, out)
    out.options.append(f"{name}={following}")
    return 2


def _short(spec: CommandSpec, arg: str, following: str | None, out: Parsed) -> int:
    """A ``-x``, ``-xvalue``, ``-x value`` or ``-xyz`` option; returns how many arguments it took."""
    if spec.numeric and arg[1:].isdigit():
        out.options.append(arg)
        return 1
    for j in range(1, len(arg)):
        option = "-" + arg[j]
        if option in spec.flags:
            out.recursive |= option in spec.recursive
            continue
        if option not in spec.values:
            raise ShellRefusal(f"{spec.name}: option {option} is not allowed")
        out.pattern_given |= spec.pattern and option in PATTERN_OPTIONS
        attached = arg[j + 1 :]
        if attached:
            _value(spec, option, attached, out)
            out.options.append(arg)
            return 1
        if following is None:
            raise ShellRefusal(f"{spec.name}: {option} needs a value")
        _value(spec, option, following, out)
        out.options += [arg, following]
        return 2
    out.options.append(arg)
    return 1


def plan_command(argv: list[str], confine: Callable[[str], Path], root: Path, private: Private) -> list[str]:
    """The argv to run for ``argv``, or ShellRefusal; path operands are confined with ``confine``."""
    if not argv or argv[0] not in commands():
        raise ShellRefusal(f"only {describe(installed())} may run (one command, no shell)")
    if argv[0] == "git":
        if len(argv) < 2 or argv[1] not in GIT_SUBCOMMANDS:
            raise ShellRefusal(f"git may run only {', '.join(GIT_SUBCOMMANDS)}")
        return _git(argv[1], argv[2:], confine, root, private)
    if argv[0] == "find":
        return _find(argv[1:], confine, root, private)
    spec = specs()[argv[0]]
    parsed = parse(spec, argv[1:])
    operands = list(parsed.operands)
    pattern: list[str] = []
    if spec.pattern and not parsed.pattern_given and operands:
        pattern, operands = operands[:1], operands[1:]
        _pattern(spec, pattern[0])
    paths = [_rel(confine(p), root) for p in [*operands, *(parsed.paths_after or [])]]
    searched = [root / p for p in paths] or [root]
    skip = _skips(parsed.recursive, searched, private)
    vcs = list(VERSION_CONTROL) if parsed.recursive else []
    if argv[0] == "grep":
        extra = [f"--exclude-dir={name}" for name in vcs] + [f"--exclude-dir={d.name}" for d in skip]
    elif argv[0] == "rg":
        extra = [f"--glob=!{name}/" for name in vcs] + [f"--glob=!/{_rel(d, root)}/**" for d in skip]
    else:
        extra = []
    return [argv[0], *parsed.options, *extra, "--", *pattern, *paths]


def _pattern(spec: CommandSpec, pattern: str) -> None:
    """The pattern operand holds to what the pattern option takes (sed: a script that prints)."""
    kind = next((spec.values[o] for o in PATTERN_OPTIONS if o in spec.values), None)
    if kind is not None and not kind.match(pattern):
        what = "script" if spec.name == "sed" else "pattern"
        raise ShellRefusal(
            f"{spec.name}: the {what} {pattern!r} is not allowed" + SED_HINT * (spec.name == "sed")
        )


SED_HINT = "; sed runs only scripts that print (p, l, =, q), such as sed -n '10,20p' FILE"
FIND_ACTIONS = frozenset({"-print", "-print0", "-printf", "-ls"})


def _find_expression(arg: str) -> bool:
    return (arg.startswith("-") and len(arg) > 1) or arg in ("(", ")", "!", ",")


def _find(args: list[str], confine: Callable[[str], Path], root: Path, private: Private) -> list[str]:
    """find over the starting paths (confined), with its expression checked test by test; the
    version-control and private directories under them are pruned."""
    spec = specs()["find"]
    starts = list(itertools.takewhile(lambda a: not _find_expression(a), args))
    rest = args[len(starts) :]
    front: list[str] = []
    expression: list[str] = []
    i = 0
    while i < len(rest):
        arg = rest[i]
        where = front if arg in spec.global_options else expression
        if arg in spec.flags:
            where.append(arg)
            i += 1
            continue
        if arg not in spec.values:
            raise ShellRefusal(
                f"find: {arg} is not allowed" if _find_expression(arg) else f"find: {arg!r}: paths come first"
            )
        if i + 1 >= len(rest):
            raise ShellRefusal(f"find: {arg} needs a value")
        value = rest[i + 1]
        kind = spec.values[arg]
        if kind is None:
            value = _rel(confine(value), root)
        elif not kind.match(value):
            raise ShellRefusal(f"find: {arg} does not take {value!r}")
        where += [arg, value]
        i += 2
    paths = [_rel(confine(p), root) for p in starts] or ["."]
    pruned = [("-name", name) for name in VERSION_CONTROL]
    for start in paths:
        base = (root / start).resolve()
        pruned += [
            ("-path", _find_glob(start, d.relative_to(base))) for d in private.inside(base) if d != base
        ]
    prune = ["("]
    for n, test in enumerate(pruned):
        prune += [*(["-o"] if n else []), *test]
    prune += [")", "-prune", "-o"]
    acts = any(a in FIND_ACTIONS for a in expression)
    tail = (["(", *expression, ")"] if expression else []) + ([] if acts else ["-print"])
    return ["find", *paths, *front, *prune, *tail]


def _find_glob(start: str, below: Path) -> str:
    """The path find reports for ``below`` under ``start``, as a -path pattern (matched literally)."""
    path = f"{start.rstrip('/')}/{below.as_posix()}"
    return re.sub(r"([*?\[\]\\])", r"\\\1", path)


def _skips(recursive: bool, searched: list[Path], private: Private) -> list[Path]:
    if not recursive:
        return []
    found: list[Path] = []
    for base in searched:
        found += [d for d in private.inside(base.resolve()) if d not in found]
    return found


def _rel(path: Path, root: Path) -> str:
    if not path.is_relative_to(root):
        return str(path)
    return path.relative_to(root).as_posix() or "."


def _git(
    sub: str, args: list[str], confine: Callable[[str], Path], root: Path, private: Private
) -> list[str]:
    spec = specs()[f"git {sub}"]
    parsed = parse(spec, args)
    operands: list[str] = []
    pattern: list[str] = []
    given = list(parsed.operands)
    if spec.pattern and not parsed.pattern_given:
        if not given:
            raise ShellRefusal(f"git {sub}: give a pattern")
        pattern = ["-e", given.pop(0)]
    has_paths = bool(parsed.paths_after)
    for arg in given:
        if arg.startswith("-"):
            raise ShellRefusal(f"git {sub}: {arg} is not a revision")
        _rev, colon, path = arg.partition(":")
        if colon:
            if path:
                confine(path)
            operands.append(arg)
        elif (root / arg).exists() or "/" in arg:
            operands.append(_rel(confine(arg), root))
            has_paths = True
        else:
            operands.append(arg)
    after = [_rel(confine(p), root) for p in parsed.paths_after or []]
    if sub in GIT_UNLIMITED and not has_paths:
        # No path limits the output: keep the private directories out of it.
        after = [f":(exclude,top){_rel(d, root)}" for d in private.inside(root)]
    head = ["git", "--no-pager", "-c", "core.fsmonitor=false", sub]
    if sub in GIT_DIFFING:
        head += ["--no-ext-diff", "--no-textconv"]
    tail = ["--", *after] if after or parsed.paths_after is not None else []
    return [*head, *parsed.options, *pattern, *operands, *tail]


def run_planned(
    argv: list[str],
    root: Path,
    timeout: float,
    limit: int,
    drop_errors: bool = False,
    tools: tuple[str, ...] = (),
) -> str:
    """Run a planned command (``plan_command``) in ``root`` without a shell, with a stripped
    environment, no input and a time limit; its output (at most ``limit`` characters, cut at a
    line's end with a note saying so; its error output too unless ``drop_errors``), prefixed
    with the exit status when it failed. A command this machine lacks says what the role (its
    allow-list ``tools``) can use instead."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root),
        "LANG": "C.UTF-8",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_PAGER": "cat",
        "PAGER": "cat",
    }
    if shutil.which(argv[0], path=env["PATH"]) is None:
        return f"error: {not_installed(argv[0], tools)}"
    try:
        done = run_bounded(argv, root, env, timeout, limit, drop_errors)
    except subprocess.TimeoutExpired:
        return f"error: timed out after {timeout:g}s"
    except OSError as exc:
        return f"error: {exc.strerror}"
    errors = done.stderr.text[:MAX_ERROR_CHARS]
    out = cut_to(done.stdout, limit - len(errors)) + errors
    if done.returncode == 1 and not out and _searches(argv):
        return "no matches (exit 1)"
    return out if done.returncode == 0 else f"exit {done.returncode}\n{out}"


MAX_ERROR_CHARS = 4_000
"""Of a command's answer, what its error output may take: the rest is its output's."""
NARROW = "grep -m N, head -n N, sed -n 'A,Bp' FILE, or a narrower path"


@dataclass(frozen=True, slots=True)
class Stream:
    """What a command wrote to one stream: its first bytes (up to what is kept) and how many
    it wrote in all."""

    head: bytes
    size: int

    @property
    def text(self) -> str:
        return self.head.decode("utf-8", "replace")


@dataclass(frozen=True, slots=True)
class Ran:
    returncode: int
    stdout: Stream
    stderr: Stream


def _drain(stream: IO[bytes], keep: int, into: list[Stream]) -> None:
    """Read ``stream`` to its end, keeping its first ``keep`` bytes (the command is never held
    up on a full pipe, and never more than that is held in memory)."""
    head = bytearray()
    size = 0
    while chunk := stream.read(1 << 16):
        size += len(chunk)
        if len(head) < keep:
            head += chunk[: keep - len(head)]
    into.append(Stream(bytes(head), size))


def run_bounded(
    argv: list[str], root: Path, env: dict[str, str], timeout: float, keep: int, drop_errors: bool
) -> Ran:
    """Run ``argv`` with no input and a time limit (TimeoutExpired: it was killed), keeping the
    first ``keep`` bytes of its output and of its error output (more than ``keep`` characters of
    text take at least as many bytes)."""
    with subprocess.Popen(
        argv,
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL if drop_errors else subprocess.PIPE,
    ) as proc:
        streams: list[list[Stream]] = [[], []]
        readers = [
            threading.Thread(target=_drain, args=(pipe, keep + 1, into), daemon=True)
            for pipe, into in zip((proc.stdout, proc.stderr), streams, strict=True)
            if pipe is not None
        ]
        for reader in readers:
            reader.start()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
        finally:
            for reader in readers:
                reader.join()
    empty = [Stream(b"", 0)]
    return Ran(proc.returncode, (streams[0] or empty)[0], (streams[1] or empty)[0])


def cut_to(stream: Stream, limit: int) -> str:
    """A stream's text, whole when it fits in ``limit`` characters, else cut at the last line's
    end that fits (inside the first line when even that does not fit) and ended by a note
    saying where, and how to narrow the command."""
    text = stream.text
    if len(text) <= limit and len(stream.head) == stream.size:
        return text
    shown = text[:limit]
    end = shown.rfind("\n")
    if end < 0:
        return (
            f"{shown}\n[output cut at {limit:,} characters, inside line 1 (of {stream.size:,} bytes);"
            f" narrow the command: {NARROW}]\n"
        )
    shown = shown[: end + 1]
    return (
        f"{shown}[output cut after {shown.count(chr(10))} lines ({len(shown.encode()):,} of"
        f" {stream.size:,} bytes); narrow the command: {NARROW}]\n"
    )


def _searches(argv: list[str]) -> bool:
    """Whether ``argv`` is a search whose exit status 1 means only that nothing matched."""
    return argv[0] in ("grep", "rg") or argv[:5] == [
        "git",
        "--no-pager",
        "-c",
        "core.fsmonitor=false",
        "grep",
    ]
