"""The structural rules: the stamp, section shape, Mechanics footers, Full design references,
duplicate sections."""

from __future__ import annotations

import difflib
from pathlib import Path

from pipeline.checks.context import CheckContext, rule
from pipeline.errors import InputError
from pipeline.formats.design_doc import (
    FOOTER_PREFIX,
    OVERVIEW,
    STAMP_LIKE_RE,
    STAMP_RE,
    DesignDoc,
    load_design,
)
from pipeline.formats.plan import PlanFile

UNSTAMPED_BY_CONTRACT = ("design-final.md", "design-mechanics-final.md", "design-mutations.md")


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
        last = doc.last_text_line(section)
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
