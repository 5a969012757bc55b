"""designloop rule RULE: what a rule checks, why, an example (as ``ruff rule`` does), read from
the one rule registry with this repository's overrides applied; ``--all`` lists every rule."""

from __future__ import annotations

from typing import Annotated

import typer

from pipeline.cli.app import app
from pipeline.cli.options import JsonOpt


@app.command(name="rule", no_args_is_help=True)
def rule_command(
    rule_id: Annotated[
        str | None, typer.Argument(metavar="RULE", help="a rule id (dsc-section-shape), or a family")
    ] = None,
    all_rules: Annotated[bool, typer.Option("--all", help="list every rule of every family")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Explain a rule: its family, severity, the documents it holds for, what it checks, why,
    and an example. With --all, list every rule."""
    from pipeline.checks.registry import Rule, registry
    from pipeline.checks.selection import load_config
    from pipeline.cli.output import emit_json, table, write
    from pipeline.errors import InputError
    from pipeline.settings import repo_root

    known = registry()
    config = load_config(repo_root())
    if all_rules or rule_id is None:
        if rule_id is None and not all_rules:
            raise InputError("name a rule, or pass --all", hint="e.g. designloop rule dsc-section-shape")
        rows: list[Rule] = list(known.rules.values())
        if rule_id is not None:
            rows = [known.rules[r] for r in sorted(known.expand(rule_id)) if r in known.rules]
        if as_json:
            emit_json({"rules": [config.effective(r).to_json() for r in rows]})
            return
        table(
            ("rule", "family", "severity", "profiles", "summary"),
            [[r.id, r.family, config.effective(r).severity, ",".join(r.profiles), r.summary] for r in rows],
        )
        return
    if rule_id in known.families and rule_id not in known.rules:
        raise InputError(
            f"{rule_id} is a family, not a rule", hint=f"designloop rule {rule_id} --all lists its rules"
        )
    found = config.effective(known.get(rule_id))
    if as_json:
        emit_json({"rule": found.to_json()})
        return
    family = known.families[found.family]
    overridden = found.severity != known.get(rule_id).severity
    severity = found.severity + (
        f" (designloop.toml; the default is {known.get(rule_id).severity})" if overridden else ""
    )
    holds = " and ".join(
        {"house": "designloop's own designs", "any": "any design document"}[p] for p in found.profiles
    )
    write(
        "\n".join(
            [
                f"# {found.id} ({family.title})",
                "",
                found.summary,
                "",
                f"Severity: {severity}",
                f"Holds for: {holds}",
                f"Raised by: {family.raised_by}",
                f"Fixed by `designloop check --fix`: {'yes' if found.auto_applicable else 'no'}",
                "",
                "## Why",
                "",
                found.why,
                "",
                "## Example",
                "",
                found.example.replace("\\n", "\n"),
            ]
        )
    )
