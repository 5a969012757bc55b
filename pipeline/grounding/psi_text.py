"""PSI's text fallback: definitions and references in a file no grammar reads.

A file under the code root whose language PSI has no grammar for (a Perl script, a Makefile,
SQL, a configuration file) is still answered: a definition is a line of one of the shapes
most languages share (a keyword such as ``def``, ``function``, ``sub`` or ``class`` before
the name, a shell-style ``name() {``, an assignment ``NAME =``, a top-level ``name:``, a
``#define``, SQL's ``CREATE ... name``), and a reference is the name as a whole word. Both
are marked as text matches, so a reader knows they were found by shape, not by a parser.
"""

from __future__ import annotations

import re
from functools import cache

TEXT = "text"
"""What PSI calls the files it reads as text."""
MAX_TEXT_BYTES = 1_000_000
"""A larger file is not read as text (a data dump, a generated file)."""
KEYWORDS = (
    "def|function|func|fun|fn|sub|proc|procedure|method|class|struct|union|interface|trait|"
    "module|package|namespace|enum|type|typedef|record|object|protocol|macro|defmacro|defun|"
    "defn|let|const|var|val|my|our|local|alias"
)
MODIFIERS = (
    "export|public|private|protected|internal|static|async|pub|abstract|final|inline|extern|"
    "override|virtual|open|sealed|readonly|declare|default"
)


@cache
def _shapes(name: str) -> tuple[re.Pattern[str], ...]:
    n = re.escape(name)
    return (
        re.compile(rf"^\s*(?:(?:{MODIFIERS})\s+)*(?:{KEYWORDS})\s+[$@%&*]?(?:[\w$]+(?:\.|::|:|->))*{n}\b"),
        re.compile(rf"^\s*(?:function\s+)?{n}\s*\(\s*\)\s*\{{?"),
        re.compile(rf"^\s*(?:export\s+|readonly\s+|set\s+)?[$@%]?{n}\s*(?::=|\?=|\+=|=(?!=))"),
        re.compile(rf"^{n}\s*:(?!:)"),
        re.compile(rf"^\s*#\s*define\s+{n}\b"),
        re.compile(
            rf"^\s*create\s+(?:or\s+replace\s+)?(?:temporary\s+)?"
            rf"(?:table|view|function|procedure|index|type|trigger|sequence)\s+"
            rf"(?:if\s+not\s+exists\s+)?(?:[\w\"]+\.)?\"?{n}\b",
            re.IGNORECASE,
        ),
    )


def readable_text(data: bytes) -> str | None:
    """The file's text when it is a text file PSI reads as text, else None."""
    if len(data) > MAX_TEXT_BYTES or b"\x00" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def bare_name(query: str) -> tuple[str, str]:
    """A query as (qualifier, name): ``Bucket.take`` is ("Bucket", "take")."""
    query = query.strip().strip("`").removesuffix("()")
    for sep in ("::", "->", ".", ":"):
        head, found, name = query.rpartition(sep)
        if found and head.strip(sep) and name:  # `.adr-dir` and `config.` are names, not Outer.name
            return head, name
    return "", query


def text_definitions(query: str, lines: list[str]) -> list[int]:
    """The 1-based lines of ``lines`` that define ``query`` by one of the shared shapes."""
    qualifier, name = bare_name(query)
    if not name:
        return []
    found = []
    for number, line in enumerate(lines, start=1):
        if any(shape.search(line) for shape in _shapes(name)) and (
            not qualifier or qualifier.split(".")[-1] in line
        ):
            found.append(number)
    return found


def text_references(query: str, lines: list[str]) -> list[int]:
    """The 1-based lines of ``lines`` that hold ``query``'s name as a whole word."""
    _, name = bare_name(query)
    if not name:
        return []
    word = re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])")
    return [number for number, line in enumerate(lines, start=1) if word.search(line)]
