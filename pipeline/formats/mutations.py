"""The interactive mutation kinds as data (params/mutations.toml): target, cold-read scope, mode."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator

from pipeline.errors import InputError
from pipeline.formats.kinds import EDIT_KINDS, Target
from pipeline.settings import data_dir, load_toml
from pipeline.validation import toml_locator, toml_name, validated

ColdRead = Literal["bounded", "bounded-roadmap", "whole-doc", "none"]
TargetRule = Literal["design", "mechanics", "both", "design-or-both"]
Mode = Literal["working", "direct"]
INTERACTIVE_KINDS = EDIT_KINDS


@dataclass(frozen=True, slots=True)
class KindRule:
    """One row of the seed's table."""

    kind: str
    mode: Mode
    touches: str
    target: TargetRule
    cold_read: ColdRead
    prose_pass: bool

    @property
    def reviewed(self) -> bool:
        return self.cold_read != "none"

    def resolve_target(self, touched_mechanics: bool) -> Target:
        """The mechanical --target for this mutation: design-or-both becomes both when the
        edit also changed design-mechanics.md."""
        if self.target == "design-or-both":
            return "both" if touched_mechanics else "design"
        return self.target


class KindRow(BaseModel):
    """One ``[kinds.<kind>]`` table of params/mutations.toml."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    mode: Mode
    touches: str = ""
    target: TargetRule
    cold_read: ColdRead
    prose_pass: bool = False


class KindsFile(BaseModel):
    """params/mutations.toml: a row for exactly the interactive kinds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kinds: dict[str, KindRow]

    @field_validator("kinds")
    @classmethod
    def _every_kind(cls, kinds: dict[str, KindRow]) -> dict[str, KindRow]:
        if set(kinds) != set(INTERACTIVE_KINDS):
            raise ValueError(f"the table lists {sorted(kinds)}, not exactly the interactive kinds")
        return kinds


@cache
def kind_rules() -> dict[str, KindRule]:
    path = data_dir("params") / "mutations.toml"
    hint = f"the kinds are {', '.join(INTERACTIVE_KINDS)}; reinstall designloop, or restore the file"
    table = validated(KindsFile, load_toml(path), path, hint, locate=toml_locator(path), name=toml_name)
    return {kind: KindRule(kind, **row.model_dump()) for kind, row in table.kinds.items()}


def kind_rule(kind: str) -> KindRule:
    rules = kind_rules()
    if kind not in rules:
        raise InputError(
            f"{kind!r} is not an interactive mutation kind", hint=f"one of: {', '.join(INTERACTIVE_KINDS)}"
        )
    return rules[kind]
