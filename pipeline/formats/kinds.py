"""The mutation kinds (the seed's mode table) and how the tool groups them."""

from __future__ import annotations

from typing import Literal

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
PHASE1: Kind = "phase1-creation"
PHASE4: Kind = "phase4-creation"
CREATION_KINDS: frozenset[str] = frozenset({PHASE1, PHASE4})
MECHANICS_EDIT: Kind = "mechanics-edit"
DESIGN_SYNC: Kind = "design-sync"
MUTATION_KINDS: frozenset[str] = frozenset(
    {
        PHASE1,
        PHASE4,
        MECHANICS_EDIT,
        DESIGN_SYNC,
        "content-edit",
        "section-add",
        "section-remove",
        "section-rename",
        "section-move",
        "structural-rewrite",
        "length-trigger-crossing",
    }
)
