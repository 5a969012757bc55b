"""The mechanical rules: the registry's ``mechanical`` family (params/rules.toml)."""

from __future__ import annotations

from pipeline.checks.registry import Rule, registry
from pipeline.formats.findings import Severity

SEVERITIES: tuple[Severity, ...] = ("blocker", "should-fix", "suggestion")
MECHANICAL_FAMILY = "mechanical"

__all__ = ["SEVERITIES", "Rule", "rule_table"]


def rule_table() -> dict[str, Rule]:
    """The mechanical rules by id, in the registry's order."""
    return registry().of_family(MECHANICAL_FAMILY)
