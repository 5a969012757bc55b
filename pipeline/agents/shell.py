"""The Bash tool's allow-list: every argument of a command is checked against params/bash.toml.

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

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pipeline.agents.confine import Private
from pipeline.settings import data_dir, load_toml

GIT_SUBCOMMANDS = ("log", "show", "diff", "blame")
GIT_DIFFING = frozenset({"log", "show", "diff"})
VERSION_CONTROL = (".git", ".hg", ".svn")
"""Directories a recursive grep or rg never searches: a repository's history is not its code."""


class ShellRefusal(Exception):
    """A command or argument outside the allow-list."""


@dataclass(frozen=True, slots=True)
class CommandSpec:
    name: str
    flags: frozenset[str]
    values: dict[str, re.Pattern[str]]
    operands: str
    numeric: bool
    recursive: frozenset[str]


@cache
def specs() -> dict[str, CommandSpec]:
    data = load_toml(data_dir("params") / "bash.toml")
    kinds = {name: re.compile(pattern) for name, pattern in data["kinds"].items()}
    out = {}
    for name, raw in data["commands"].items():
        out[name] = CommandSpec(
            name,
            frozenset(raw.get("flags", [])),
            {option: kinds[kind] for option, kind in raw.get("values", {}).items()},
            raw["operands"],
            bool(raw.get("numeric", False)),
            frozenset(raw.get("recursive", [])),
        )
    return out


def commands() -> list[str]:
    return sorted({name.split()[0] for name in specs()})


INSTEAD = {"rg": "grep -rn PATTERN PATH (or the Grep tool)", "grep": "the Grep tool"}


def not_installed(command: str) -> str:
    """What a listed command that this machine lacks answers, with what to use instead."""
    instead = INSTEAD.get(command, "the Read, Grep or Glob tools")
    return f"{command} is not installed on this machine; use {instead} instead"


@dataclass(slots=True)
class Parsed:
    options: list[str]
    operands: list[str]
    paths_after: list[str] | None
    """Operands after ``--`` (None when there was no ``--``)."""
    pattern_given: bool
    recursive: bool


def _value(spec: CommandSpec, option: str, value: str) -> None:
    if not spec.values[option].match(value):
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
    out.pattern_given |= name == "--regexp"
    if eq:
        _value(spec, name, value)
        out.options.append(arg)
        return 1
    if following is None:
        raise ShellRefusal(f"{spec.name}: {name} needs a value")
    _value(spec, name, following)
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
        out.pattern_given |= option == "-e"
        attached = arg[j + 1 :]
        if attached:
            _value(spec, option, attached)
            out.options.append(arg)
            return 1
        if following is None:
            raise ShellRefusal(f"{spec.name}: {option} needs a value")
        _value(spec, option, following)
        out.options += [arg, following]
        return 2
    out.options.append(arg)
    return 1


def plan_command(argv: list[str], confine: Callable[[str], Path], root: Path, private: Private) -> list[str]:
    """The argv to run for ``argv``, or ShellRefusal; path operands are confined with ``confine``."""
    if not argv or argv[0] not in commands():
        raise ShellRefusal(f"only {', '.join(commands())} may run")
    if argv[0] == "git":
        if len(argv) < 2 or argv[1] not in GIT_SUBCOMMANDS:
            raise ShellRefusal(f"git may run only {', '.join(GIT_SUBCOMMANDS)}")
        return _git(argv[1], argv[2:], confine, root, private)
    spec = specs()[argv[0]]
    parsed = parse(spec, argv[1:])
    operands = list(parsed.operands)
    if spec.operands == "pattern" and not parsed.pattern_given and operands:
        pattern, operands = operands[:1], operands[1:]
    else:
        pattern = []
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
    parsed = parse(specs()[f"git {sub}"], args)
    operands: list[str] = []
    has_paths = bool(parsed.paths_after)
    for arg in parsed.operands:
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
    if sub in GIT_DIFFING and not has_paths:
        # No path limits the output: keep the private directories out of it.
        after = [f":(exclude,top){_rel(d, root)}" for d in private.inside(root)]
    head = ["git", "--no-pager", "-c", "core.fsmonitor=false", sub]
    if sub in GIT_DIFFING:
        head += ["--no-ext-diff", "--no-textconv"]
    tail = ["--", *after] if after or parsed.paths_after is not None else []
    return [*head, *parsed.options, *operands, *tail]


def run_planned(argv: list[str], root: Path, timeout: float, limit: int) -> str:
    """Run a planned command (``plan_command``) in ``root`` without a shell, with a stripped
    environment, no input and a time limit; its output (at most ``limit`` characters), prefixed
    with the exit status when it failed."""
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
        return f"error: {not_installed(argv[0])}"
    try:
        done = subprocess.run(
            argv,
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return f"error: timed out after {timeout:g}s"
    except OSError as exc:
        return f"error: {exc.strerror}"
    out = (done.stdout + done.stderr)[:limit]
    return out if done.returncode == 0 else f"exit {done.returncode}\n{out}"
