"""Which rules `check` runs on which file, at which severity: the profile a document gets, the
``[check]`` table (select, extend-select, ignore, per-file-ignores) and the ``[rules.ID]``
severity overrides of a designloop.toml (or of pyproject.toml's ``[tool.designloop]``), and the
command line's ``--select`` / ``--ignore``, all read against the one rule registry.

Selection works as ruff's: a selector is a rule id, a family, the start of rule ids (``dsc``,
``hs-``) or ``ALL``; ``select`` replaces the profile's rules, ``extend-select`` adds to them,
``ignore`` takes rules away (it wins over a select), ``per-file-ignores`` takes rules away from
the files a glob matches. Unknown ids are bad input, named with the likeliest one meant.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pipeline.checks.registry import Profile, Registry, Rule, registry
from pipeline.formats.findings import Severity
from pipeline.settings import USER_PARAMS, load_toml
from pipeline.validation import Loc, toml_locator, toml_name, validated

PYPROJECT = "pyproject.toml"
TOOL = ("tool", "designloop")
STAMP_RE = re.compile(r"^<!-- workflow-sha: [0-9a-f]{40} -->$")


class CheckTable(BaseModel):
    """``[check]`` in designloop.toml (``[tool.designloop.check]`` in pyproject.toml)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)

    select: list[str] | None = None
    extend_select: list[str] = Field(default_factory=list, alias="extend-select")
    ignore: list[str] = Field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = Field(default_factory=dict, alias="per-file-ignores")
    profile: Literal["auto", "house", "any"] = "auto"


class RuleOverride(BaseModel):
    """``[rules.ID]`` in designloop.toml: a rule's severity for this repository."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    severity: Severity


class CheckSettings(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    check: CheckTable = CheckTable()
    rules: dict[str, RuleOverride] = Field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CheckConfig:
    """The selection in force, every id in it checked against the registry."""

    select: frozenset[str] | None = None
    extend: frozenset[str] = frozenset()
    ignore: frozenset[str] = frozenset()
    per_file: tuple[tuple[str, frozenset[str]], ...] = ()
    severities: dict[str, Severity] = field(default_factory=dict)
    profile: Literal["auto", "house", "any"] = "auto"
    source: Path | None = None
    root: Path | None = None

    def effective(self, rule: Rule) -> Rule:
        """The rule with this repository's severity."""
        severity = self.severities.get(rule.id)
        return replace(rule, severity=severity) if severity is not None else rule

    def with_command_line(
        self, select: list[str], ignore: list[str], profile: str | None, known: Registry | None = None
    ) -> CheckConfig:
        """``--select`` replaces the configured selection; ``--ignore`` adds to what is ignored."""
        reg = known or registry()
        chosen = self.select if not select else _expand_all(reg, select, None, None)
        return replace(
            self,
            select=chosen,
            ignore=self.ignore | _expand_all(reg, ignore, None, None),
            profile=self.profile if profile is None else _profile(profile),
        )

    def active(self, rule: Rule, path: str, profile: Profile) -> bool:
        """Whether ``rule`` runs on the file at ``path`` (a document of ``profile``)."""
        chosen = rule.id in self.select if self.select is not None else rule.holds_for(profile)
        if not (chosen or rule.id in self.extend) or rule.id in self.ignore:
            return False
        relative = self._relative(path)
        return not any(rule.id in ids and fnmatch.fnmatch(relative, glob) for glob, ids in self.per_file)

    def _relative(self, path: str) -> str:
        given = Path(path)
        if self.root is not None and given.is_absolute():
            try:
                return given.relative_to(self.root).as_posix()
            except ValueError:
                return given.as_posix()
        return given.as_posix()


PROFILE_CHOICES: tuple[Literal["auto", "house", "any"], ...] = ("auto", "house", "any")


def _profile(value: str) -> Literal["auto", "house", "any"]:
    for choice in PROFILE_CHOICES:
        if value == choice:
            return choice
    from pipeline.errors import InputError

    raise InputError(f"--profile {value!r} is not auto, house or any", hint="e.g. --profile any")


def _expand_all(reg: Registry, selectors: list[str], file: Path | None, line: int | None) -> frozenset[str]:
    out: set[str] = set()
    for selector in selectors:
        for item in filter(None, re.split(r"[,\s]+", selector)):
            out |= reg.expand(item, str(file) if file else None, line)
    return frozenset(out)


def _settings_source(root: Path) -> tuple[dict[str, Any], Path, Loc] | None:
    """The user's settings: designloop.toml at the repository root, else pyproject.toml's
    ``[tool.designloop]``; with the location prefix of the tables in the file."""
    own = root / USER_PARAMS
    if own.is_file():
        return load_toml(own), own, ()
    pyproject = root / PYPROJECT
    if pyproject.is_file():
        data: Any = load_toml(pyproject)
        for part in TOOL:
            data = data.get(part) if isinstance(data, dict) else None
        if isinstance(data, dict):
            return data, pyproject, TOOL
    return None


def load_config(root: Path, known: Registry | None = None) -> CheckConfig:
    """The ``[check]`` and ``[rules.ID]`` settings of the repository at ``root``."""
    found = _settings_source(root)
    if found is None:
        return CheckConfig(root=root)
    data, source, prefix = found
    locate = toml_locator(source)

    def at(loc: Loc) -> int | None:
        return locate((*prefix, *loc))

    hint = "see docs/checks.md, 'Selecting rules'"
    settings = validated(
        CheckSettings, data, source, hint, locate=at, name=lambda loc: toml_name((*prefix, *loc))
    )
    reg = known or registry()
    for rule_id in settings.rules:
        if reg.find(rule_id) is None:
            raise reg.unknown(rule_id, "rule", str(source), at(("rules", rule_id)))
    table = settings.check
    per_file = tuple(
        (glob, _expand_all(reg, ids, source, at(("check", "per-file-ignores", glob))))
        for glob, ids in table.per_file_ignores.items()
    )
    return CheckConfig(
        select=_expand_all(reg, table.select, source, at(("check", "select")))
        if table.select is not None
        else None,
        extend=_expand_all(reg, table.extend_select, source, at(("check", "extend-select"))),
        ignore=_expand_all(reg, table.ignore, source, at(("check", "ignore"))),
        per_file=per_file,
        severities={rule_id: override.severity for rule_id, override in settings.rules.items()},
        profile=table.profile,
        source=source,
        root=root,
    )


@dataclass(frozen=True, slots=True)
class ProfileChoice:
    profile: Profile
    why: str


def profile_of(
    design: Path, first_line: str | None, forced: Literal["auto", "house", "any"] = "auto"
) -> ProfileChoice:
    """The profile a design document gets: designloop's own designs (a design directory with a
    research log, or a stamped design) get the house rules; any other Markdown the rules that
    hold for any design document."""
    if forced != "auto":
        return ProfileChoice(forced, "chosen by --profile or [check] profile")
    if first_line is not None and STAMP_RE.match(first_line.strip()):
        return ProfileChoice("house", "stamped by designloop")
    here = design.resolve().parent
    for workflow in (here, here / "_workflow"):
        if workflow.name == "_workflow" and (workflow / "research-log.md").is_file():
            return ProfileChoice("house", "in a design directory with a research log")
    return ProfileChoice("any", "not a designloop design: no research log beside it, no stamp")
