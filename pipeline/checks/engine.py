"""The mechanical checks of formats.md §6: one function per rule in params/rules.toml."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pipeline.checks.table import Rule, rule_table
from pipeline.errors import InputError, WiringError
from pipeline.formats.design_doc import (
    FOOTER_PREFIX,
    OVERVIEW,
    STAMP_LIKE_RE,
    STAMP_RE,
    DesignDoc,
    Section,
    load_design,
)
from pipeline.formats.findings import Finding, Fix, sort_findings
from pipeline.formats.plan import PlanFile, load_plan_file, load_tracks
from pipeline.settings import Limits

Target = Literal["design", "mechanics", "both"]
Scope = Literal["bounded", "whole-doc"]
UNSTAMPED_BY_CONTRACT = ("design-final.md", "design-mechanics-final.md", "design-mutations.md")

CODE = r"[A-Z]{1,3}\d+(?:\.\d+)*[a-z]?"
SECTION_REF = r'§\s*(?:"[^"]+"|[\w.\-]+(?:\s+[\w.\-]+)*)'
ITEM = rf"(?:(?:per|see(?:\s+also)?|cf\.?|also|ref\.?|via)\s+)?(?:{CODE}|{SECTION_REF})"
ASIDE_RE = re.compile(rf"^\s*{ITEM}(?:\s*(?:,|;|/|&|\band\b)\s*{ITEM})*\s*$")
PAREN_RE = re.compile(r"\(([^()\n]*)\)")
CODE_SPAN_RE = re.compile(r"(`+)(?:(?!\1).)+?\1")
REVERSE_RE = re.compile(
    r"(?:implementation-plan\.md|(?<![\w-])track-\d+\.md|\]\(\s*(?:\.{1,2}/)*plan/)", re.IGNORECASE
)


@dataclass(frozen=True, slots=True)
class CheckRequest:
    design_path: Path
    mechanics_path: Path | None = None
    plan_path: Path | None = None
    plan_dir: Path | None = None
    changed_section: str | None = None
    target: Target = "design"
    scope: Scope = "whole-doc"


@dataclass(slots=True)
class CheckContext:
    request: CheckRequest
    design: DesignDoc
    mechanics: DesignDoc | None
    plans: list[PlanFile]
    limits: Limits
    rules: dict[str, Rule]
    findings: list[Finding] = field(default_factory=list)

    def targets(self) -> list[DesignDoc]:
        docs: list[DesignDoc] = []
        if self.request.target in ("design", "both"):
            docs.append(self.design)
        if self.request.target in ("mechanics", "both") and self.mechanics is not None:
            docs.append(self.mechanics)
        return docs

    def design_targeted(self) -> bool:
        return self.request.target in ("design", "both")

    def add(
        self,
        rule_id: str,
        path: Path,
        line: int | None,
        section: str | None,
        message: str,
        suggested_fix: str,
        fix: Fix | None = None,
    ) -> None:
        rule = self.rules[rule_id]
        self.findings.append(
            Finding(
                rule.id,
                rule.severity,
                str(path),
                line,
                section,
                message,
                suggested_fix,
                rule.auto_applicable and fix is not None,
                fix,
            )
        )


Check = Callable[[CheckContext], None]
CHECKS: dict[str, Check] = {}


def rule(rule_id: str) -> Callable[[Check], Check]:
    def register(fn: Check) -> Check:
        CHECKS[rule_id] = fn
        return fn

    return register


def _last_prose_line(doc: DesignDoc, section: Section) -> tuple[int, str] | None:
    for number in range(section.end, section.start, -1):
        line = doc.lines[number - 1]
        if line.strip():
            return number, line
    return None


@rule("dsc-stamp-position")
def stamp_position(ctx: CheckContext) -> None:
    for doc in ctx.targets():
        by_contract_unstamped = doc.path.name in UNSTAMPED_BY_CONTRACT
        for number, line in doc.prose_lines():
            if not STAMP_LIKE_RE.search(line):
                continue
            if by_contract_unstamped:
                ctx.add(
                    "dsc-stamp-position",
                    doc.path,
                    number,
                    doc.section_name_at(number),
                    f"{doc.path.name} must never carry a workflow-sha stamp",
                    f"delete line {number}; only design.md and design-mechanics.md are stamped",
                )
            elif number != 1:
                ctx.add(
                    "dsc-stamp-position",
                    doc.path,
                    number,
                    doc.section_name_at(number),
                    "workflow-sha stamp is not on line 1"
                    if not doc.stamped
                    else "a second workflow-sha stamp",
                    f"delete line {number}; the stamp belongs on line 1 only, above the title",
                )
            elif not STAMP_RE.match(line):
                ctx.add(
                    "dsc-stamp-position",
                    doc.path,
                    1,
                    None,
                    "line 1 is a malformed stamp",
                    "write line 1 exactly as '<!-- workflow-sha: <40 lowercase hex> -->'",
                )


@rule("dsc-section-shape")
def section_shape(ctx: CheckContext) -> None:
    if not ctx.design_targeted():
        return
    doc = ctx.design
    changed = ctx.request.changed_section if ctx.request.scope == "bounded" else None
    if changed is None:
        if doc.title is None:
            line = 2 if doc.stamped else 1
            ctx.add(
                "dsc-section-shape",
                doc.path,
                line,
                None,
                "the first line after the stamp is not a '# <title>' heading",
                "start the document with a single '# <title>' line",
            )
        overview = doc.find(OVERVIEW)
        if overview is None or overview.level != 2:
            ctx.add(
                "dsc-section-shape",
                doc.path,
                None,
                None,
                "design.md has no '## Overview' section",
                "add '## Overview' after the title: a concept-first summary of the design",
            )
        sections = doc.body_sections()
    else:
        target = doc.find(changed)
        if target is None:
            raise InputError(
                f'--changed-section "{changed}" names no section of the design',
                file=doc.path,
                hint="pass the exact heading text of the changed section",
            )
        sections = [target] if target.is_body else []
    for section in sections:
        first = next(((n, t) for n, t in doc.prose_lines(section.start + 1, section.end) if t.strip()), None)
        if first is None or not first[1].lstrip().startswith("**TL;DR:**"):
            ctx.add(
                "dsc-section-shape",
                doc.path,
                section.start,
                section.name,
                f'section "{section.name}" does not start with a **TL;DR:** paragraph',
                "open the section with '**TL;DR:** <one or two sentences>' right after the heading",
            )


@rule("dsc-mechanics-link")
def mechanics_link(ctx: CheckContext) -> None:
    doc, mech = ctx.design, ctx.mechanics
    names = {s.name for s in mech.level2()} if mech else set()
    for footer in doc.footers():
        section = doc.section_at(footer.line)
        name = section.name if section else None
        if footer.file is None or footer.target is None:
            ctx.add(
                "dsc-mechanics-link",
                doc.path,
                footer.line,
                name,
                "malformed **Mechanics:** footer",
                f"write it as '{FOOTER_PREFIX} design-mechanics.md §\"{name or '<section>'}\"'",
            )
            continue
        if mech is None:
            ctx.add(
                "dsc-mechanics-link",
                doc.path,
                footer.line,
                name,
                f"footer points to {footer.file}, but no mechanics companion was given",
                "pass --design-mechanics-path, or remove the footer",
            )
            continue
        if Path(footer.file).name != mech.path.name:
            ctx.add(
                "dsc-mechanics-link",
                doc.path,
                footer.line,
                name,
                f"footer names {footer.file}, not the companion {mech.path.name}",
                f"point the footer at {mech.path.name}",
            )
        elif footer.target not in names:
            close = difflib.get_close_matches(footer.target, sorted(names), n=1)
            hint = (
                f'did you mean §"{close[0]}"?'
                if close
                else f"add a '## {footer.target}' section to {mech.path.name}"
            )
            ctx.add(
                "dsc-mechanics-link",
                doc.path,
                footer.line,
                name,
                f'footer target §"{footer.target}" is not a section of {mech.path.name}',
                hint,
            )
        elif section is not None and section.is_body and footer.target != section.name:
            ctx.add(
                "dsc-mechanics-link",
                doc.path,
                footer.line,
                name,
                f'footer of "{section.name}" points at a differently named section §"{footer.target}"',
                f'name the same section in both files: §"{section.name}"',
            )
    if mech is None:
        return
    for section in doc.body_sections():
        last = _last_prose_line(doc, section)
        if (
            last is None
            or not last[1].strip().startswith(FOOTER_PREFIX)
            or last[0] in doc.structure.code_lines
        ):
            ctx.add(
                "dsc-mechanics-link",
                doc.path,
                section.start,
                section.name,
                f'body section "{section.name}" does not end with a **Mechanics:** footer',
                f"end it with '{FOOTER_PREFIX} {mech.path.name} §\"{section.name}\"'",
            )


def _resolve_ref_doc(
    ctx: CheckContext, plan: PlanFile, name: str, cache: dict[Path, DesignDoc | None]
) -> DesignDoc | None:
    if Path(name).name == ctx.design.path.name and "/" not in name:
        return ctx.design
    if ctx.mechanics is not None and Path(name).name == ctx.mechanics.path.name and "/" not in name:
        return ctx.mechanics
    for base in (plan.path.parent, ctx.design.path.parent):
        candidate = (base / name).resolve()
        if candidate in cache:
            return cache[candidate]
        if candidate.is_file():
            cache[candidate] = load_design(candidate, what="referenced design file")
            return cache[candidate]
    return None


@rule("dsc-full-design-link")
def full_design_link(ctx: CheckContext) -> None:
    cache: dict[Path, DesignDoc | None] = {}
    for plan in ctx.plans:
        for ref in plan.refs:
            if ref.file is None or ref.section is None:
                ctx.add(
                    "dsc-full-design-link",
                    plan.path,
                    ref.line,
                    None,
                    "malformed **Full design:** reference",
                    "write it as '**Full design:** design.md §\"<section name>\"'",
                )
                continue
            target = _resolve_ref_doc(ctx, plan, ref.file, cache)
            if target is None:
                ctx.add(
                    "dsc-full-design-link",
                    plan.path,
                    ref.line,
                    None,
                    f"**Full design:** names {ref.file}, which does not exist",
                    "point it at design.md or design-mechanics.md",
                )
                continue
            names = {s.name for s in target.sections}
            if ref.section not in names:
                close = difflib.get_close_matches(ref.section, sorted(names), n=1)
                hint = (
                    f'did you mean §"{close[0]}"?' if close else "update the reference to an existing section"
                )
                ctx.add(
                    "dsc-full-design-link",
                    plan.path,
                    ref.line,
                    None,
                    f'§"{ref.section}" is not a section of {target.path.name}',
                    hint,
                )


@rule("dsc-reverse-ref")
def reverse_ref(ctx: CheckContext) -> None:
    for doc in ctx.targets():
        for number, line in doc.prose_lines():
            spans = [m.span() for m in CODE_SPAN_RE.finditer(line)]
            for match in REVERSE_RE.finditer(line):
                if any(a <= match.start() < b for a, b in spans):
                    continue
                ctx.add(
                    "dsc-reverse-ref",
                    doc.path,
                    number,
                    doc.section_name_at(number),
                    f"the design links into the plan ({match.group(0).strip()})",
                    "remove the link; references run from the plan to the design, never back",
                )
                break


def find_asides(line: str) -> Iterator[tuple[int, str]]:
    """(0-based start, text to delete) for each cross-reference-only parenthetical."""
    spans = [m.span() for m in CODE_SPAN_RE.finditer(line)]
    for match in PAREN_RE.finditer(line):
        start, end = match.span()
        if any(a <= start < b for a, b in spans):
            continue
        if start > 0 and (line[start - 1] == "]" or line[start - 1].isalnum()):
            continue
        if not ASIDE_RE.match(match.group(1)):
            continue
        if start > 0 and line[start - 1] == " ":
            start -= 1
        elif end < len(line) and line[end] == " ":
            end += 1
        yield start, line[start:end]


@rule("dsc-parenthetical-aside")
def parenthetical_aside(ctx: CheckContext) -> None:
    for doc in ctx.targets():
        for number, line in doc.prose_lines():
            if "(" not in line:
                continue
            for start, text in find_asides(line):
                aside = text.strip()
                ctx.add(
                    "dsc-parenthetical-aside",
                    doc.path,
                    number,
                    doc.section_name_at(number),
                    f"parenthetical {aside} holds only cross-reference codes",
                    f"drop '{aside}': say what the reference means in words, or leave it out",
                    Fix(number, start + 1, text, ""),
                )


@rule("dsc-section-length")
def section_length(ctx: CheckContext) -> None:
    if not ctx.design_targeted():
        return
    cap = ctx.limits.section_length_cap
    for section in ctx.design.body_sections():
        last = _last_prose_line(ctx.design, section)
        length = (last[0] if last else section.start) - section.start + 1
        if length > cap:
            ctx.add(
                "dsc-section-length",
                ctx.design.path,
                section.start,
                section.name,
                f'section "{section.name}" is {length} lines long (cap {cap})',
                "move long-form mechanism detail into the mechanics companion, keeping the TL;DR here",
            )


@rule("dsc-top-level-cap")
def top_level_cap(ctx: CheckContext) -> None:
    if not ctx.design_targeted() or ctx.mechanics is not None:
        return
    limits, doc = ctx.limits, ctx.design
    lines = len(doc.lines)
    tokens = math.ceil(len(doc.file.text) / limits.chars_per_token)
    if lines > limits.top_level_line_cap or tokens > limits.top_level_token_cap:
        ctx.add(
            "dsc-top-level-cap",
            doc.path,
            None,
            None,
            f"design.md has {lines} lines and about {tokens} tokens without a mechanics companion "
            f"(caps {limits.top_level_line_cap} lines / {limits.top_level_token_cap} tokens)",
            "split it into design.md and design-mechanics.md (length-trigger-crossing)",
        )


@rule("dsc-duplicate-section")
def duplicate_section(ctx: CheckContext) -> None:
    docs = [ctx.design] + ([ctx.mechanics] if ctx.mechanics is not None else [])
    for doc in docs:
        for name, lines in doc.duplicates().items():
            for line in lines[1:]:
                ctx.add(
                    "dsc-duplicate-section",
                    doc.path,
                    line,
                    name,
                    f'section "{name}" is defined twice (first at line {lines[0]})',
                    "rename or merge one of them",
                )


def _verify_table(rules: dict[str, Rule]) -> None:
    missing, extra = set(rules) - set(CHECKS), set(CHECKS) - set(rules)
    if missing or extra:
        raise WiringError(
            f"rule table and checks disagree: no code for {sorted(missing)}, no table row for {sorted(extra)}"
        )


def load_context(request: CheckRequest, limits: Limits) -> CheckContext:
    if request.scope == "bounded" and not request.changed_section:
        raise InputError(
            "--scope bounded needs --changed-section NAME",
            hint="name the changed section, or use --scope whole-doc",
        )
    if request.target in ("mechanics", "both") and request.mechanics_path is None:
        raise InputError(
            f"--target {request.target} needs --design-mechanics-path",
            hint="pass the companion's path, or use --target design",
        )
    design = load_design(request.design_path, what="design")
    mechanics = (
        load_design(request.mechanics_path, what="mechanics companion") if request.mechanics_path else None
    )
    plans: list[PlanFile] = []
    if request.plan_path is not None:
        plans.append(load_plan_file(request.plan_path))
    if request.plan_dir is not None:
        plans.extend(load_tracks(request.plan_dir))
    rules = rule_table()
    _verify_table(rules)
    return CheckContext(request, design, mechanics, plans, limits, rules)


def run_checks(request: CheckRequest, limits: Limits | None = None) -> list[Finding]:
    ctx = load_context(request, limits or Limits())
    for rule_id in ctx.rules:
        CHECKS[rule_id](ctx)
    return sort_findings(ctx.findings)
