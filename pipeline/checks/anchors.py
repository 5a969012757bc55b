"""Links inside a document: a ``[text](#fragment)`` whose fragment names no heading and no
anchor of the same document leads its reader nowhere (markdownlint's MD051). It holds for any
design document, whoever wrote it.

A heading's anchor is the one GitHub gives it (github-slugger): its text as rendered,
lower-cased, punctuation dropped but for ``-`` and ``_``, each space a ``-``, and ``-1``,
``-2`` ... after a name already taken. An explicit anchor (``<a name="x">``, ``id="x"``, a
``{#x}`` attribute) counts too. Fragments are compared without case and percent-decoded.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import unquote

from markdown_it import MarkdownIt
from markdown_it.token import Token

from pipeline.checks.context import CheckContext, rule
from pipeline.formats.design_doc import DesignDoc

EXPLICIT_RE = re.compile(r"""(?:\bname|\bid)\s*=\s*["']([^"']+)["']|\{#([\w:.\-]+)[^}]*\}""")


def slug(text: str) -> str:
    """GitHub's anchor for a heading's rendered text."""
    out = []
    for ch in text.lower():
        if ch in " -_" or unicodedata.category(ch)[0] in "LNM":
            out.append("-" if ch == " " else ch)
    return "".join(out)


def _plain(token: Token) -> str:
    """A heading's inline content as rendered text (code, emphasis and links reduced to words)."""
    parts: list[str] = []
    for child in token.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type == "softbreak":
            parts.append(" ")
        elif child.type == "image":
            parts.append(child.content)
    return "".join(parts).strip()


def anchors(doc: DesignDoc) -> tuple[set[str], list[tuple[int, str, str]]]:
    """Every anchor the document defines (lower-cased), and each ``#fragment`` link it makes
    (line, fragment, the link's source text)."""
    tokens = MarkdownIt("commonmark").enable("table").parse(doc.file.text)
    taken: dict[str, int] = {}
    defined: set[str] = set()
    links: list[tuple[int, str, str]] = []
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and index + 1 < len(tokens):
            base = slug(re.sub(r"\s*\{#[^}]*\}\s*$", "", _plain(tokens[index + 1])))
            count = taken.get(base, 0)
            taken[base] = count + 1
            defined.add(base if count == 0 else f"{base}-{count}")
        if token.type in ("html_block", "html_inline", "inline"):
            for match in EXPLICIT_RE.finditer(token.content):
                defined.add((match.group(1) or match.group(2)).lower())
        if token.type == "inline" and token.map is not None:
            links += _links(token, token.map[0] + 1)
    return defined, links


def _links(inline: Token, first_line: int) -> list[tuple[int, str, str]]:
    out: list[tuple[int, str, str]] = []
    line = first_line
    for child in inline.children or []:
        if child.type in ("softbreak", "hardbreak"):
            line += 1
        elif child.type == "link_open":
            href = str(child.attrs.get("href", ""))
            if href.startswith("#") and len(href) > 1:
                out.append((line, href[1:], href))
    return out


@rule("dsc-broken-anchor")
def broken_anchor(ctx: CheckContext) -> None:
    for doc in ctx.targets():
        defined, links = anchors(doc)
        for line, fragment, href in links:
            if unquote(fragment).lower() in defined:
                continue
            close = sorted(defined, key=lambda name: -_similar(name, unquote(fragment).lower()))[:1]
            hint = (
                f"point it at #{close[0]}"
                if close and _similar(close[0], fragment.lower()) > 0.6
                else ("point it at a heading of this document, or drop the link")
            )
            ctx.add(
                "dsc-broken-anchor",
                doc.path,
                line,
                doc.section_name_at(line),
                f"the link {href} leads to no heading or anchor of this document",
                hint,
                quote=href if href in doc.lines[line - 1] else None,
            )


def _similar(a: str, b: str) -> float:
    import difflib

    return difflib.SequenceMatcher(None, a, b).ratio()
