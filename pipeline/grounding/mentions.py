"""The places a design names the code: claim mentions, the sentences they belong to and the
values those sentences quote.

A design document (design.md, its companion, design-final.md and its companion) claims
something of the code wherever it names a code symbol, a path, a configuration entry or a place
in a file:

* in prose, an inline code span shaped like a name (``TokenBucket.take``, ``refill_rate``,
  ``take()``, ``MAX_TOKENS``, or a bare ``Clock``), a path (``ratelimit/bucket.py``,
  ``src/``), a configuration entry (``services.postgres``, ``[tool.ruff].line-length``) or a
  location (``ratelimit/bucket.py:12``, ``bucket.py:12-30``, ``bucket.py#L12``);
* in prose without backticks, a word whose shape says code (``SegmentIterator``,
  ``refill_rate``, ``Bucket.take``, ``take()``, ``src/bucket.py``): a claim when the code has
  it, never a finding when it does not (prose names products too);
* in fenced code, every identifier shaped like a name (a local variable of an example is no
  claim unless the code defines it: see ``Mention.strong``).

A name the sentence gives as an example (after "for example") or as an alternative the design
rejected or replaced (after "instead of", or anywhere in a decision record's
``**Alternatives rejected:**``) claims nothing exists: its ``role`` says so.

Each mention belongs to a sentence; the sentence's literal values (numbers, flags, quoted
strings) are what the claim check looks for in the code the sentence cites. This module
reads text only; resolving a mention against the code is pipeline.grounding.claims.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from pipeline.formats.prose import MASK, Block, parse_prose
from pipeline.formats.textio import split_lines
from pipeline.grounding.rules import claim_rules

MentionKind = Literal["symbol", "path", "location"]
MentionRole = Literal["claim", "example", "alternative"]

IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\(\))?$")
CONFIG_RE = re.compile(
    r"^(?:\[(?P<table>[\w\-]+(?:\.[\w\-]+)*)\](?:\.(?P<key>[\w\-]+(?:\.[\w\-]+)*))?|[\w\-]+(?:\.[\w\-]+)+)$"
)
"""A configuration entry: ``[tool.ruff]``, ``[tool.ruff].line-length``, ``services.my-db``."""
PATH_RE = re.compile(r"^[\w.\-]+(?:/[\w.\-]+)*/?$")
SOURCE_EXT = (
    ".py", ".pyi", ".md", ".toml", ".json", ".yaml", ".yml", ".txt", ".cfg", ".ini", ".sql", ".lua",
    ".sh", ".ts", ".tsx", ".js", ".mjs", ".cjs", ".jsx", ".rs", ".go", ".java", ".kt", ".rb", ".c",
    ".h", ".cc", ".cpp", ".hpp", ".cs", ".swift", ".scala", ".php", ".env", ".proto", ".graphql",
)  # fmt: skip
LOCATION_RE = re.compile(
    r"^(?P<path>[\w.\-]+(?:/[\w.\-]+)*\.\w+)(?::|#L)(?P<first>\d+)(?:-L?(?P<last>\d+))?$"
)
WORD_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
FENCE_NAME_RE = re.compile(r"(?<![\w.$])[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\(\))?")
PROSE_NAME_RE = re.compile(
    r"(?<![\w.$@/\\\-'’])(?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(?P<call>\(\))?"
    r"(?![\w$/\\\-]|\.[A-Za-z_])"
)
PROSE_PATH_RE = re.compile(r"(?<![\w/.\-])(?:[\w.\-]+/)+[\w.\-]*(?<![.\-])")
SENTENCE_END_RE = re.compile(r"(?<=[.!?;])[\"”’)]?\s+(?=[A-Z0-9\"“(\[*" + MASK + r"])")
ABBREVIATIONS = ("e.g.", "i.e.", "vs.", "cf.", "etc.")
NUMBER_RE = re.compile(r"(?<![\w.\-/:§#$@" + MASK + r"])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w\-/:%]|\.\d)")
CODE_NUMBER_RE = re.compile(r"^-?(\d[\d_,]*)(\.\d+)?$")
FLAG_RE = re.compile(r"^--?[A-Za-z][\w\-]*(?:=\S+)?$")
STRING_RE = re.compile(r"^([\"'])(.+)\1$")
PROSE_STRING_RE = re.compile(r"[\"“](?P<value>[^\s\"“”" + MASK + r"]{1,60})[\"”]")
"""A one-token value a sentence quotes in prose (``set to "Unknown"``)."""
YEAR_RE = re.compile(r"^(19|20)\d\d$")
FIELD_RE = re.compile(r"(?m)^\s*\*\*(?P<label>[^*\n]+?):\*\*|^\s*(?P<plain>[A-Z][\w ]+?):\s")
"""A decision record's field label at a line's start (``**Alternatives rejected:**``), or a
paragraph's opening label (``Rejected alternatives: ...``)."""
JOIN_RE = re.compile(r"^\s*(?:,|/|,?\s*or|,?\s*nor|and)?\s*(?:the\s+|a\s+|an\s+)?$")
"""What stands between two names of one list (``A``, ``B`` or ``C``; ``A`` and ``B``): a
clause's ", and" starts a new one."""


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


def config_name(span: str) -> str | None:
    """The dotted path of a configuration entry as a design writes it (``[tool.ruff].line-length``
    is ``tool.ruff.line-length``), or None when the span is not shaped like one."""
    m = CONFIG_RE.match(span)
    if m is None or (m["table"] is None and "-" not in span):
        return None
    if m["table"] is not None:
        return m["table"] + (f".{m['key']}" if m["key"] else "")
    return span


def query_of(text: str) -> str:
    """What to look a mention up by: a call's name, a configuration entry's dotted path."""
    return config_name(text) or text.removesuffix("()")


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
    file, a dotted, underscored, called or camelCase name in inline code): a strong mention that
    resolves to nothing is a finding; a weak one (``Clock``, a name in fenced code, a name in
    prose without backticks) is a claim only when it resolves."""
    quote: str
    """Its sentence's text on ``line``, exactly as the line has it."""
    sentence: int
    """Which sentence of the document it belongs to (mentions of one sentence share literals)."""
    prose: bool = False
    """Found in prose without backticks, by its shape."""
    role: MentionRole = "claim"
    """``example`` (after "for example") and ``alternative`` (rejected or replaced) claim
    nothing exists: neither is a finding when it resolves to nothing."""

    @property
    def query(self) -> str:
        return query_of(self.text)


@dataclass(frozen=True, slots=True)
class Sentence:
    """One sentence of the document, where it starts and its words on that line."""

    index: int
    line: int
    last: int
    quote: str
    """Its text on its first line, exactly as the line has it."""
    heading: bool = False


@dataclass(slots=True)
class Claims:
    """What one design file names of the code, sentence by sentence."""

    mentions: list[Mention] = field(default_factory=list)
    literals: dict[int, tuple[LiteralValue, ...]] = field(default_factory=dict)
    """Each sentence's literal values, by sentence index."""
    sentences: list[Sentence] = field(default_factory=list)
    """Every sentence of the prose (fenced code aside), in document order."""


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


def prose_literals(block: Block, start: int, end: int) -> list[LiteralValue]:
    """The numbers a sentence's prose states (but years and quantities in a unit) and the
    one-token values it quotes (``"Unknown"``)."""
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
    for m in PROSE_STRING_RE.finditer(prose):
        text = block.text[start + m.start() : start + m.end()]
        out.append(LiteralValue("string", text, m["value"], block.line_at(start + m.start())))
    return out


def mention_of(span: str) -> tuple[MentionKind, bool] | None:
    """What a prose code span names (kind, strong), or None when it names no code."""
    if LOCATION_RE.match(span):
        return "location", True
    if looks_like_path(span) and not looks_like_symbol(span):
        return "path", span.endswith("/") or "." in span.rsplit("/", 1)[-1]
    if looks_like_symbol(span):
        return "symbol", True
    if config_name(span) is not None:
        return "symbol", span.startswith("[")
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


def _rejected(block: Block) -> list[tuple[int, int]]:
    """Offsets of the block's fields that list rejected alternatives (``**Alternatives
    rejected:** ...`` up to the next field, or a paragraph opening ``Rejected alternatives:``)."""
    wanted = claim_rules().rejected_fields
    labels = list(FIELD_RE.finditer(block.text))
    out: list[tuple[int, int]] = []
    for m, after in zip(labels, [*labels[1:], None], strict=False):
        label = (m["label"] or m["plain"] or "").strip().lower()
        if m["plain"] is not None and m.start() != 0:
            continue  # a plain label counts only at the paragraph's start
        if label in wanted:
            out.append((m.end(), after.start() if after is not None else len(block.text)))
    return out


def _role(block: Block, start: int, at: int, previous: tuple[int, MentionRole] | None) -> MentionRole:
    """An example (after "for example" in its sentence), an alternative (right after "instead
    of", or listed with one), else a claim."""
    rules = claim_rules()
    before = block.prose[start:at].lower()
    between = block.prose[previous[0] : at].replace(MASK, "") if previous is not None else ""
    if previous is not None and previous[1] != "claim" and JOIN_RE.match(between):
        return previous[1]
    tail = before.rstrip().rstrip(MASK).rstrip()
    tail = re.sub(r"(?:\b(?:the|a|an|its|their)\s*)$", "", tail).rstrip()
    if any(re.search(rf"(?<!\w){re.escape(w)}$", tail) for w in rules.replaced):
        return "alternative"
    if any(re.search(rf"(?<!\w){re.escape(w)}(?!\w)", before) for w in rules.examples):
        return "example"
    return "claim"


def _prose_names(block: Block, start: int, end: int) -> list[tuple[int, int, MentionKind]]:
    """Names and paths in the sentence's prose (outside code spans) whose shape says code:
    (start, end, kind)."""
    prose = block.prose[start:end]
    found: list[tuple[int, int, MentionKind]] = []
    for m in PROSE_PATH_RE.finditer(prose):
        text = m.group(0)
        if text.endswith("/") or looks_like_path(text):
            found.append((start + m.start(), start + m.end(), "path"))
    taken = [(a, b) for a, b, _ in found]
    for m in PROSE_NAME_RE.finditer(prose):
        a, b = start + m.start(), start + m.end()
        name = m["name"] + (m["call"] or "")
        if any(x <= a < y for x, y in taken) or all(len(part) == 1 for part in m["name"].split(".")):
            continue  # inside a path, or an abbreviation (e.g, i.e)
        if looks_like_symbol(name) and not (name.isupper() and "_" not in name):
            found.append((a, b, "symbol"))
    return sorted(found)


def _candidates(block: Block, start: int, end: int) -> list[tuple[int, int, bool]]:
    """The sentence's inline code spans and its prose names, in order: (start, end, in prose)."""
    spans = [(a, b, False) for a, b in block.code if start <= a < end]
    spans += [(a, b, True) for a, b, _ in _prose_names(block, start, end)]
    return sorted(spans)


def _prose_shape(span: str) -> tuple[MentionKind, bool]:
    """A name found in prose without backticks: a path or a symbol, never strong."""
    return ("path" if "/" in span else "symbol"), False


def _prose_claims(block: Block, claims: Claims, sentence: int) -> int:
    """The block's mentions and each sentence's literals; returns the next sentence index."""
    rejected = _rejected(block)
    for start, end in _sentences(block):
        literals: list[LiteralValue] = prose_literals(block, start, end)
        first, last = block.line_at(start), block.line_at(max(start, end - 1))
        quote = _line_quote(block, start, end, start)
        claims.sentences.append(Sentence(sentence, first, last, quote, block.kind == "heading"))
        previous: tuple[int, MentionRole] | None = None
        for a, b, in_prose in _candidates(block, start, end):
            span = block.text[a:b].strip()
            literal = None if in_prose else code_literal(span, block.line_at(a))
            if literal is not None:
                literals.append(literal)
                continue
            shape = _prose_shape(span) if in_prose else mention_of(span)
            if shape is None:
                continue
            line, column = block.locate(a)
            kind, strong = shape
            role: MentionRole = (
                "alternative" if any(x <= a < y for x, y in rejected) else _role(block, start, a, previous)
            )
            previous = (b, role)
            quote = _line_quote(block, start, end, a)
            claims.mentions.append(
                Mention(span, kind, line, column, False, strong, quote, sentence, in_prose, role)
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
