"""Inline suppression, as markdownlint and Vale do it in Markdown: HTML comments that turn rules
off for a block, a line, the next line or the whole file.

    <!-- designloop-disable dsc-section-length -->      off from here ...
    <!-- designloop-enable dsc-section-length -->       ... to here (or the end of the file)
    <!-- designloop-disable-line dsc-reverse-ref -->    off on this line
    <!-- designloop-disable-next-line dsc-reverse-ref -->  off on the next line
    <!-- designloop-disable-file dsc-top-level-cap -->  off in the whole file

Rules are named by id, family or prefix (as in ``select``), separated by spaces or commas; no
rule means every rule. A comment inside code is an example, not a directive. An unknown rule is
bad input at the comment's line; a comment that suppresses nothing is itself a finding
(``dl-unused-suppression``), as ruff reports an unused ``noqa``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from pipeline.checks.registry import Registry
from pipeline.formats.findings import Finding

DIRECTIVE_RE = re.compile(
    r"<!--\s*designloop-(?P<kind>disable-next-line|disable-line|disable-file|disable|enable)\b"
    r"(?P<rules>[^>]*?)\s*-->"
)
UNUSED = "dl-unused-suppression"


@dataclass(slots=True)
class Directive:
    kind: str
    line: int
    quote: str
    rules: frozenset[str] | None
    """None: every rule."""
    used: bool = False

    def names(self, rule_id: str) -> bool:
        return self.rules is None or rule_id in self.rules


@dataclass(slots=True)
class Span:
    directive: Directive
    start: int
    end: int | None
    """None: to the end of the file (and findings with no line, for a file directive)."""
    rules: frozenset[str] | None
    excluded: frozenset[str] = frozenset()
    """Rules an ``enable`` turned back on inside a block that named every rule."""

    def covers(self, rule_id: str, line: int | None) -> bool:
        if (self.rules is not None and rule_id not in self.rules) or rule_id in self.excluded:
            return False
        if line is None:
            return self.directive.kind == "disable-file"
        return self.start <= line and (self.end is None or line <= self.end)


@dataclass(slots=True)
class Suppressions:
    path: str
    directives: list[Directive] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)

    def suppresses(self, finding: Finding) -> bool:
        """Whether a directive turns ``finding`` off (each that does is marked used)."""
        hit = False
        for span in self.spans:
            if span.covers(finding.rule, finding.line):
                span.directive.used = True
                hit = True
        return hit


def _rules(text: str, known: Registry, path: str, line: int) -> frozenset[str] | None:
    names = [n for n in re.split(r"[,\s]+", text.strip()) if n]
    if not names:
        return None
    out: set[str] = set()
    for name in names:
        out |= known.expand(name, path, line)
    return frozenset(out)


def parse_suppressions(
    path: str, lines: list[str], in_code: Callable[[int], bool], known: Registry
) -> Suppressions:
    """Every directive of a file's lines (outside code), as the spans it turns rules off in."""
    found = Suppressions(path)
    open_spans: list[Span] = []
    for number, text in enumerate(lines, 1):
        if "designloop-" not in text or in_code(number):
            continue
        for match in DIRECTIVE_RE.finditer(text):
            kind = match.group("kind")
            rules = _rules(match.group("rules"), known, path, number)
            if kind == "enable":
                open_spans = _enable(open_spans, rules, number, found)
                continue
            directive = Directive(kind, number, match.group(0), rules)
            found.directives.append(directive)
            if kind == "disable":
                span = Span(directive, number, None, rules)
                open_spans.append(span)
            elif kind == "disable-line":
                span = Span(directive, number, number, rules)
            elif kind == "disable-next-line":
                span = Span(directive, number + 1, number + 1, rules)
            else:
                span = Span(directive, 1, None, rules)
            found.spans.append(span)
    return found


def _enable(
    open_spans: list[Span], rules: frozenset[str] | None, line: int, found: Suppressions
) -> list[Span]:
    """Close the open blocks ``enable`` names; a block of more rules goes on for the others."""
    still: list[Span] = []
    for span in open_spans:
        if rules is not None and span.rules is not None and not span.rules & rules:
            still.append(span)
            continue
        span.end = line
        if rules is None:
            continue
        # `enable A` inside `disable` (every rule) or `disable A B`: the rest stays off.
        rest = None
        if span.rules is None:
            rest = Span(span.directive, line + 1, None, None, span.excluded | rules)
        elif span.rules - rules:
            rest = Span(span.directive, line + 1, None, span.rules - rules)
        if rest is not None:
            still.append(rest)
            found.spans.append(rest)
    return still


def unused(suppressions: Suppressions, make: Callable[[Directive], Finding | None]) -> list[Finding]:
    """A finding for each directive that suppressed nothing (``make`` returns None where the
    unused-suppression rule is not selected)."""
    out: list[Finding] = []
    for directive in suppressions.directives:
        if not directive.used:
            made = make(directive)
            if made is not None:
                out.append(made)
    return out
