"""The places a design names the code: claim mentions and the values their sentences quote.

A design document (design.md, its companion, design-final.md and its companion) claims
something of the code wherever it names a code symbol, a path, or a place in a file:

* in prose, an inline code span shaped like a name (``TokenBucket.take``, ``refill_rate``,
  ``take()``, ``MAX_TOKENS``, or a bare ``Clock``), a path (``ratelimit/bucket.py``,
  ``src/``) or a location (``ratelimit/bucket.py:12``, ``bucket.py:12-30``, ``bucket.py#L12``);
* in fenced code, every identifier shaped like a name (a local variable of an example is no
  claim unless the code defines it: see ``Mention.strong``).

Each mention belongs to a sentence; the sentence's literal values (numbers, flags, quoted
strings) are what the claim check looks for in the code the sentence cites. This module
reads text only; resolving a mention against the code is pipeline.grounding.claims.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pipeline.formats.prose import MASK, Block, parse_prose
from pipeline.formats.textio import split_lines
from pipeline.settings import data_dir, load_toml
from pipeline.validation import toml_locator, toml_name, validated

MentionKind = Literal["symbol", "path", "location"]

IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\(\))?$")
PATH_RE = re.compile(r"^[\w.\-]+(?:/[\w.\-]+)*/?$")
SOURCE_EXT = (".py", ".md", ".toml", ".json", ".yaml", ".yml", ".txt", ".cfg", ".ini", ".sql", ".lua", ".sh")
LOCATION_RE = re.compile(
    r"^(?P<path>[\w.\-]+(?:/[\w.\-]+)*\.\w+)(?::|#L)(?P<first>\d+)(?:-L?(?P<last>\d+))?$"
)
WORD_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
FENCE_NAME_RE = re.compile(r"(?<![\w.$])[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\(\))?")
SENTENCE_END_RE = re.compile(r"(?<=[.!?;])[\"”’)]?\s+(?=[A-Z0-9\"“(\[*" + MASK + r"])")
ABBREVIATIONS = ("e.g.", "i.e.", "vs.", "cf.", "etc.")
NUMBER_RE = re.compile(r"(?<![\w.\-/:§#$@" + MASK + r"])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w\-/:%]|\.\d)")
CODE_NUMBER_RE = re.compile(r"^-?(\d[\d_,]*)(\.\d+)?$")
FLAG_RE = re.compile(r"^--?[A-Za-z][\w\-]*(?:=\S+)?$")
STRING_RE = re.compile(r"^([\"'])(.+)\1$")
YEAR_RE = re.compile(r"^(19|20)\d\d$")


@dataclass(frozen=True, slots=True)
class ClaimRules:
    units: frozenset[str]
    documents: tuple[str, ...]
    examples: tuple[str, ...]
    max_file_bytes: int
    rules: dict[str, tuple[str, str]]
    """rule id -> (severity, summary)"""
    docstrings: dict[str, frozenset[str]]
    """Per language: statement types that hold only a string are documentation."""
    wrappers: dict[str, frozenset[str]]
    """Per language: a parent of these types is part of the definition (a decorator)."""


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class ClaimRuleSpec(_Spec):
    """One ``[rules.<id>]`` table: a claim or drift rule."""

    severity: Literal["should-fix", "suggestion"]
    summary: str = Field(min_length=1)


class FingerprintSpec(_Spec):
    """``[fingerprint]``: per language, the node types a span's fingerprint reads differently."""

    docstrings: dict[str, list[str]] = {}
    wrappers: dict[str, list[str]] = {}


class ClaimsFile(_Spec):
    """params/claims.toml."""

    units: list[str]
    documents: list[str]
    examples: list[str] = []
    max_file_bytes: int = Field(gt=0)
    rules: dict[str, ClaimRuleSpec]
    fingerprint: FingerprintSpec = FingerprintSpec()


def load_claim_rules(path: Path) -> ClaimRules:
    """The claims table at ``path``, validated (a bad one: InputError at the offending key)."""
    hint = "reinstall designloop, or restore the file (docs/formats.md §11 says what each key means)"
    spec = validated(ClaimsFile, load_toml(path), path, hint, locate=toml_locator(path), name=toml_name)
    return ClaimRules(
        units=frozenset(u.lower() for u in spec.units),
        documents=tuple(spec.documents),
        examples=tuple(e.lower() for e in spec.examples),
        max_file_bytes=spec.max_file_bytes,
        rules={k: (v.severity, v.summary) for k, v in spec.rules.items()},
        docstrings={k: frozenset(v) for k, v in spec.fingerprint.docstrings.items()},
        wrappers={k: frozenset(v) for k, v in spec.fingerprint.wrappers.items()},
    )


@cache
def claim_rules() -> ClaimRules:
    return load_claim_rules(data_dir("params") / "claims.toml")


def looks_like_symbol(span: str) -> bool:
    """A name no prose word looks like: dotted, with an underscore, a call, or camelCase."""
    if not IDENT_RE.match(span):
        return False
    bare = span.removesuffix("()")
    return (
        "." in bare
        or "_" in bare.strip("_")
        or span.endswith("()")
        or (any(c.isupper() for c in bare[1:]) and any(c.islower() for c in bare))
    )


def looks_like_path(span: str) -> bool:
    return (
        bool(PATH_RE.match(span)) and ("/" in span or span.endswith(SOURCE_EXT)) and not span.startswith("/")
    )


@dataclass(frozen=True, slots=True)
class LiteralValue:
    """A value a sentence quotes: ``number`` (compared by value), ``flag`` or ``string``."""

    kind: Literal["number", "flag", "string"]
    text: str
    """Exactly as the line writes it (``1,000``, ``--force``, ``"rl:"``)."""
    value: str
    """What the code must hold: the number normalised (``1000``), the flag, the string's content."""
    line: int = 0


@dataclass(frozen=True, slots=True)
class Mention:
    """One place a design names the code."""

    text: str
    """The name, path or location as written, without backticks (``Bucket.take``)."""
    kind: MentionKind
    line: int
    column: int
    """0-based column of the name in its line."""
    fenced: bool
    strong: bool
    """Shaped so that no prose word or example variable looks like it (a location, a path to a
    file, a dotted, underscored, called or camelCase name in prose): a strong mention that
    resolves to nothing is a finding; a weak one (``Clock``, a name in fenced code) is a claim
    only when it resolves."""
    quote: str
    """Its sentence's text on ``line``, exactly as the line has it."""
    sentence: int
    """Which sentence of the document it belongs to (mentions of one sentence share literals)."""


@dataclass(slots=True)
class Claims:
    """What one design file names of the code, sentence by sentence."""

    mentions: list[Mention] = field(default_factory=list)
    literals: dict[int, tuple[LiteralValue, ...]] = field(default_factory=dict)
    """Each sentence's literal values, by sentence index."""


def _number(digits: str, fraction: str | None) -> str:
    whole = digits.replace(",", "").replace("_", "").lstrip("0") or "0"
    frac = (fraction or "").rstrip("0").rstrip(".")
    return whole + (frac if frac not in ("", ".") else "")


def code_literal(span: str, line: int = 0) -> LiteralValue | None:
    """The literal a code span quotes, if it is one: a number, a flag or a quoted string."""
    written = span
    if m := CODE_NUMBER_RE.match(span):
        value = ("-" if span.startswith("-") else "") + _number(m[1], m[2])
        return LiteralValue("number", written, value, line)
    if FLAG_RE.match(span):
        return LiteralValue("flag", written, span.split("=", 1)[0], line)
    if m := STRING_RE.match(span):
        return LiteralValue("string", written, m[2], line)
    return None


def prose_numbers(block: Block, start: int, end: int) -> list[LiteralValue]:
    """The numbers a sentence's prose states, but for years and quantities in a unit."""
    units = claim_rules().units
    prose = block.prose[start:end]
    out: list[LiteralValue] = []
    for m in NUMBER_RE.finditer(prose):
        after = prose[m.end() :].lstrip(" \u00a0")
        unit = re.match(r"[A-Za-zµ%]+", after)
        if unit and unit.group(0).lower() in units:
            continue
        if YEAR_RE.match(m[0]) and not m[2]:
            continue
        text = block.text[start + m.start() : start + m.end()]
        out.append(LiteralValue("number", text, _number(m[1], m[2]), block.line_at(start + m.start())))
    return out


def mention_of(span: str) -> tuple[MentionKind, bool] | None:
    """What a prose code span names (kind, strong), or None when it names no code."""
    if LOCATION_RE.match(span):
        return "location", True
    if looks_like_path(span) and not looks_like_symbol(span):
        return "path", span.endswith("/") or "." in span.rsplit("/", 1)[-1]
    if looks_like_symbol(span):
        return "symbol", True
    if WORD_NAME_RE.match(span) and len(span) > 1:
        return "symbol", False
    return None


def _sentences(block: Block) -> list[tuple[int, int]]:
    """The sentences of a block as (start, end) offsets into its text."""
    out: list[tuple[int, int]] = []
    start = 0
    for m in SENTENCE_END_RE.finditer(block.prose):
        head = block.prose[start : m.start()]
        if head.endswith(ABBREVIATIONS):
            continue
        out.append((start, m.start()))
        start = m.end()
    out.append((start, len(block.text)))
    return out


def _line_quote(block: Block, start: int, end: int, at: int) -> str:
    """The part of text[start:end] on the source line of offset ``at``, trimmed: exact text."""
    text = block.text
    line_start = text.rfind("\n", 0, at) + 1
    line_end = text.find("\n", at)
    line_end = len(text) if line_end < 0 else line_end
    piece = text[max(start, line_start) : min(end, line_end)]
    return piece.strip()


def _prose_claims(block: Block, claims: Claims, sentence: int) -> int:
    """The block's mentions and each sentence's literals; returns the next sentence index."""
    for start, end in _sentences(block):
        literals: list[LiteralValue] = prose_numbers(block, start, end)
        for a, b in block.code:
            if not (start <= a < end):
                continue
            span = block.text[a:b]
            literal = code_literal(span.strip(), block.line_at(a))
            if literal is not None:
                literals.append(literal)
                continue
            shape = mention_of(span.strip())
            if shape is None:
                continue
            line, column = block.locate(a)
            kind, strong = shape
            claims.mentions.append(
                Mention(
                    span.strip(),
                    kind,
                    line,
                    column,
                    False,
                    strong,
                    _line_quote(block, start, end, a),
                    sentence,
                )
            )
        if literals:
            claims.literals[sentence] = tuple(literals)
        sentence += 1
    return sentence


def extract_claims(text: str, lines: list[str] | None = None) -> Claims:
    """Every mention of the code in a design document, in document order."""
    lines = split_lines(text) if lines is None else lines
    view = parse_prose(text, lines)
    claims = Claims()
    sentence = 0
    for block in view.blocks:
        sentence = _prose_claims(block, claims, sentence)
    for region in view.code:
        first = (
            region.start + 1 if lines[region.start - 1].lstrip().startswith(("```", "~~~")) else region.start
        )
        for number in range(first, region.end + 1):
            source = lines[number - 1] if number - 1 < len(lines) else ""
            if source.lstrip().startswith(("```", "~~~")):
                continue
            for m in FENCE_NAME_RE.finditer(source):
                name = m.group(0).removesuffix("()")
                if not (looks_like_symbol(name) or (name[:1].isupper() and len(name) > 1)):
                    continue
                claims.mentions.append(
                    Mention(name, "symbol", number, m.start(), True, False, source.strip(), sentence)
                )
            sentence += 1
    claims.mentions.sort(key=lambda m: (m.line, m.column))
    return claims
