"""The one place a role's params for a round are built (the seed's params-file contract).

The graph's nodes and the ``review`` command both call :func:`params_for`, so what a role
is handed cannot differ between a run and a one-off review.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.agents.spawn import review_output_path
from pipeline.errors import InputError
from pipeline.formats.design_dir import DesignDir
from pipeline.formats.edit_ops import INSTRUCTION
from pipeline.formats.findings import Finding
from pipeline.formats.kinds import PHASE1, PHASE4
from pipeline.formats.slices import Slice, partition_for
from pipeline.formats.spawn_params import ClaimRef, SpawnParams
from pipeline.formats.textio import read_text, split_lines
from pipeline.settings import Limits

NONE = "(none)"
"""What a params file says for an input that does not exist (the seed's comprehension inputs)."""


@dataclass(frozen=True, slots=True)
class RoundInputs:
    """What every spawn of one round shares."""

    design: DesignDir
    kind: str
    round: int
    draft: Path
    """The document being written or reviewed (design.md, or design-final.md in phase 4)."""
    flagged: Sequence[Finding] = field(default_factory=tuple)
    """The findings a later round's author (or the editor) must fix."""
    target: str = "design"
    """design, or both when the author also writes the mechanics companion."""
    claims: Sequence[ClaimRef] | None = None
    """The draft's claims ledger, for the fidelity check when a model runs it (the offline
    engine resolves the names itself)."""

    def rel(self, path: Path) -> str:
        return self.design.rel(path)

    def companion(self) -> Path:
        """The companion a creation run writes: design-mechanics.md, or its phase-4 final copy."""
        return self.design.final_mechanics if self.kind == PHASE4 else self.design.mechanics


@dataclass(frozen=True, slots=True)
class EditScope:
    """What an interactive kind's spawns share: the cold-read scope and the companion files."""

    scope: str
    """bounded or whole-doc"""
    sections: tuple[str, ...] = ()
    """The sections a bounded read covers."""
    changed_section: str | None = None
    target: str = "design"
    mechanics: Path | None = None
    plan_path: Path | None = None
    plan_dir: Path | None = None
    note: str | None = None
    changed_lines: tuple[int, int] | None = None
    """The first and last line of design.md the edit changed: the readability auditor's slice
    on an interactive kind (design-sync's prose pass reads the whole design)."""


@dataclass(frozen=True, slots=True)
class AuditSlice:
    """One auditor's slice and the partition's metadata (docs/formats.md §8)."""

    slice: Slice
    slice_count: int
    total_lines: int


def _base(role: str, inputs: RoundInputs) -> dict[str, object]:
    return {
        "role": role,
        "kind": inputs.kind,
        "round": inputs.round,
        "code_root": inputs.rel(inputs.design.code_root),
    }


def _author(role: str, inputs: RoundInputs) -> dict[str, object]:
    d = inputs.design
    params: dict[str, object] = {"target": inputs.target, "output_path": inputs.rel(inputs.draft)}
    if inputs.target == "both":
        params["design_mechanics_path"] = inputs.rel(inputs.companion())
    if inputs.kind == PHASE4:
        params |= {"design_path": inputs.rel(d.design), "episodes_path": inputs.rel(d.plan_dir)}
    else:
        params["research_log_path"] = inputs.rel(d.research_log)
        # The plan may already point at sections by name; the author keeps those names.
        if d.plan.is_file():
            params["plan_path"] = inputs.rel(d.plan)
        if d.plan_dir.is_dir():
            params["plan_dir"] = inputs.rel(d.plan_dir)
    if inputs.round > 1 and inputs.flagged and inputs.draft.is_file():
        params["flagged_passages"] = list(inputs.flagged)
    return params


def _second_check(role: str, inputs: RoundInputs) -> dict[str, object]:
    d = inputs.design
    if role == "absorption-check":
        return {
            "target": "design",
            "research_log_path": inputs.rel(d.research_log),
            "draft_path": inputs.rel(inputs.draft),
        }
    params: dict[str, object] = {
        "draft_path": inputs.rel(inputs.draft),
        "episodes_path": inputs.rel(d.plan_dir),
        "design_path": inputs.rel(d.design),
    }
    if inputs.claims is not None:
        params["claims"] = list(inputs.claims)
    return params


def _comprehension(role: str, inputs: RoundInputs) -> dict[str, object]:
    d = inputs.design
    phase1 = inputs.kind == PHASE1
    params: dict[str, object] = {
        "design_path": inputs.rel(inputs.draft),
        "design_mechanics_path": inputs.rel(d.mechanics) if phase1 and d.mechanics.is_file() else NONE,
        "scope": "whole-doc",
        "mutation_kind": inputs.kind,
        # Phase 4 passes no plan: its references point at design.md, not the final artifact.
        "plan_path": inputs.rel(d.plan) if phase1 and d.plan.is_file() else NONE,
        "plan_dir": inputs.rel(d.plan_dir) if phase1 and d.plan_dir.is_dir() else NONE,
    }
    if inputs.kind == PHASE4 and inputs.target == "both":
        params["design_mechanics_path"] = inputs.rel(d.final_mechanics)
    if inputs.kind == PHASE4:
        output = review_output_path(d.reviews, inputs.round, role)
        params["output_path"] = inputs.rel(output)
    return params


def _adversarial(role: str, inputs: RoundInputs) -> dict[str, object]:
    return {"research_log_path": inputs.rel(inputs.design.research_log)}


def _editor(role: str, inputs: RoundInputs) -> dict[str, object]:
    return {
        "output_path": inputs.rel(inputs.draft),
        "mutation_kind": inputs.kind,
        "flagged_passages": list(inputs.flagged),
    }


BUILDERS = {
    "design-author": _author,
    "absorption-check": _second_check,
    "fidelity-check": _second_check,
    "comprehension-review": _comprehension,
    "adversarial-review": _adversarial,
    "inline-editor": _editor,
}


def _or_none(inputs: RoundInputs, path: Path | None) -> str:
    return inputs.rel(path) if path is not None else "(none)"


def _edit_params(role: str, inputs: RoundInputs, edit: EditScope) -> dict[str, object]:
    """An interactive kind's params: the comprehension gate's Inputs block, the inline editor's
    file and findings, and design-sync's single whole-document prose pass."""
    if role == "comprehension-review":
        params: dict[str, object] = {
            "design_path": inputs.rel(inputs.draft),
            "design_mechanics_path": _or_none(inputs, edit.mechanics),
            "scope": edit.scope,
            "mutation_kind": inputs.kind,
            "plan_path": _or_none(inputs, edit.plan_path),
            "plan_dir": _or_none(inputs, edit.plan_dir),
        }
        if edit.scope == "bounded":
            params["bounded_scope"] = list(edit.sections)
        if edit.note:
            params["note"] = edit.note
        return params
    if role == "inline-editor":
        # The user's instruction is a request, not a finding: it goes as its own key.
        requests = [f.message for f in inputs.flagged if f.rule == INSTRUCTION]
        params = {
            "output_path": inputs.rel(inputs.draft),
            "mutation_kind": inputs.kind,
            "target": edit.target,
            "flagged_passages": [f for f in inputs.flagged if f.rule != INSTRUCTION],
        }
        if requests:
            params["instruction"] = "\n\n".join(requests)
        if edit.changed_section:
            params["changed_section"] = edit.changed_section
        if edit.mechanics is not None:
            params["design_mechanics_path"] = inputs.rel(edit.mechanics)
        return params
    if role == "readability-auditor":
        total = len(split_lines(read_text(inputs.draft, what="design").text))
        # One pass over what the edit changed (design-sync: the whole design); no slice_count or
        # total_lines, so the whole-doc guard stays inert.
        first, last = edit.changed_lines or (1, max(total, 1))
        return {"target": "design", "target_path": inputs.rel(inputs.draft), "slice": (first, last)}
    raise InputError(
        f"role {role} takes no part in an interactive edit",
        hint="an edit runs the comprehension review and the readability auditor",
    )


def params_for(
    role: str, inputs: RoundInputs, audit: AuditSlice | None = None, edit: EditScope | None = None
) -> SpawnParams:
    """The params file's content for ``role`` in this round (``edit`` for the interactive kinds)."""
    if edit is not None:
        return SpawnParams.model_validate(_base(role, inputs) | _edit_params(role, inputs, edit))
    if role == "readability-auditor":
        if audit is None:
            raise InputError(
                "the readability auditor needs its slice",
                hint="pass the auditor's slice of the partition (designloop slices shows it)",
            )
        return SpawnParams.model_validate(
            _base(role, inputs)
            | {
                "target": "design",
                "target_path": inputs.rel(inputs.draft),
                "slice": audit.slice,
                "slice_count": audit.slice_count,
                "total_lines": audit.total_lines,
            }
        )
    builder = BUILDERS.get(role)
    if builder is None:
        known = ", ".join(sorted([*BUILDERS, "readability-auditor"]))
        raise InputError(f"unknown role {role!r}", hint=f"roles: {known}")
    return SpawnParams.model_validate(_base(role, inputs) | builder(role, inputs))


def second_check_role(kind: str) -> str:
    """The round's second check: absorption at phase 1, fidelity at phase 4."""
    return "fidelity-check" if kind == PHASE4 else "absorption-check"


def review_kind(role: str, draft: Path | None) -> str:
    """The kind a one-off review runs as: phase 4 for the fidelity check or a *-final.md draft."""
    if role == "fidelity-check" or (draft is not None and draft.name.endswith("-final.md")):
        return PHASE4
    return PHASE1


def round1_spawns(
    role: str,
    d: DesignDir,
    limits: Limits,
    draft: Path | None = None,
    slice_: Slice | None = None,
) -> list[SpawnParams]:
    """The params a role gets in round 1 of a run on ``d`` (one per slice for the auditor)."""
    kind = review_kind(role, draft)
    target = draft or (d.final if kind == PHASE4 else d.design)
    inputs = RoundInputs(d, kind, 1, target)
    if role == "design-author":
        return [params_for(role, inputs)]
    if role != "adversarial-review" and not target.is_file():
        raise InputError("no draft to review", file=target, hint="write it first, or pass --draft PATH")
    if role != "readability-auditor":
        return [params_for(role, inputs)]
    lines = split_lines(read_text(target, what="design").text)
    partition = partition_for(lines, limits)
    if slice_ is not None and slice_[1] > len(lines):
        raise InputError(
            f"--slice {slice_[0]}-{slice_[1]} runs past the end of the draft ({len(lines)} lines)",
            file=target,
            hint=f"pick lines between 1 and {len(lines)}",
        )
    parts = [slice_] if slice_ else partition
    return [params_for(role, inputs, AuditSlice(part, len(partition), len(lines))) for part in parts]
