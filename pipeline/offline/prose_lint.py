"""proselint's catalogue (clichés, redundancy, lexical illusions ...) as suggestion-level findings.

The house-style rules decide what blocks a round; proselint adds a maintained, broad
catalogue on top, reported as suggestions only, so it never holds a round open. Only the
checks listed in params/offline.toml (``proselint_checks``) run: typography rules, "But" at
the start of a paragraph and preferred spellings fire on ordinary technical Markdown and do
not suit design documents. proselint reads the prose view with every non-prose character
blanked, so offsets map back to an exact line and column.
"""

from __future__ import annotations

import re
from functools import cache

from pipeline.formats.findings import Finding
from pipeline.formats.prose import MASK, Block, ProseView
from pipeline.offline.deadline import checkpoint
from pipeline.offline.text import lexicon, review_finding, words

BLANK = "·"


@cache
def _ready() -> bool:
    try:
        import proselint.checks
        from proselint.registry import CheckRegistry
    except ImportError:  # pragma: no cover - proselint is a dependency
        return False
    registry = CheckRegistry()
    if not registry.checks:
        registry.register_many(proselint.checks.__register__)
    return True


def _wanted(path: str) -> bool:
    return any(path == p or path.startswith(p + ".") for p in lexicon().proselint_checks)


DIGITS_RE = re.compile(r"[\d\s]+")
LINE_RE = re.compile(r"[^\n]++")


def _code_like(line: str) -> bool:
    """A line with words and no stopword among them reads as a list of names, types or
    identifiers ("unsigned long long", "DOMString name", a row of a table of signatures), not
    as a sentence: proselint's "long long" is WebIDL's type there, not a lexical illusion."""
    found = words(line)
    stop = lexicon().stopwords
    return bool(found) and not any(word.lower() in stop for word in found)


def _sentences_only(text: str) -> str:
    """``text`` with each code-like line blanked (same length, so offsets still hold)."""
    return LINE_RE.sub(lambda m: BLANK * len(m.group(0)) if _code_like(m.group(0)) else m.group(0), text)


def _not_a_repeat(path: str, text: str, start: int, end: int) -> bool:
    """A "repeated word" that is not one: a group of digits ("100 000 msat"), or a first word
    that is the tail of a dotted or code name ("Each torch.package package")."""
    if not path.endswith("lexical_illusions"):
        return False
    before = text[start - 1] if start > 0 else " "
    return bool(DIGITS_RE.fullmatch(text[start:end])) or before.isalnum() or before in "._/:-"


REPEAT_RE = re.compile(r"(?<!\w)(\w++)[ \t]++\1(?!\w)", re.IGNORECASE)


def _named_repeats(view: ProseView) -> set[str]:
    """Doubled words the document writes as names: in its code, or in a code-like line
    ("unsigned long long" in a list of types). Written in a sentence, they are the same name."""
    named = {" ".join(m.group(0).lower().split()) for m in REPEAT_RE.finditer(view.code_text())}
    for block in view.blocks:
        for line in LINE_RE.findall(block.prose.replace(MASK, BLANK)):
            if _code_like(line):
                named |= {" ".join(m.group(0).lower().split()) for m in REPEAT_RE.finditer(line)}
    return named


def lint(view: ProseView, blocks: list[Block]) -> list[Finding]:
    if not _ready():
        return []
    named = _named_repeats(view)
    from proselint.config import DEFAULT
    from proselint.tools import LintFile

    out: list[Finding] = []
    for block in blocks:
        checkpoint()
        text = _sentences_only(block.prose.replace(MASK, BLANK))
        if not text.strip(" \n" + BLANK):
            continue
        for result in LintFile("<prose>", text).lint(DEFAULT):
            check = result.check_result
            if not _wanted(check.check_path):
                continue
            # LintFile pads the text with a newline on each side.
            start, end = check.span[0] - 1, check.span[1] - 1
            if start < 0 or end > len(text) or BLANK in text[start:end]:
                continue
            quote = block.quote(start, end)
            if not quote.strip() or _not_a_repeat(check.check_path, text, start, end):
                continue
            if check.check_path.endswith("lexical_illusions") and " ".join(quote.lower().split()) in named:
                continue
            line = block.line_at(start + len(block.text[start:end]) - len(block.text[start:end].lstrip()))
            fix = f"consider '{check.replacements}'" if check.replacements else check.message
            out.append(
                review_finding(
                    f"proselint/{check.check_path}",
                    check.message,
                    fix,
                    severity="suggestion",
                    section=view.section_at(line),
                    line=line,
                    quote=quote,
                )
            )
    return out
