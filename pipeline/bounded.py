"""Bounded loading of the JSON and TOML files a user can edit (claims ledgers, run records,
events, queue payloads, settings).

A file is parsed only within bounds, and everything past them is an input error naming the file
and the line, never a ``RecursionError`` or a silent choice:

* **depth**: arrays and objects (tables) nested at most ``MAX_DEPTH`` deep, checked before the
  parser runs (Python's parsers recurse, so 100,000 nested arrays would exhaust the stack);
* **size**: at most ``MAX_BYTES`` (the caller may ask for less);
* **duplicate keys**: an object that names a key twice is refused (JSON parsers keep the last
  one, so a record could say two things and be read as one). TOML refuses them by its
  specification, and ``tomllib`` does.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

from pipeline.errors import InputError

MAX_DEPTH = 64
"""No record designloop writes nests deeper than a handful of levels."""
MAX_BYTES = 64 << 20

_JSON_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.S)
_TOML_TOKEN = re.compile(
    rb"\"\"\"(?:[^\\]|\\.)*?\"\"\"|'''.*?'''|\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'|#[^\n]*|[\[\]{}]",
    re.S,
)


class Unbounded(InputError):
    """A JSON or TOML input that does not parse within bounds; ``problem`` says what, without
    the input's name (``is not JSON (...)``, ``nests ... deeper than 64 levels``)."""

    def __init__(
        self, what: str, problem: str, *, file: Path | str | None, line: int | None, hint: str
    ) -> None:
        super().__init__(f"the {what} {problem}", file=file, line=line, hint=hint)
        self.problem = problem


class _Duplicate(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Duplicate(key)
        out[key] = value
    return out


def _too_deep(data: bytes, token: re.Pattern[bytes], limit: int) -> int | None:
    """The byte offset where nesting first passes ``limit`` (strings and comments aside)."""
    depth = 0
    for match in token.finditer(data):
        char = match.group()
        if char in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return match.start()
        elif char in (b"]", b"}"):
            depth = max(0, depth - 1)
    return None


def _line(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def _size(data: bytes, limit: int, file: Path | str | None, what: str, hint: str) -> None:
    if len(data) > limit:
        raise Unbounded(what, f"is {len(data)} bytes, more than {limit}", file=file, line=None, hint=hint)


def load_json(
    data: bytes | str,
    *,
    file: Path | str | None,
    what: str,
    hint: str,
    line: int | None = None,
    max_bytes: int = MAX_BYTES,
    max_depth: int = MAX_DEPTH,
) -> Any:
    """The JSON value ``data`` holds, or an input error naming ``file`` (and the line: ``line``
    is that of ``data``'s first line when it is one line of a larger file, such as an event)."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    _size(raw, max_bytes, file, what, hint)
    first = line or 1
    deep = _too_deep(raw, _JSON_TOKEN, max_depth)
    if deep is not None:
        raise Unbounded(
            what,
            f"nests arrays or objects deeper than {max_depth} levels",
            file=file,
            line=first + _line(raw, deep) - 1,
            hint=hint,
        )
    try:
        return json.loads(raw, object_pairs_hook=_no_duplicates)
    except _Duplicate as exc:
        at = raw.find(json.dumps(exc.key).encode(), raw.find(json.dumps(exc.key).encode()) + 1)
        raise Unbounded(
            what,
            f"names the key {exc.key!r} twice in one object",
            file=file,
            line=first + _line(raw, max(at, 0)) - 1,
            hint=hint,
        ) from None
    except json.JSONDecodeError as exc:
        line_at = first + exc.lineno - 1
        raise Unbounded(what, f"is not JSON ({exc.msg})", file=file, line=line_at, hint=hint) from None
    except (UnicodeDecodeError, RecursionError, ValueError) as exc:
        raise Unbounded(
            what, f"is not JSON ({type(exc).__name__})", file=file, line=line, hint=hint
        ) from None


def load_toml(
    data: bytes | str,
    *,
    file: Path | str | None,
    what: str,
    hint: str,
    max_bytes: int = MAX_BYTES,
    max_depth: int = MAX_DEPTH,
) -> dict[str, Any]:
    """The TOML document ``data`` holds (duplicate keys and tables refused, as TOML says), or an
    input error naming ``file`` and the line."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    _size(raw, max_bytes, file, what, hint)
    deep = _too_deep(raw, _TOML_TOKEN, max_depth)
    if deep is not None:
        raise Unbounded(
            what,
            f"nests arrays or inline tables deeper than {max_depth} levels",
            file=file,
            line=_line(raw, deep),
            hint=hint,
        )
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(
            f"not valid UTF-8: byte 0x{raw[exc.start]:02x} at byte offset {exc.start}",
            file=file,
            line=_line(raw, exc.start),
            hint="re-save the file as UTF-8 (TOML files are UTF-8)",
        ) from None
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"\(at line (\d+)", str(exc))
        raise InputError(
            f"invalid TOML: {exc}", file=file, line=int(found.group(1)) if found else None, hint=hint
        ) from None
    except RecursionError:
        raise Unbounded(what, "nests too deeply to read", file=file, line=None, hint=hint) from None
