"""Configuration entries: the keys of YAML, JSON, TOML, ``.env`` and Dockerfiles as definitions.

A design rests on configuration as much as on code ("the compose file runs `postgres`",
"`[tool.ruff].line-length` is 110"). Each key of a mapping is an entry named by its dotted path
(``services.postgres``, ``tool.ruff.line-length``) spanning the key's line and its value's lines;
a ``.env`` line's variable, and a Dockerfile's ``ENV`` and ``ARG`` variables and named stages
(``FROM ... AS builder``) are entries too. Keys inside lists are not (a list's items have no
names). A file larger than ``max_config_bytes`` (params/claims.toml) is read as text only.

An entry's fingerprint is its lines' normalised text with its own name masked (so a renamed
key is recognised), comment lines aside; a ``.env`` entry's is its name alone, so no value
(often a secret) is ever digested into a file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import PurePosixPath

import yaml

from pipeline.grounding.symbols import Symbol

YAML_SUFFIXES = frozenset({".yaml", ".yml", ".json"})
TOML_SUFFIXES = frozenset({".toml"})
TABLE_RE = re.compile(r"^\s*\[\[?\s*(?P<name>[^\]]+?)\s*\]\]?\s*(?:#.*)?$")
KEY_RE = re.compile(
    r"^\s*(?P<key>(?:[A-Za-z0-9_\-]+|\"[^\"]*\"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_\-]+|\"[^\"]*\"|'[^']*'))*)\s*="
)
ENV_RE = re.compile(r"^\s*(?:export\s+)?(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*=")
DOCKER_RE = re.compile(r"^\s*(?P<op>ENV|ARG|FROM)\s+(?P<rest>.+)$", re.IGNORECASE)
DOCKER_VAR_RE = re.compile(r"(?:^|\s)(?P<key>[A-Za-z_][A-Za-z0-9_]*)(?=\s*=|\s|$)")


def config_kind(rel: str) -> str | None:
    """``yaml``, ``toml``, ``env`` or ``docker`` for a configuration file, else None."""
    path = PurePosixPath(rel)
    name = path.name.lower()
    if path.suffix.lower() in YAML_SUFFIXES:
        return "yaml"
    if path.suffix.lower() in TOML_SUFFIXES:
        return "toml"
    if name == ".env" or name.startswith(".env.") or name.endswith(".env"):
        return "env"
    if (
        name in ("dockerfile", "containerfile")
        or name.startswith("dockerfile.")
        or name.endswith(".dockerfile")
    ):
        return "docker"
    return None


def _symbol(rel: str, path: list[str], kind: str, first: int, last: int, lines: list[str]) -> Symbol:
    line = lines[first - 1].strip() if first - 1 < len(lines) else ""
    return Symbol(path[-1], ".".join(path), kind, rel, first, line, end=max(first, last))


def _trimmed(lines: list[str], first: int, last: int) -> int:
    """``last`` moved up over blank and comment lines (never above ``first``)."""
    while last > first and (not lines[last - 1].strip() or lines[last - 1].lstrip().startswith("#")):
        last -= 1
    return last


def _yaml_last(lines: list[str], node: yaml.Node) -> int:
    """The 1-based last line of a node: its end mark's line, or the line before when the end
    mark sits at the start of the next entry."""
    mark = node.end_mark
    row = mark.line
    if row < len(lines) and not lines[row][: mark.column].strip():
        return row  # the node ended on the line before
    return row + 1


def _yaml_entries(rel: str, text: str, lines: list[str]) -> Iterator[Symbol]:
    try:
        documents = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError:
        return
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, list[str]]] = [(d, []) for d in reversed(documents) if d is not None]
    while stack:
        node, path = stack.pop()
        if id(node) in seen:  # an alias names a node already read: never twice (no billion laughs)
            continue
        seen.add(id(node))
        if not isinstance(node, yaml.MappingNode):
            continue
        for key, value in reversed(node.value):
            if not isinstance(key, yaml.ScalarNode) or not isinstance(key.value, str) or key.value == "<<":
                continue
            here = [*path, key.value]
            first = key.start_mark.line + 1
            last = _trimmed(lines, first, _yaml_last(lines, value))
            yield _symbol(rel, here, "key", first, last, lines)
            stack.append((value, here))


def _toml_key(raw: str) -> list[str]:
    return [
        part.strip().strip("\"'") for part in re.split(r"\.(?=(?:[^\"']*[\"'][^\"']*[\"'])*[^\"']*$)", raw)
    ]


def _toml_value_end(lines: list[str], start: int) -> int:
    """The last line of a key's value starting on line ``start``: brackets closed, a
    multi-line string ended."""
    depth, number = 0, start
    quote: str | None = None
    while number <= len(lines):
        text = lines[number - 1]
        if number == start:
            text = text.split("=", 1)[1] if "=" in text else text
        for triple in ('"""', "'''"):
            if text.count(triple) % 2:
                quote = None if quote == triple else (quote or triple)
        if quote is None:
            code = re.sub(r"\"(?:[^\"\\]|\\.)*\"|'[^']*'", "", text.split(" #", 1)[0])
            depth += code.count("[") + code.count("{") - code.count("]") - code.count("}")
            if depth <= 0:
                return number
        number += 1
    return len(lines)


def _toml_entries(rel: str, lines: list[str]) -> Iterator[Symbol]:
    table: list[str] = []
    table_start = 0
    number = 1
    tables: list[tuple[list[str], int]] = []
    while number <= len(lines):
        line = lines[number - 1]
        if m := TABLE_RE.match(line):
            if table:
                tables.append((table, table_start))
            table, table_start = _toml_key(m["name"]), number
            number += 1
            continue
        if m := KEY_RE.match(line):
            end = _toml_value_end(lines, number)
            yield _symbol(rel, [*table, *_toml_key(m["key"])], "key", number, end, lines)
            number = end + 1
            continue
        number += 1
    if table:
        tables.append((table, table_start))
    heads = [start for _, start in tables] + [len(lines) + 1]
    for (name, start), after in zip(tables, heads[1:], strict=True):
        yield _symbol(rel, name, "table", start, _trimmed(lines, start, after - 1), lines)


def _env_entries(rel: str, lines: list[str]) -> Iterator[Symbol]:
    for number, line in enumerate(lines, start=1):
        if m := ENV_RE.match(line):
            yield Symbol(m["key"], m["key"], "variable", rel, number, f"{m['key']}=…", end=number)


def _docker_entries(rel: str, lines: list[str]) -> Iterator[Symbol]:
    for number, line in enumerate(lines, start=1):
        m = DOCKER_RE.match(line)
        if m is None:
            continue
        op, rest = m["op"].upper(), m["rest"]
        if op == "FROM":
            stage = re.search(r"\s+AS\s+(?P<name>[\w.\-]+)\s*$", rest, re.IGNORECASE)
            if stage:
                yield _symbol(rel, [stage["name"]], "stage", number, number, lines)
            continue
        first = rest.split("=", 1)[0].split()[0] if rest.split() else ""
        keys = [k["key"] for k in DOCKER_VAR_RE.finditer(rest)] if "=" in rest else [first]
        for key in dict.fromkeys(k for k in keys if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k)):
            yield _symbol(rel, [key], op.lower(), number, number, lines)


def config_entries(rel: str, text: str, lines: list[str]) -> list[Symbol]:
    """The entries of the configuration file at ``rel``, or none (not configuration, or not
    well formed: it stays a text file)."""
    kind = config_kind(rel)
    if kind == "yaml":
        return list(_yaml_entries(rel, text, lines))
    if kind == "toml":
        return list(_toml_entries(rel, lines))
    if kind == "env":
        return list(_env_entries(rel, lines))
    if kind == "docker":
        return list(_docker_entries(rel, lines))
    return []


def env_file(rel: str) -> bool:
    """Whether values of this file are never digested (a ``.env`` file: its values are secrets)."""
    return config_kind(rel) == "env"
