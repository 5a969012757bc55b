"""The one rule registry (params/rules.toml): every rule of every family, with its id, family,
severity, the profiles it holds for, what it checks, why and an example.

`check`'s selection and suppression, the severity overrides of a designloop.toml's
``[rules.ID]`` tables and ``designloop rule RULE`` all read it. A family adds a rule by adding a
table to the data file; nothing here names a rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, model_validator

from pipeline.errors import InputError
from pipeline.formats.findings import Severity
from pipeline.settings import data_dir, load_toml
from pipeline.validation import did_you_mean, toml_locator, toml_name, validated

Profile = Literal["house", "any"]
PROFILES: tuple[Profile, ...] = get_args(Profile)
ALL = "ALL"
"""The selector that names every rule (ruff's ``ALL``)."""


class FamilySpec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    title: str
    raised_by: str
    prefix: str | None = None
    """Rule ids that start with this belong to the family's one row (``proselint/<check>``)."""


class RuleSpec(BaseModel):
    """One ``[rules.ID]`` table of params/rules.toml."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    family: str
    severity: Severity
    profiles: list[Profile]
    auto_applicable: bool = False
    summary: str
    why: str
    example: str


class RegistryFile(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    families: dict[str, FamilySpec]
    rules: dict[str, RuleSpec]

    @model_validator(mode="after")
    def _families_known(self) -> RegistryFile:
        for rule_id, spec in self.rules.items():
            if spec.family not in self.families:
                raise ValueError(
                    f"rule {rule_id} names family {spec.family!r}, which has no [families] table"
                )
            if not spec.profiles:
                raise ValueError(f"rule {rule_id} holds for no profile")
        return self


@dataclass(frozen=True, slots=True)
class Rule:
    """A rule as every reader of the registry sees it."""

    id: str
    family: str
    severity: Severity
    profiles: tuple[Profile, ...]
    auto_applicable: bool
    summary: str
    why: str
    example: str

    def holds_for(self, profile: Profile) -> bool:
        return profile in self.profiles

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "family": self.family,
            "severity": self.severity,
            "profiles": list(self.profiles),
            "auto_applicable": self.auto_applicable,
            "summary": self.summary,
            "why": self.why,
            "example": self.example,
        }


@dataclass(frozen=True, slots=True)
class Family:
    name: str
    title: str
    raised_by: str
    prefix: str | None


@dataclass(frozen=True, slots=True)
class Registry:
    rules: dict[str, Rule]
    families: dict[str, Family]

    def of_family(self, family: str) -> dict[str, Rule]:
        return {rule_id: rule for rule_id, rule in self.rules.items() if rule.family == family}

    def find(self, rule_id: str) -> Rule | None:
        """The rule ``rule_id`` names: its own row, or its family's row for an id under a
        family's prefix (``proselint/typography.symbols``)."""
        if rule_id in self.rules:
            return self.rules[rule_id]
        for family in self.families.values():
            if family.prefix and rule_id.startswith(family.prefix):
                rows = self.of_family(family.name)
                return next(iter(rows.values()), None)
        return None

    def get(self, rule_id: str, what: str = "rule") -> Rule:
        """The rule, or bad input naming the likeliest one meant."""
        rule = self.find(rule_id)
        if rule is None:
            raise self.unknown(rule_id, what)
        return rule

    def unknown(
        self, name: str, what: str = "rule", file: str | None = None, line: int | None = None
    ) -> InputError:
        close = did_you_mean(name, [*self.rules, *self.families])
        guess = f"did you mean {close}? " if close else ""
        return InputError(
            f"unknown {what} {name!r}",
            file=file,
            line=line,
            hint=f"{guess}designloop rule --all lists every rule",
        )

    def expand(self, selector: str, file: str | None = None, line: int | None = None) -> frozenset[str]:
        """The rule ids a selector names: ``ALL``, a family (``mechanical``), a rule id, or the
        start of rule ids (``dsc``, ``hs-``), as ruff's select takes codes and prefixes."""
        if selector == ALL:
            return frozenset(self.rules)
        if selector in self.families:
            return frozenset(self.of_family(selector))
        if self.find(selector) is not None:
            return frozenset({selector})
        start = selector if selector.endswith("-") else selector + "-"
        matched = frozenset(rule_id for rule_id in self.rules if rule_id.startswith(start))
        if not matched:
            raise self.unknown(selector, "rule or family", file, line)
        return matched


def _load(path_name: str = "rules.toml") -> Registry:
    path = data_dir("params") / path_name
    hint = "every rule names a family, a severity (blocker, should-fix, suggestion) and its profiles"
    data = validated(RegistryFile, load_toml(path), path, hint, locate=toml_locator(path), name=toml_name)
    families = {
        name: Family(name, spec.title, spec.raised_by, spec.prefix) for name, spec in data.families.items()
    }
    rules = {
        rule_id: Rule(
            rule_id,
            spec.family,
            spec.severity,
            tuple(spec.profiles),
            spec.auto_applicable,
            spec.summary,
            spec.why,
            spec.example,
        )
        for rule_id, spec in data.rules.items()
    }
    return Registry(rules, families)


@cache
def registry() -> Registry:
    """The shipped registry, read once per process."""
    return _load()
