"""The mechanical rule table (params/rules.toml) loaded as typed data."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from pydantic import BaseModel, ConfigDict, RootModel

from pipeline.formats.findings import Severity
from pipeline.settings import data_dir, load_toml
from pipeline.validation import toml_locator, toml_name, validated

SEVERITIES: tuple[Severity, ...] = ("blocker", "should-fix", "suggestion")


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    severity: Severity
    auto_applicable: bool
    summary: str


class RuleSpec(BaseModel):
    """One row of params/rules.toml."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    severity: Severity
    auto_applicable: bool = False
    summary: str = ""


class RuleFile(RootModel[dict[str, RuleSpec]]):
    """params/rules.toml: one table per rule ID."""


@cache
def rule_table() -> dict[str, Rule]:
    path = data_dir("params") / "rules.toml"
    hint = "severity is blocker, should-fix or suggestion; reinstall designloop, or restore the file"
    rows = validated(RuleFile, load_toml(path), path, hint, locate=toml_locator(path), name=toml_name)
    return {
        rule_id: Rule(rule_id, spec.severity, spec.auto_applicable, spec.summary)
        for rule_id, spec in rows.root.items()
    }
