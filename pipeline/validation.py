"""Data files (params/*.toml, agents/*.md frontmatter, queue payloads) are validated by pydantic
models; this is the one adapter from a ``ValidationError`` to ``InputError(file, line, hint)``.

The first error names where it is (``[partition] window``, ``tools``), what is wrong and, for an
unknown key, the keys the model knows. The line is that of the offending key when the file
format keeps lines (TOML, YAML), found by a locator the caller passes.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from pipeline import confinement
from pipeline.errors import InputError

M = TypeVar("M", bound=BaseModel)
Loc = tuple[int | str, ...]
Locate = Callable[[Loc], int | None]
"""The 1-based line of the value at a location (``None`` where the format keeps no lines)."""


def _field_model(model: type[BaseModel], loc: Loc) -> type[BaseModel] | None:
    """The model whose field the last part of ``loc`` names (nested models followed)."""
    current: type[BaseModel] = model
    for part in loc[:-1]:
        field = current.model_fields.get(str(part))
        annotation = field.annotation if field is not None else None
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            current = annotation
        else:
            return None
    return current


def _message(error: ErrorDetails) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        return "not a known key"
    if kind == "missing":
        return "missing"
    if kind == "value_error":
        return str(error.get("ctx", {}).get("error", error["msg"]))
    given = error.get("input")
    shown = f" (not {given!r})" if isinstance(given, str | int | float | bool) else ""
    return f"{error['msg'][:1].lower()}{error['msg'][1:]}{shown}"


def toml_name(loc: Loc) -> str:
    """``[partition] window`` for the location ``("partition", "window")``."""
    if len(loc) == 1:
        return str(loc[0])
    table = ".".join(str(p) for p in loc[:-1])
    return f"[{table}] {loc[-1]}"


def dotted(loc: Loc) -> str:
    return ".".join(str(p) for p in loc)


def invalid(
    exc: ValidationError,
    file: Path | str,
    hint: str,
    *,
    model: type[BaseModel] | None = None,
    locate: Locate | None = None,
    name: Callable[[Loc], str] = dotted,
) -> InputError:
    """The named error for the first thing wrong in a data file."""
    error = exc.errors(include_url=False)[0]
    loc: Loc = tuple(error["loc"])
    where = name(loc) if loc else ""
    what = _message(error)
    message = f"{where}: {what}" if where else what
    if error["type"] == "extra_forbidden" and model is not None:
        owner = _field_model(model, loc)
        if owner is not None:
            known = list(owner.model_fields)
            close = did_you_mean(str(loc[-1]), known)
            guess = f"did you mean {name((*loc[:-1], close))}? " if close else ""
            hint = f"{guess}the known keys are {', '.join(known)}; {hint}"
    line = locate(loc) if locate is not None else None
    return InputError(message, file=file, line=line, hint=hint)


def did_you_mean(word: str, known: Sequence[str]) -> str | None:
    """The known name ``word`` most likely meant (a typo, or one part of a longer name:
    ``budgett`` for ``iteration_budget``), or None."""
    close = difflib.get_close_matches(word, known, n=1, cutoff=0.6)
    if close:
        return close[0]
    best: tuple[float, str] | None = None
    for name in known:
        for part in re.split(r"[_\-.]", name):
            ratio = difflib.SequenceMatcher(None, word, part).ratio()
            if ratio >= 0.8 and (best is None or ratio > best[0]):
                best = (ratio, name)
    return best[1] if best else None


HEADER_RE = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(?:#.*)?$")


def _key_re(key: str) -> re.Pattern[str]:
    quoted = re.escape(key)
    return re.compile(rf"^\s*(?:{quoted}|\"{quoted}\"|'{quoted}')\s*=")


def toml_locator(path: Path) -> Locate:
    """Finds the line of ``[table] key`` (or of the table's header, or of a top-level key) in
    a TOML file, read only when an error needs it."""

    def locate(loc: Loc) -> int | None:
        try:
            lines = confinement.read_bytes(path).decode("utf-8").splitlines()
        except (OSError, UnicodeDecodeError, InputError):
            return None
        parts = [str(p) for p in loc if not isinstance(p, int)]
        return _toml_line(lines, parts)

    return locate


def _toml_line(lines: Sequence[str], parts: list[str]) -> int | None:
    for split in range(len(parts), -1, -1):
        table, keys = ".".join(parts[:split]), parts[split:]
        header = None if table else 0
        for number, text in enumerate(lines, 1):
            match = HEADER_RE.match(text)
            if header is None:
                name = match.group(1).replace(" ", "") if match else None
                # A table is found by its own header, or by that of its first sub-table.
                if name == table or (name and not keys and name.startswith(table + ".")):
                    header = number
                continue
            if match and number > header:
                break
            if keys and _key_re(keys[0]).match(text):
                return number
        if header and not keys:
            return header
    return None


def yaml_locator(text: str, first_line: int) -> Locate:
    """Finds the line of a top-level key in a YAML mapping whose text starts on ``first_line``
    of its file (frontmatter starts on line 2); the mapping's first line when the key is absent."""

    def locate(loc: Loc) -> int | None:
        import yaml

        try:
            node = yaml.compose(text)
        except yaml.YAMLError:
            return first_line
        if loc and isinstance(node, yaml.MappingNode):
            for key, _value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value == str(loc[0]):
                    return first_line + int(key.start_mark.line)
        return first_line

    return locate


def validated(
    model: type[M],
    data: Any,
    file: Path | str,
    hint: str,
    *,
    locate: Locate | None = None,
    name: Callable[[Loc], str] = dotted,
) -> M:
    """``data`` as ``model``, or the named error for the first thing wrong with it."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise invalid(exc, file, hint, model=model, locate=locate, name=name) from None
