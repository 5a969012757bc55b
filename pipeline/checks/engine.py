"""The mechanical checks of docs/formats.md §6: load the documents, run one function per rule in
params/rules.toml, return the findings in a stable order."""

from __future__ import annotations

from pipeline.checks import anchors, prose, structure
from pipeline.checks.context import CHECKS, CheckContext, CheckRequest, Scope
from pipeline.checks.prose import find_asides
from pipeline.checks.table import Rule, rule_table
from pipeline.errors import InputError, WiringError
from pipeline.formats.design_doc import load_design
from pipeline.formats.findings import Finding, sort_findings
from pipeline.formats.kinds import Target
from pipeline.formats.plan import PlanFile, load_plan_file, load_tracks
from pipeline.settings import Limits

__all__ = ["CheckRequest", "Scope", "Target", "find_asides", "load_context", "run_checks", "run_rules"]
_RULE_MODULES = (anchors, prose, structure)  # importing them registers their rules


def _verify_table(rules: dict[str, Rule]) -> None:
    missing, extra = set(rules) - set(CHECKS), set(CHECKS) - set(rules)
    if missing or extra:
        raise WiringError(
            f"rule table and checks disagree: no code for {sorted(missing)}, no table row for {sorted(extra)}"
        )


def load_context(request: CheckRequest, limits: Limits) -> CheckContext:
    if request.scope == "bounded" and not request.changed_section:
        raise InputError(
            "--scope bounded needs --changed-section NAME",
            hint="name the changed section, or use --scope whole-doc",
        )
    if request.target in ("mechanics", "both") and request.mechanics_path is None:
        raise InputError(
            f"--target {request.target} needs --design-mechanics-path",
            hint="pass the companion's path, or use --target design",
        )
    if request.design_bytes is not None:
        from pipeline.formats.design_doc import parse_design
        from pipeline.formats.textio import decode

        design = parse_design(decode(request.design_bytes, request.design_path))
    else:
        design = load_design(request.design_path, what="design")
    mechanics = (
        load_design(request.mechanics_path, what="mechanics companion") if request.mechanics_path else None
    )
    plans: list[PlanFile] = []
    if request.plan_path is not None:
        plans.append(load_plan_file(request.plan_path))
    if request.plan_dir is not None:
        plans.extend(load_tracks(request.plan_dir))
    rules = rule_table()
    _verify_table(rules)
    return CheckContext(request, design, mechanics, plans, limits, rules)


def run_rules(ctx: CheckContext) -> list[Finding]:
    """Every mechanical rule over a loaded context, the findings in a stable order."""
    for rule_id in ctx.rules:
        CHECKS[rule_id](ctx)
    return sort_findings(ctx.findings)


def run_checks(request: CheckRequest, limits: Limits | None = None) -> list[Finding]:
    return run_rules(load_context(request, limits or Limits()))
