"""The names the whole tool shares, each defined once as a ``Literal``: the mutation kinds (the
seed's mode table) and how the tool groups them, the role names, the documents a run targets
and a spawn's status. Every list of them is derived from the ``Literal`` (``typing.get_args``),
so a mistyped name is a type error, not a string nobody matches."""

from __future__ import annotations

from typing import Literal, TypeGuard, get_args

Kind = Literal[
    "phase1-creation",
    "phase4-creation",
    "mechanics-edit",
    "design-sync",
    "content-edit",
    "section-add",
    "section-remove",
    "section-rename",
    "section-move",
    "structural-rewrite",
    "length-trigger-crossing",
]
CreationKind = Literal["phase1-creation", "phase4-creation"]
"""The kinds that write a whole document from its sources (``create`` and ``final``)."""
EditKind = Literal[
    "content-edit",
    "section-add",
    "section-remove",
    "section-rename",
    "section-move",
    "structural-rewrite",
    "length-trigger-crossing",
    "mechanics-edit",
    "design-sync",
]
"""The interactive kinds (``designloop edit --kind``)."""

PHASE1: CreationKind = "phase1-creation"
PHASE4: CreationKind = "phase4-creation"
MECHANICS_EDIT: EditKind = "mechanics-edit"
DESIGN_SYNC: EditKind = "design-sync"
LENGTH_TRIGGER: EditKind = "length-trigger-crossing"

MUTATION_KINDS: frozenset[Kind] = frozenset(get_args(Kind))
CREATION_KINDS: frozenset[Kind] = frozenset(get_args(CreationKind))
EDIT_KINDS: tuple[EditKind, ...] = get_args(EditKind)
"""In the order the edit command lists them."""


def is_edit_kind(value: str) -> TypeGuard[EditKind]:
    return value in EDIT_KINDS


def is_creation_kind(value: str) -> TypeGuard[CreationKind]:
    return value in CREATION_KINDS


Role = Literal[
    "design-author",
    "readability-auditor",
    "absorption-check",
    "fidelity-check",
    "comprehension-review",
    "inline-editor",
    "adversarial-review",
]
"""The roles (each defined by agents/<role>.md)."""
ROLES: tuple[Role, ...] = get_args(Role)


def is_role(value: str) -> TypeGuard[Role]:
    return value in ROLES


Target = Literal["design", "mechanics", "both"]
"""The document(s) a run writes or checks: design.md, its mechanics companion, or both."""
TARGETS: tuple[Target, ...] = get_args(Target)

RunVerdict = Literal["PASS", "BLOCKER REMAINS", "SHOULD-FIX REMAINS", "INCONCLUSIVE", "DECISION NEEDED"]
"""How a run ended (the seed's Outcomes); not a gate entry's verdict (formats.research_log)."""

Status = Literal["ok", "inconclusive"]
"""How a spawn ended: a valid output, or none after its one re-run (the seed's INCONCLUSIVE)."""
STATUSES: tuple[Status, ...] = get_args(Status)
