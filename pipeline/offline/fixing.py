"""What every deterministic fix shares: one parse of the document, edits located by line and
column, and the rule that a fix capitalises only a plain word (offline.fixer)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from pipeline.formats.design_doc import DesignDoc
from pipeline.formats.findings import Finding
from pipeline.formats.prose import Block, ProseView
from pipeline.offline import acronyms
from pipeline.offline.edits import EditSet
from pipeline.offline.text import HouseRule

PLAIN_WORD_RE = re.compile(r"[a-z]+(?:[-'’][a-z]+)*(?=[\s,;:.!?)]|$)")
"""A plain lower-case word: the only kind a fix may capitalise (never "iOS", "gRPC", `code`)."""


@dataclass(slots=True)
class Context:
    doc: DesignDoc
    view: ProseView
    rules: dict[str, HouseRule]
    lexicon: acronyms.Lexicon
    edits: EditSet
    done: dict[tuple[str, str], bool] = field(default_factory=dict)
    """Fixes that act on every use of a term, by (rule, term): the first finding fixes them
    all, so many findings of one term cost one pass over the document."""


Fixer = Callable[[Context, Finding], bool]


def replace(ctx: Context, block: Block, start: int, end: int, text: str) -> bool:
    """Replace ``block.text[start:end]``, which must lie on one source line."""
    if "\n" in block.text[start:end]:
        return False
    line, col = block.locate(start)
    return ctx.edits.replace(line, col, col + end - start, text)


def may_capitalise(text: str, at: int) -> bool:
    """Whether the word at ``at`` may open a sentence as it is or with a capital: a plain word
    or one that already starts with a capital; never "iOS", "gRPC" or "kOps"."""
    first = text[at : at + 1]
    return first == first.upper() or bool(PLAIN_WORD_RE.match(text, at))


def flagged_block(ctx: Context, f: Finding) -> tuple[Block, int] | None:
    """The block and offset where a finding's quote sits on its line."""
    line, quote = f.line, (f.quote or "").strip()
    if not isinstance(line, int) or not quote:
        return None
    for block in ctx.view.blocks:
        if block.start <= line <= block.end:
            index = line - block.start
            at = block.text.find(quote, block.starts[index])
            if at >= 0:
                return block, at
    return None
