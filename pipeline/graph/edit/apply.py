"""Step 1 (apply the edit inline) and Step 1.5 (design-sync's distillation) of the
interactive kinds, and the inline-editor spawn they and Step 6 share."""

from __future__ import annotations

import asyncio
import difflib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from pipeline import confinement
from pipeline.agents.inputs import EditScope, RoundInputs, params_for
from pipeline.agents.usage import RoleUsage
from pipeline.formats.contracts import EditorOutput
from pipeline.formats.design_dir import DesignDir
from pipeline.formats.edit_ops import INSTRUCTION, PlannedEdit, plan_edit, plan_files
from pipeline.formats.edit_plan import EditPlan, read_live
from pipeline.formats.edits import find_section, parse
from pipeline.formats.findings import Finding
from pipeline.formats.kinds import DESIGN_SYNC, LENGTH_TRIGGER, EditKind, Target
from pipeline.formats.refs import propagate_plan
from pipeline.formats.review_log import last_sync, parse_entries, working_mode_count
from pipeline.formats.section_diff import section_texts
from pipeline.formats.spawn_params import SpawnParams
from pipeline.formats.stamp import STAMP_RE, first_line, stamp_line
from pipeline.formats.sync_delta import (
    baseline_path,
    mechanics_sections,
    section_deltas,
    view_changed,
    without_stamp,
)
from pipeline.formats.textio import atomic_write_bytes, read_text
from pipeline.graph.deps import RunContext, RunDeps
from pipeline.graph.edit.state import Applied, EditState, EditUpdate, SyncDelta
from pipeline.runs.events import EditApplied, RoundStarted
from pipeline.runs.snapshot import snapshot_files

EDITOR = "inline-editor"


def guard_line1(deps: RunDeps, path: Path) -> str | None:
    """Put back a stamped line 1 the editor changed; returns a note when it had to."""
    before = deps.before(path)
    if before is None or not path.is_file() or not STAMP_RE.match(first_line(before)):
        return None
    now = confinement.read_bytes(path)
    head = before.split(b"\n", 1)[0] + b"\n"
    if now.startswith(head):
        return None
    atomic_write_bytes(path, head + (now.split(b"\n", 1)[1] if b"\n" in now else b""))
    return f"the inline editor changed line 1 of {path.name}; the stamp line was put back"


@dataclass(frozen=True, slots=True)
class EditorRun:
    """One inline-editor spawn, as the run records it."""

    summary: str
    usage: RoleUsage
    error: str | None
    line1: str | None
    """A note when the stamp line had to be put back."""
    declined: list[str]
    """The parts of the instruction the editor said it did not carry out."""
    twice: str | None = None
    """A note when the editor wrote a sentence a second time and the copy was removed."""

    def notes(self) -> list[str]:
        error = f"inline-editor: {self.error}" if self.error else None
        return [n for n in (self.line1, self.twice, error) if n]


MIN_WORDS = 5
"""A sentence this long or longer is one the editor could have written twice by mistake (a
short one, "See below.", may stand twice on purpose)."""


def once(path: Path, before: bytes | None) -> str | None:
    """The editor never writes the same sentence twice: a sentence the spawn wrote that now
    stands in the file more often than before, and more than once, loses the copy the spawn
    added (the later one). Returns a note when it had to."""
    from pipeline.offline.text import sentences

    now = read_live(path)
    if now is None or now == before:
        return None
    old = (before or b"").decode("utf-8", "replace").split("\n")
    lines = now.decode("utf-8", "replace").split("\n")
    counts = Counter(s for line in lines for s in sentences(line))
    had = Counter(s for line in old for s in sentences(line))
    removed = 0
    matcher = difflib.SequenceMatcher(a=old, b=lines, autojunk=False)
    for tag, _, _, first, last in reversed(matcher.get_opcodes()):
        for index in range(last - 1, first - 1, -1) if tag in ("replace", "insert") else ():
            for sentence in reversed(sentences(lines[index])):
                extra = counts[sentence] > max(had[sentence], 1) and sentence in lines[index]
                if extra and len(sentence.split()) >= MIN_WORDS:
                    at = lines[index].rindex(sentence)
                    head, tail = lines[index][:at].rstrip(), lines[index][at + len(sentence) :].lstrip()
                    lines[index] = f"{head} {tail}".strip()
                    counts[sentence] -= 1
                    removed += 1
    if not removed:
        return None
    atomic_write_bytes(path, "\n".join(lines).encode("utf-8"))
    return f"the inline editor wrote {removed} sentence(s) a second time in {path.name}; the copy was removed"


async def spawn_editor(
    state: EditState, deps: RunDeps, path: Path, flagged: list[Finding], changed: str | None, target: Target
) -> EditorRun:
    """One inline-editor spawn on ``path``. Its params and the line-1 guard read and write
    files: in a thread, off the event loop."""
    params = await asyncio.to_thread(_editor_params, state, deps, path, flagged, changed, target)
    before = await asyncio.to_thread(read_live, path)
    result, usage = await deps.spawn(params)
    output = result.output
    summary = str(getattr(output, "summary", "")) if output else ""
    declined = list(output.declined) if isinstance(output, EditorOutput) else []
    line1 = await asyncio.to_thread(guard_line1, deps, path)
    twice = await asyncio.to_thread(once, path, before)
    return EditorRun(summary, usage, result.error, line1, declined, twice)


def _editor_params(
    state: EditState, deps: RunDeps, path: Path, flagged: list[Finding], changed: str | None, target: Target
) -> SpawnParams:
    d = deps.design
    inputs = RoundInputs(d, state.kind, state.round, path, tuple(flagged))
    scope = EditScope(
        scope="whole-doc",
        changed_section=changed,
        target=target,
        mechanics=d.mechanics if d.mechanics.is_file() else None,
    )
    return params_for(EDITOR, inputs, edit=scope)


def changed_files(deps: RunDeps, kind: EditKind) -> tuple[list[str], list[str]]:
    """Files that differ from the edit's starting snapshot, and those that did not exist then."""
    read = deps.before
    changed, created = [], []
    for path in snapshot_files(deps.design, kind):
        before, now = read(path), read_live(path)
        if before != now:
            changed.append(deps.rel(path))
            if before is None:
                created.append(deps.rel(path))
    return changed, created


def _companion_filled(d: DesignDir) -> bool:
    if not d.mechanics.is_file():
        return False
    return any(body.strip() for body in mechanics_sections(read_text(d.mechanics).text, d.mechanics).values())


async def step1_apply(state: EditState, runtime: RunContext) -> EditUpdate:
    """Step 1: the edit, applied inline. Exact operations are planned whole and written at
    once; an instruction or the length-trigger split goes to the inline editor. What comes
    before and after the editor's spawn reads and writes files: in a thread, off the event
    loop."""
    deps = runtime.context
    if state.kind == DESIGN_SYNC:
        return {}
    planned = await asyncio.to_thread(_apply_planned, state, deps)
    update: EditUpdate = {"notes": [], "usage": []}
    run = None
    if planned.passages and planned.editor_file is not None:
        target: Target = "both" if state.kind == LENGTH_TRIGGER else "design"
        if planned.editor_file == deps.design.mechanics:
            target = "mechanics"
        run = await spawn_editor(
            state, deps, planned.editor_file, planned.passages, planned.changed_section, target
        )
        update["usage"] = [run.usage]
        update["notes"] = run.notes()
    update["applied"] = await asyncio.to_thread(_applied, state, deps, planned, run)
    return update


def _apply_planned(state: EditState, deps: RunDeps) -> PlannedEdit:
    """The round begins; the edit's exact operations are planned and written at once."""
    deps.events.emit(RoundStarted(round=state.round, budget=state.budget))
    plan = EditPlan(deps.before)
    planned = plan_edit(state.request.model_copy(), deps.design, plan, stamp_line(deps.workflow_sha.get()))
    written = plan.commit()
    deps.events.emit(EditApplied(files=[deps.rel(p) for p in written]))
    return planned


def _applied(state: EditState, deps: RunDeps, planned: PlannedEdit, run: EditorRun | None) -> Applied:
    """What the edit changed, as the files show it (and the record of what the run wrote); the
    parts of an instruction the editor declined."""
    d = deps.design
    files, created = changed_files(deps, state.kind)
    missed = _missed(deps, planned.passages, planned.editor_file) if files else None
    applied = bool(files) and not missed and (state.kind != LENGTH_TRIGGER or _companion_filled(d))
    deps.record_wrote(state.kind)
    return Applied(
        applied=applied,
        files=files,
        created=created,
        changed_section=planned.changed_section,
        summary=planned.summary,
        editor=run.summary if run else None,
        declined=run.declined if run and any(p.rule == INSTRUCTION for p in planned.passages) else [],
        missed=missed,
        touched_mechanics=planned.touched_mechanics or deps.rel(d.mechanics) in files,
        references=planned.references,
    )


def _missed(deps: RunDeps, passages: list[Finding], path: Path | None) -> str | None:
    """An instruction about one section that left that section as it was (whatever else it
    changed): the edit was not made, and the run says so."""
    asked = [p.section for p in passages if p.rule == INSTRUCTION and p.section]
    if not asked or path is None:
        return None
    start = deps.before(path)
    now = read_live(path)
    old = section_texts(start.decode("utf-8", "replace") if start else "", path)
    new = section_texts(now.decode("utf-8", "replace") if now else "", path)
    same = [name for name in asked if name in old and old[name] == new.get(name)]
    if not same:
        return None
    where = ", ".join(f'§"{name}"' for name in same)
    return f"the instruction produced no change in {where} (the diff summary shows what did change)"


def _sync_passages(deps: RunDeps, design: str, mechanics: str) -> tuple[list[Finding], list[str], bool]:
    """The companion's changes since the last sync as the editor's passages, the changes as
    text, and whether the baseline was on record."""
    d = deps.design
    base = baseline_path(d.workflow)
    have_baseline = base.is_file()
    # No record of the last sync: design.md's own sections stand in for what was distilled.
    old = without_stamp(read_text(base).text) if have_baseline else design
    deltas = section_deltas(old, without_stamp(mechanics), d.mechanics)
    if not have_baseline:
        deltas = [x for x in deltas if x.kind == "changed" or x.kind == "added"]
    passages: list[Finding] = []
    changes: list[str] = []
    for delta in deltas:
        changes.append(delta.describe())
        if not view_changed(delta, d.mechanics):
            continue
        passages.append(
            Finding(
                severity="blocker",
                rule=f"sync-{delta.kind}",
                section=delta.name,
                quote=delta.old_name,
                message=f'design-mechanics.md {delta.describe()} since the last sync; re-distill design.md §"'
                f'{delta.name}"',
                suggested_fix=deps.rel(base) if have_baseline else "",
            )
        )
    return passages, changes, have_baseline


def _propagate_sync(deps: RunDeps, passages: list[Finding]) -> list[str]:
    """Plan and track references follow the sections the sync renamed or removed."""
    plan = EditPlan(read_live)
    touched: set[str] = set()
    for passage in passages:
        if passage.rule not in ("sync-renamed", "sync-removed") or not passage.section:
            continue
        old = passage.quote if passage.rule == "sync-renamed" else passage.section
        new = passage.section if passage.rule == "sync-renamed" else None
        for path in plan_files(deps.design):
            text, change = propagate_plan(plan.text(path), old or "", new)
            if change.total:
                plan.set(path, text)
                touched.add(deps.rel(path))
    plan.commit()
    return sorted(touched)


async def step1_5_distill(state: EditState, runtime: RunContext) -> EditUpdate:
    """Step 1.5: re-distill design.md from the companion's changes since the last sync; a
    zero delta is noted and skips the review. What comes before and after the editor's spawn
    reads and writes files: in a thread, off the event loop."""
    deps = runtime.context
    sync, since = await asyncio.to_thread(_sync_delta, state, deps)
    update: EditUpdate = {"sync": sync, "notes": [], "usage": []}
    if not sync.baseline:
        update["notes"] = [
            "no record of the companion at the last sync; design.md was compared section by section"
        ]
    editor = None
    passages = sync.passages
    if passages:
        run = await spawn_editor(state, deps, deps.design.design, passages, None, "design")
        editor = run.summary
        update["usage"] = [run.usage]
        update["notes"] = update["notes"] + run.notes()
    summary = (
        f"Re-distilled design.md from the companion's changes since "
        f"{f'Mutation {since}' if since is not None else 'its creation'}: {'; '.join(sync.changes)}."
        if passages
        else "Zero-delta sync."
    )
    update["applied"] = await asyncio.to_thread(_distilled, state, deps, passages, summary, editor)
    return update


def _sync_delta(state: EditState, deps: RunDeps) -> tuple[SyncDelta, int | None]:
    """The round begins: the companion's changes since the last sync (and that sync's entry)."""
    deps.events.emit(RoundStarted(round=state.round, budget=state.budget))
    d = deps.design
    entries = [e for e in parse_entries(d.mutations) if e.run_id != state.run_id]
    since = last_sync(entries)
    design, mechanics = read_text(d.design).text, read_text(d.mechanics).text
    start = deps.before(d.design)
    passages, changes, baseline = _sync_passages(
        deps, design if start is None else start.decode("utf-8"), mechanics
    )
    sync = SyncDelta(
        since=since.number if since else None,
        baseline=baseline,
        mechanics_edits=working_mode_count(entries),
        changes=changes,
        zero=not passages,
        passages=passages,
    )
    return sync, since.number if since else None


def _distilled(
    state: EditState, deps: RunDeps, passages: list[Finding], summary: str, editor: str | None
) -> Applied:
    """References follow the renamed sections; what the distillation changed, as the files show it."""
    references = _propagate_sync(deps, passages)
    files, created = changed_files(deps, state.kind)
    deps.record_wrote(state.kind)
    return Applied(
        applied=bool(files) or not passages,
        files=files,
        created=created,
        summary=summary,
        editor=editor,
        touched_mechanics=True,
        references=references,
    )


def sync_stale(state: EditState, deps: RunDeps) -> list[Finding]:
    """The distillation's passages design.md still does not follow (checked every round)."""
    if state.sync is None or not state.sync.passages:
        return []
    d = deps.design
    now = parse(read_text(d.design).text, d.design)
    start = deps.before(d.design)
    before = parse(start.decode("utf-8") if start else "", d.design)
    out: list[Finding] = []
    for passage in state.sync.passages:
        name = passage.section or ""
        present, old = find_section(now, name), find_section(before, name)
        if passage.rule == "sync-removed":
            ok = present is None
        elif passage.rule in ("sync-added", "sync-renamed"):
            ok = present is not None
        else:
            ok = present is not None and (old is None or now.text_of(present) != before.text_of(old))
        if not ok:
            out.append(
                Finding(
                    severity="should-fix",
                    rule="sync-stale",
                    section=name,
                    file=deps.rel(d.design),
                    message=f'design.md §"{name}" does not yet follow the companion ({passage.rule})',
                    suggested_fix=f'rewrite §"{name}" from design-mechanics.md §"{name}"',
                )
            )
    return out
