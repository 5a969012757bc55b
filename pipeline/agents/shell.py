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
and git never runs an external diff or text conversion. A hard link elsewhere to a private
file is private too: a recursive grep names the files around it instead of its tree, git
excludes it, rg is refused (``around_links``). A recursive search that starts in version
control is refused with the way to read history. A planned command runs without a shell
(agents.run_command).
"""

from __future__ import annotations

import fnmatch
import itertools
import os
import re
import shutil
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

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
    flags: set[str] = field(default_factory=set)
    """The flags given, each by the spelling the allow-list lists (``-h``, ``--no-filename``)."""


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
        out.flags.add(name)
        out.options.append(arg)
        return 1
    if name not in spec.values:
        raise ShellRefusal(f"{spec.name}: option {name} is not allowed{_as_pattern(spec, arg, out)}")
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
            out.flags.add(option)
            continue
        if option not in spec.values:
            raise ShellRefusal(f"{spec.name}: option {option} is not allowed{_as_pattern(spec, arg, out)}")
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


def _as_pattern(spec: CommandSpec, arg: str, out: Parsed) -> str:
    """For a search still waiting for its pattern, how to give one that starts with ``-`` (it
    reads as an option)."""
    if spec.name not in SEARCH_SPECS or out.operands or out.pattern_given:
        return ""
    return f"; to search for {arg!r}, give it after -e: {spec.name} -e {arg!r} PATH"


SEARCH_SPECS = frozenset({"grep", "rg", "git grep"})


def plan_command(argv: list[str], confine: Callable[[str], Path], root: Path, private: Private) -> list[str]:
    """The argv to run for ``argv``, or ShellRefusal; path operands are confined with ``confine``."""
    if not argv or argv[0] not in commands():
        raise ShellRefusal(f"only {describe(installed())} may run (one command, no shell)")
    if argv[0] == "git":
        if argv[1:2] == ["--no-pager"]:  # no pager ever runs here: said or not, it is so
            argv = [argv[0], *argv[2:]]
        if len(argv) > 1 and argv[1].startswith("-"):
            raise ShellRefusal(
                f"git: {argv[1]} before the subcommand is not allowed; write the subcommand first"
                f" (git log ...), in the repository root; git may run {', '.join(GIT_SUBCOMMANDS)}"
            )
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
    if parsed.recursive:
        _not_version_control(paths)
    skip = _skips(parsed.recursive, searched, private)
    vcs = list(VERSION_CONTROL) if parsed.recursive else []
    if argv[0] == "grep":
        extra = [f"--exclude-dir={name}" for name in vcs] + [f"--exclude-dir={d.name}" for d in skip]
    elif argv[0] == "rg":
        extra = [f"--glob=!{name}/" for name in vcs] + [f"--glob=!/{_rel(d, root)}/**" for d in skip]
    else:
        extra = []
    if parsed.recursive and argv[0] in ("grep", "rg") and (links := linked_private(searched, private)):
        paths = around_links(argv[0], paths, parsed, links, root, private)
        if not parsed.flags & {"-h", "--no-filename"}:
            extra.append("-H")
    return [argv[0], *parsed.options, *extra, "--", *pattern, *paths]


def _not_version_control(paths: list[str]) -> None:
    """A recursive search starting in version control is refused: it would find nothing there
    (version control is never searched as files), and the history is read through git."""
    for path in paths:
        inside = next((part for part in Path(path).parts if part in VERSION_CONTROL), None)
        if inside is not None:
            raise ShellRefusal(
                f"{path}: version control ({inside}) is not searched as files; use git log, git show"
                " or git grep to read the history"
            )


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
    _not_version_control(paths)
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


def _files_under(base: Path, skip_dir: Callable[[Path], bool]) -> Iterator[Path]:
    """The regular files under ``base`` (no link, FIFO or device: a recursive grep skips them),
    in a stable order, never entering version control or a directory ``skip_dir`` names."""
    for dirpath, dirnames, filenames in os.walk(base):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if d not in VERSION_CONTROL and not skip_dir(here / d))
        for name in sorted(filenames):
            try:
                regular = stat.S_ISREG((here / name).lstat().st_mode)
            except OSError:
                continue
            if regular:
                yield here / name


def linked_private(searched: list[Path], private: Private) -> list[Path]:
    """The files under ``searched`` that are hard links to a private file (a run record, the
    cache): private too, wherever they are. Looked for only when a private file has a second
    link anywhere (its link count says so)."""
    if not private.inodes():
        return []
    found: list[Path] = []
    for base in searched:
        if base.is_dir():
            under = _files_under(base, lambda d: private.covers(d.resolve()))
            found += [f for f in under if private.covers(f) and f not in found]
    return found


MAX_LISTED = 200_000
"""The most characters of file names a search around a private link passes to grep."""


def around_links(
    command: str, paths: list[str], parsed: Parsed, links: list[Path], root: Path, private: Private
) -> list[str]:
    """A recursive grep over trees that hold a hard link to a private file: grep cannot leave
    one file out by its path (``--exclude`` matches names), so the files it would read are
    named instead, each as grep -r names it (the operand, a slash, the path below), less the
    links. rg, which also reads ignore files and skips hidden ones, is refused."""
    named = ", ".join(_rel(link, root) for link in links[:3])
    what = f"{named} is a hard link to a private file (a run record or the model-call cache)"
    if command != "grep":
        raise ShellRefusal(f"{what}; search with grep -rn PATTERN PATH or the grep tool, which leave it out")
    excluded = [o.partition("=")[2] for o in parsed.options if o.startswith("--exclude-dir=")]

    def skip(directory: Path) -> bool:
        named = any(fnmatch.fnmatch(directory.name, g) for g in excluded)
        return named or private.covers(directory.resolve())

    out: list[str] = []
    for given in paths or [""]:
        base = root / given
        if not base.is_dir():
            out.append(given)
            continue
        prefix = "" if not given else given.rstrip("/") + "/"
        out += [prefix + f.relative_to(base).as_posix() for f in _files_under(base, skip) if f not in links]
    if sum(map(len, out)) > MAX_LISTED:
        raise ShellRefusal(f"{what}, and the search around it names too many files: search narrower paths")
    return out or [os.devnull]  # no file left: grep reads none (never its input)


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
    if sub in GIT_UNLIMITED:  # a hard link to a private file is private wherever it is
        after += [f":(exclude,top,literal){_rel(link, root)}" for link in linked_private([root], private)]
    head = ["git", "--no-pager", "-c", "core.fsmonitor=false", sub]
    if sub in GIT_DIFFING:
        head += ["--no-ext-diff", "--no-textconv"]
    tail = ["--", *after] if after or parsed.paths_after is not None else []
    return [*head, *parsed.options, *pattern, *operands, *tail]
