"""A command line split into words as a POSIX shell splits it, without running a shell.

The Bash tool runs one command with its arguments and never a shell, so what a shell would do
with a line is done here, or refused by name: quotes (``'...'``, ``"..."``) and backslashes
make their characters plain text, so ``grep -n "a\\|b"``, ``grep -E 'a|b'``, a ``$`` anchor or a
``<`` inside a pattern are ordinary words. Outside quotes, an operator (``|``, ``;``, ``&``,
``<``, ``>``, ``(``, ``)``, a line break, a backquote) is refused, as is an expansion
(``$NAME``, ``${...}``, ``$(...)``; also inside double quotes, where a shell expands them too).
Two redirections that only say what to do with error messages are understood: ``2>/dev/null``
(the command's error output is dropped) and ``2>&1`` (it is kept, as it always is). A word
is brace-expanded first, as bash does (agents.braces: ``--include=*.{py,md}`` is two options,
``src/{a,b}.py`` two paths; a quoted brace is text, so ``grep -E 'x{2,3}'`` keeps its pattern).
A word whose glob characters (``*``, ``?``, ``[``) stand outside quotes carries a pattern for
the caller to expand against the files it may read, as a shell would (``src/*.py``); quoted
glob characters stay plain (``find . -name '*.py'``).

The standard library's ``shlex`` splits words the same way but does not say which characters
were quoted, which the glob expansion and the operator test both need; this lexer keeps that.
"""

from __future__ import annotations

import glob as globbing
from dataclasses import dataclass, field

from pipeline.agents import braces
from pipeline.agents.braces import Char

OPERATORS = frozenset("|&;<>()`\n")
GLOB = frozenset("*?[")
SPECIAL_PARAMS = frozenset("@*#?$!-0123456789")
DOUBLE_ESCAPES = frozenset('$`"\\\n')
QUIET = ("2>/dev/null", "2>&1")


class ShellSyntax(ValueError):
    """A line that is not one command: an operator or expansion outside quotes, an open quote."""

    def __init__(self, message: str, operator: str = "") -> None:
        super().__init__(message)
        self.operator = operator


@dataclass(frozen=True, slots=True)
class Word:
    """One argument: its text, and when glob characters stood outside quotes, the glob pattern
    that matches it (the quoted parts escaped)."""

    text: str
    pattern: str | None = None


@dataclass(slots=True)
class CommandLine:
    words: list[Word]
    drop_errors: bool = False
    """``2>/dev/null`` was given: the command's error output is not returned."""

    @property
    def argv(self) -> list[str]:
        return [w.text for w in self.words]


@dataclass(slots=True)
class _Builder:
    chars: list[Char] = field(default_factory=list)
    started: bool = False

    def add(self, chars: str, quoted: bool) -> None:
        self.started = True
        self.chars.append((chars, quoted))

    def text(self) -> str:
        return "".join(ch for ch, _ in self.chars)

    def words(self) -> list[Word]:
        """The word as a shell passes it on: brace-expanded (one word or several), each with
        its glob pattern when glob characters stood outside quotes."""
        try:
            return [_word(chars) for chars in braces.expand(self.chars)]
        except braces.TooManyWords as exc:
            raise ShellSyntax(f"{exc}: name fewer, or search a directory instead") from None


def _word(chars: list[Char]) -> Word:
    """A word's text, and its glob pattern (the quoted characters escaped) when a glob
    character stood outside quotes."""
    text = "".join(ch for ch, _ in chars)
    if not any(ch in GLOB and not quoted for ch, quoted in chars):
        return Word(text)
    pattern = "".join(ch if ch in GLOB and not quoted else globbing.escape(ch) for ch, quoted in chars)
    return Word(text, pattern)


def _expansion(line: str, at: int) -> str | None:
    """The expansion a ``$`` at ``at`` starts (``$(``, ``${``, ``$NAME``, ``$1``), or None when
    the ``$`` is a plain character (an anchor at a pattern's end, before a quote or a space)."""
    following = line[at + 1 : at + 2]
    if following in ("(", "{") or (following and following in SPECIAL_PARAMS):
        return "$" + following
    if following and (following.isalpha() or following == "_"):
        end = at + 2
        while end < len(line) and (line[end].isalnum() or line[end] == "_"):
            end += 1
        return line[at:end]
    return None


def _refuse_expansion(found: str) -> ShellSyntax:
    return ShellSyntax(
        f"{found} would be expanded by a shell, and no shell runs here: write the value itself,"
        " or quote it with single quotes ('...') to search for it as text",
        found,
    )


def _single(line: str, i: int, word: _Builder) -> int:
    end = line.find("'", i + 1)
    if end < 0:
        raise ShellSyntax("a single quote is not closed")
    word.started = True
    for ch in line[i + 1 : end]:
        word.add(ch, quoted=True)
    return end + 1


def _double(line: str, i: int, word: _Builder) -> int:
    word.started = True
    i += 1
    while i < len(line):
        ch = line[i]
        if ch == '"':
            return i + 1
        if ch == "\\" and line[i + 1 : i + 2] in DOUBLE_ESCAPES and i + 1 < len(line):
            word.add(line[i + 1], quoted=True)
            i += 2
            continue
        if ch == "`":
            raise _refuse_expansion("`...`")
        if ch == "$" and (found := _expansion(line, i)) is not None:
            raise _refuse_expansion(found)
        word.add(ch, quoted=True)
        i += 1
    raise ShellSyntax("a double quote is not closed")


def _redirect(line: str, i: int, word: _Builder, out: CommandLine) -> int | None:
    """``2>/dev/null`` or ``2>&1`` where a shell would read them (the ``2`` a word of its own);
    the index after it, or None when ``>`` at ``i`` is not one of them."""
    if word.chars != [("2", False)]:
        return None
    rest = line[i + 1 :]
    target = rest.lstrip(" \t")
    for quiet in QUIET:
        name = quiet[2:]
        if target.startswith(name) and target[len(name) : len(name) + 1] in ("", " ", "\t"):
            out.drop_errors |= name == "/dev/null"
            return i + 1 + (len(rest) - len(target)) + len(name)
    return None


def split_command(line: str) -> CommandLine:
    """The words of ``line`` as a POSIX shell splits them (ShellSyntax for what only a shell
    could run)."""
    out = CommandLine([])
    word = _Builder()
    i = 0
    while i < len(line):
        ch = line[i]
        if ch in " \t":
            if word.started:
                out.words += word.words()
                word = _Builder()
            i += 1
        elif ch == "#" and not word.started:
            break  # a comment, as a shell reads it
        elif ch == "'":
            i = _single(line, i, word)
        elif ch == '"':
            i = _double(line, i, word)
        elif ch == "\\":
            if i + 1 < len(line) and line[i + 1] != "\n":
                word.add(line[i + 1], quoted=True)
            i += 2
        elif ch == "$" and (found := _expansion(line, i)) is not None:
            raise _refuse_expansion(found)
        elif ch == ">" and (after := _redirect(line, i, word, out)) is not None:
            word = _Builder()
            i = after
        elif ch in OPERATORS:
            raise ShellSyntax(_operator_message(line, i), _operator(line, i))
        else:
            word.add(ch, quoted=False)
            i += 1
    if word.started:
        out.words += word.words()
    return out


def _operator(line: str, at: int) -> str:
    """The operator at ``at`` as a shell reads it (``&&`` and ``||`` are one)."""
    if line[at : at + 2] in ("&&", "||"):
        return line[at : at + 2]
    return "\\n" if line[at] == "\n" else "`...`" if line[at] == "`" else line[at]


def _operator_message(line: str, at: int) -> str:
    op = line[at]
    if line[at : at + 2] == "||":
        return (
            "|| runs a second command when the first fails, which needs a shell, and none runs here:"
            " run one command at a time"
        )
    if op == "|":
        return "a pipe (|) needs a shell, and none runs here: run one command (grep -m N caps matches)"
    if op in "<>":
        return f"redirection ({op}) needs a shell, and none runs here: the output comes back to you as it is"
    if op == "\n":
        return "a line break outside quotes starts a second command: run one command at a time"
    if op == "`":
        return str(_refuse_expansion("`...`"))
    return (
        f"{_operator(line, at)} is a shell operator, and no shell runs here: run one command at a time"
        " (quote it to search for it)"
    )
