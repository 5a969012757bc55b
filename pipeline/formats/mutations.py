"""The interactive mutation kinds as data (params/mutations.toml): target, cold-read scope, mode."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Literal

from pipeline.errors import InputError
from pipeline.formats.kinds import EDIT_KINDS
from pipeline.settings import data_dir, load_toml

ColdRead = Literal["bounded", "bounded-roadmap", "whole-doc", "none"]
TargetRule = Literal["design", "mechanics", "both", "design-or-both"]
Mode = Literal["working", "direct"]
INTERACTIVE_KINDS = EDIT_KINDS
COLD_READS = frozenset({"bounded", "bounded-roadmap", "whole-doc", "none"})
TARGETS = frozenset({"design", "mechanics", "both", "design-or-both"})


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

    def resolve_target(self, touched_mechanics: bool) -> Literal["design", "mechanics", "both"]:
        """The mechanical --target for this mutation: design-or-both becomes both when the
        edit also changed design-mechanics.md."""
        if self.target == "design-or-both":
            return "both" if touched_mechanics else "design"
        return self.target


@cache
def kind_rules() -> dict[str, KindRule]:
    path = data_dir("params") / "mutations.toml"
    raw = load_toml(path).get("kinds", {})
    rules: dict[str, KindRule] = {}
    for kind, row in raw.items():
        if not isinstance(row, dict):
            raise InputError(
                f"[kinds.{kind}] must be a table", file=path, hint="reinstall designloop, or restore the file"
            )
        mode, target, cold = row.get("mode"), row.get("target"), row.get("cold_read")
        if mode not in ("working", "direct") or target not in TARGETS or cold not in COLD_READS:
            raise InputError(
                f"[kinds.{kind}] has a bad mode, target or cold_read",
                file=path,
                hint="reinstall designloop, or restore the file",
            )
        rules[kind] = KindRule(
            kind=kind,
            mode="working" if mode == "working" else "direct",
            touches=str(row.get("touches", "")),
            target=target,
            cold_read=cold,
            prose_pass=bool(row.get("prose_pass", False)),
        )
    if set(rules) != set(INTERACTIVE_KINDS):
        raise InputError(
            "params/mutations.toml does not list exactly the interactive kinds",
            file=path,
            hint=f"expected {', '.join(INTERACTIVE_KINDS)}",
        )
    return rules


def kind_rule(kind: str) -> KindRule:
    rules = kind_rules()
    if kind not in rules:
        raise InputError(
            f"{kind!r} is not an interactive mutation kind", hint=f"one of: {', '.join(INTERACTIVE_KINDS)}"
        )
    return rules[kind]
