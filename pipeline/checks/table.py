"""The mechanical rule table (params/rules.toml) loaded as typed data."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from pipeline.errors import InputError
from pipeline.formats.findings import Severity
from pipeline.settings import data_dir, load_toml

SEVERITIES: tuple[Severity, ...] = ("blocker", "should-fix", "suggestion")


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    severity: Severity
    auto_applicable: bool
    summary: str


@cache
def rule_table() -> dict[str, Rule]:
    path = data_dir("params") / "rules.toml"
    table: dict[str, Rule] = {}
    for rule_id, spec in load_toml(path).items():
        severity = spec.get("severity")
        if severity not in SEVERITIES:
            raise InputError(
                f"rule {rule_id} has unknown severity {severity!r}",
                file=path,
                hint="severity is blocker, should-fix or suggestion",
            )
        table[rule_id] = Rule(
            rule_id, severity, bool(spec.get("auto_applicable", False)), str(spec.get("summary", ""))
        )
    return table
