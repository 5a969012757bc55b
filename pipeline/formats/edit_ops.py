"""Step 1 for the interactive kinds, as exact file changes: each kind's edit planned on an
:class:`EditPlan` (nothing is written here), its references propagated in the same plan, and
the passages the inline editor must handle when a rule cannot (an instruction, the split)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pipeline.errors import MalformedEdit
from pipeline.formats.design_dir import DesignDir
from pipeline.formats.edit_plan import EditPlan
from pipeline.formats.edit_request import EditRequest
from pipeline.formats.edits import (
    add_section,
    find_section,
    move_section,
    parse,
    remove_section,
    rename_section,
    replace_section_body,
    replace_unique,
    require_section,
    section_body,
)
from pipeline.formats.findings import Finding
from pipeline.formats.plan import track_paths
from pipeline.formats.refs import propagate_plan, rename_in_design
from pipeline.formats.section_diff import describe_changes
from pipeline.formats.split import skeleton, with_footers
from pipeline.formats.stamp import STAMP_RE, first_line

INSTRUCTION = "edit-instruction"
SPLIT = "split-section"


def short(text: str, limit: int = 70) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def passage(rule: str, section: str | None, message: str, fix: str = "") -> Finding:
    """A passage the inline editor must handle: the request or a step a rule cannot take."""
    return Finding(severity="blocker", rule=rule, section=section, message=message, suggested_fix=fix)


@dataclass(slots=True)
class PlannedEdit:
    plan: EditPlan
    changed_section: str | None
    summary: str
    touched_mechanics: bool = False
    editor_file: Path | None = None
    """The file the inline editor works on, when the kind needs it."""
    passages: list[Finding] = field(default_factory=list)
    references: list[str] = field(default_factory=list)
    """Files whose **Full design** references this edit changed."""


def plan_files(d: DesignDir) -> list[Path]:
    files = [d.plan] if d.plan.is_file() else []
    return files + (track_paths(d.plan_dir) if d.plan_dir.is_dir() else [])


def _propagate(
    d: DesignDir,
    plan: EditPlan,
    old: str,
    new: str | None,
    *,
    repoint: bool = False,
    design_only: bool = False,
) -> tuple[int, list[str]]:
    total, touched = 0, []
    for path in plan_files(d):
        text, change = propagate_plan(plan.text(path), old, new, repoint=repoint, design_only=design_only)
        if change.total:
            plan.set(path, text)
            total += change.total
            touched.append(d.rel(path).split("_workflow/", 1)[-1])
    return total, touched


def _refs_note(count: int, files: list[str], verb: str) -> str:
    if not count:
        return "No **Full design** reference named it."
    return f"{verb} {count} **Full design** reference(s) in {', '.join(files)}."


def _require_companion(d: DesignDir, plan: EditPlan, kind: str) -> None:
    if not plan.exists(d.mechanics):
        raise MalformedEdit(
            f"{kind} needs the companion design-mechanics.md, and there is none",
            file=d.mechanics,
            hint="split the design first: designloop edit DIR --kind length-trigger-crossing",
        )


def _stamp_of(text: str) -> str | None:
    line = first_line(text.encode("utf-8"))
    return line.decode("utf-8") if STAMP_RE.match(line) else None


def _content_edit(req: EditRequest, d: DesignDir, plan: EditPlan) -> PlannedEdit:
    path = d.design
    text = plan.text(path)
    if req.instruction is not None:
        section = require_section(parse(text, path), req.section or "").name
        return PlannedEdit(
            plan,
            section,
            f'Instruction for §"{section}": "{short(req.instruction)}".',
            editor_file=path,
            passages=[passage(INSTRUCTION, section, req.instruction)],
        )
    if req.content is not None:
        body = section_body(req.content, req.section or "", Path(req.content_file or "content"))
        plan.set(path, replace_section_body(text, path, req.section or "", body))
        return PlannedEdit(plan, req.section, f'Rewrote the body of §"{req.section}" ({len(body)} lines).')
    assert req.old is not None and req.new is not None
    if req.stale is not None and req.stale.choice == "a":
        _revert_companion(d, plan, req)
    new = req.stale.merged if req.stale is not None and req.stale.merged is not None else req.new
    done = replace_unique(text, req.old, new, path, req.section)
    plan.set(path, done.text)
    return PlannedEdit(
        plan,
        done.section,
        f'Replaced "{short(req.old)}" with "{short(new)}" in §"{done.section}" (line {done.line}).',
        touched_mechanics=req.stale is not None and req.stale.choice == "a",
    )


def _revert_companion(d: DesignDir, plan: EditPlan, req: EditRequest) -> None:
    """Staleness choice (a): the companion goes back to the text design.md still shows."""
    assert req.stale is not None
    if not req.stale.y:
        raise MalformedEdit(
            f'§"{req.stale.section}" was removed from design-mechanics.md; there is no text to revert',
            hint="choose (c): sync design.md first",
        )
    done = replace_unique(
        plan.text(d.mechanics), req.stale.y, req.stale.x, d.mechanics, flag="the stale passage"
    )
    plan.set(d.mechanics, done.text)


def _section_add(req: EditRequest, d: DesignDir, plan: EditPlan) -> PlannedEdit:
    name = (req.section or "").strip()
    body = section_body(req.content or "", name, Path(req.content_file or "content"))
    text = add_section(plan.text(d.design), d.design, name, body, req.after)
    plan.set(d.design, text)
    where = f' after §"{req.after}"' if req.after else ""
    return PlannedEdit(plan, name, f'Added §"{name}"{where} ({len(body)} lines).')


def _section_remove(req: EditRequest, d: DesignDir, plan: EditPlan) -> PlannedEdit:
    doc = parse(plan.text(d.design), d.design)
    section = require_section(doc, req.section or "")
    text = remove_section(plan.text(d.design), d.design, section.name)
    if req.to is not None:
        require_section(parse(text, d.design), req.to, "--to")
    plan.set(d.design, text)
    count, files = _propagate(d, plan, section.name, req.to, repoint=req.to is not None)
    lines = section.end - section.start + 1
    verb = f'Repointed to §"{req.to}"' if req.to else "Removed"
    return PlannedEdit(
        plan,
        section.name,
        f'Removed §"{section.name}" ({lines} lines). {_refs_note(count, files, verb)}',
        references=files,
    )


def _section_rename(req: EditRequest, d: DesignDir, plan: EditPlan) -> PlannedEdit:
    old = require_section(parse(plan.text(d.design), d.design), req.section or "").name
    new = (req.to or "").strip()
    text = rename_section(plan.text(d.design), d.design, old, new)
    text, footers, others = rename_in_design(text, d.design, old, new)
    plan.set(d.design, text)
    companion = False
    if plan.exists(d.mechanics) and find_section(parse(plan.text(d.mechanics), d.mechanics), old) is not None:
        plan.set(d.mechanics, rename_section(plan.text(d.mechanics), d.mechanics, old, new))
        companion = True
    count, files = _propagate(d, plan, old, new, design_only=not companion)
    where = "design.md and design-mechanics.md" if companion else "design.md"
    notes = [f'Renamed §"{old}" to §"{new}" in {where}.', _refs_note(count, files, "Updated")]
    if footers:
        notes.append(f"Updated {footers} **Mechanics:** footer(s).")
    if others:
        notes.append(f"Updated {others} in-text reference(s).")
    return PlannedEdit(plan, new, " ".join(notes), touched_mechanics=companion, references=files)


def _section_move(req: EditRequest, d: DesignDir, plan: EditPlan) -> PlannedEdit:
    name = require_section(parse(plan.text(d.design), d.design), req.section or "").name
    plan.set(d.design, move_section(plan.text(d.design), d.design, name, req.after or ""))
    return PlannedEdit(
        plan,
        name,
        f'Moved §"{name}" after §"{req.after}". Section names are unchanged, so every reference still '
        "resolves by name.",
    )


def _structural_rewrite(req: EditRequest, d: DesignDir, plan: EditPlan) -> PlannedEdit:
    current = plan.text(d.design)
    if req.instruction is not None:
        return PlannedEdit(
            plan,
            None,
            f'Instruction for design.md: "{short(req.instruction)}".',
            editor_file=d.design,
            passages=[passage(INSTRUCTION, None, req.instruction)],
        )
    content = req.content or ""
    stamp, given = _stamp_of(current), _stamp_of(content)
    if given is not None and given != stamp:
        raise MalformedEdit(
            "the new content carries a different workflow-sha stamp on line 1",
            file=req.content_file,
            line=1,
            hint="leave the stamp out of the content; the edit keeps design.md's line 1 as it is",
        )
    if given is None and stamp is not None:
        content = stamp + "\n" + content
    if content.strip() == current.strip():
        raise MalformedEdit(
            "the new content is design.md as it stands: nothing would change",
            hint="pass --content a file with the rewritten design",
        )
    parse(content, d.design).require_unique_sections()
    plan.set(d.design, content if content.endswith("\n") else content + "\n")
    changes = describe_changes(current, plan.text(d.design), d.design)
    return PlannedEdit(plan, None, f"Rewrote design.md: {changes}.")


def _length_trigger(d: DesignDir, plan: EditPlan, stamp: str) -> PlannedEdit:
    if plan.exists(d.mechanics):
        raise MalformedEdit(
            "design.md already has its companion design-mechanics.md",
            file=d.mechanics,
            hint="edit the companion with --kind mechanics-edit, then publish with --kind design-sync",
        )
    text = plan.text(d.design)
    doc = parse(text, d.design)
    doc.require_unique_sections()
    body = doc.body_sections()
    if not body:
        raise MalformedEdit(
            "design.md has no body section to split",
            file=d.design,
            hint="a length-trigger-crossing splits long body sections; this design has none to move",
        )
    plan.set(d.design, with_footers(text, d.design))
    plan.set(d.mechanics, stamp + "\n" + skeleton(text, d.design))
    plan.new_stamped.add(d.mechanics)
    passages = [
        passage(
            SPLIT,
            s.name,
            f'move the long-form content of §"{s.name}" into design-mechanics.md §"{s.name}"',
            "keep the TL;DR, the mechanism overview, the edge cases, the diagrams and the footer in "
            "design.md; the companion section opens with the overview and mirrors the edge cases",
        )
        for s in body
    ]
    return PlannedEdit(
        plan,
        None,
        f"Split design.md ({len(doc.lines)} lines) into design.md and a new, stamped "
        f"design-mechanics.md with {len(body)} matching section(s).",
        touched_mechanics=True,
        editor_file=d.design,
        passages=passages,
    )


def _mechanics_edit(req: EditRequest, d: DesignDir, plan: EditPlan) -> PlannedEdit:
    _require_companion(d, plan, "mechanics-edit")
    path = d.mechanics
    text = plan.text(path)
    if req.instruction is not None:
        where = f' §"{req.section}"' if req.section else ""
        if req.section:
            require_section(parse(text, path), req.section)
        return PlannedEdit(
            plan,
            req.section,
            f'Instruction for design-mechanics.md{where}: "{short(req.instruction)}".',
            touched_mechanics=True,
            editor_file=path,
            passages=[passage(INSTRUCTION, req.section, req.instruction)],
        )
    if req.content is not None:
        name = (req.section or "").strip()
        body = section_body(req.content, name, Path(req.content_file or "content"))
        doc = parse(text, path)
        if find_section(doc, name) is not None:
            plan.set(path, replace_section_body(text, path, name, body))
            summary = f'Rewrote design-mechanics.md §"{name}" ({len(body)} lines).'
        else:
            plan.set(path, add_section(text, path, name, body, req.after))
            summary = f'Added design-mechanics.md §"{name}" ({len(body)} lines).'
        return PlannedEdit(plan, name, summary, touched_mechanics=True)
    assert req.old is not None and req.new is not None
    old, new = req.old, req.new
    if req.stale is not None and req.stale.choice == "a":
        _revert_companion(d, plan, req)
    elif req.stale is not None and req.stale.choice == "b":
        old, new = req.stale.y, req.stale.merged or req.new
    done = replace_unique(plan.text(path), old, new, path, req.section)
    plan.set(path, done.text)
    return PlannedEdit(
        plan,
        done.section,
        f'Edited design-mechanics.md §"{done.section}": replaced "{short(old)}" with "{short(new)}".',
        touched_mechanics=True,
    )


def plan_edit(req: EditRequest, d: DesignDir, plan: EditPlan, stamp: str) -> PlannedEdit:
    """The edit as planned file changes; raises MalformedEdit before anything is written.

    ``stamp`` is the line a newly created companion starts with (length-trigger-crossing).
    design-sync plans nothing here: its distillation is Step 1.5.
    """
    req.validate_form()
    if not plan.exists(d.design):
        raise MalformedEdit(
            "there is no design.md to edit", file=d.design, hint="create it first: designloop create DIR"
        )
    parse(plan.text(d.design), d.design).require_unique_sections()
    kind = req.kind
    if kind == "content-edit":
        planned = _content_edit(req, d, plan)
    elif kind == "section-add":
        planned = _section_add(req, d, plan)
    elif kind == "section-remove":
        planned = _section_remove(req, d, plan)
    elif kind == "section-rename":
        planned = _section_rename(req, d, plan)
    elif kind == "section-move":
        planned = _section_move(req, d, plan)
    elif kind == "structural-rewrite":
        planned = _structural_rewrite(req, d, plan)
    elif kind == "length-trigger-crossing":
        planned = _length_trigger(d, plan, stamp)
    elif kind == "mechanics-edit":
        planned = _mechanics_edit(req, d, plan)
    else:
        _require_companion(d, plan, kind)
        planned = PlannedEdit(plan, None, "")
    if req.stale is not None and req.stale.choice == "b" and kind == "content-edit":
        planned.summary += f' Applied on top of the companion\'s newer text "{short(req.stale.y)}".'
    plan.validate()
    return planned
