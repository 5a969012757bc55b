"""The config command: the configuration a run would use, and where each value came from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.cli.app import app
from pipeline.cli.options import BaseUrlOpt, JsonOpt, ModelOpt, RoleModelOpt
from pipeline.cli.output import emit_json, table

TABLES = ("partition", "loop", "limits", "run", "worker")


def settings_rows(root: Path) -> list[dict[str, Any]]:
    """Every setting of the tables above: its value and the file (and line) it came from."""
    from pipeline.settings import USER_PARAMS, merged_params, user_params
    from pipeline.validation import toml_locator

    data, _ = merged_params(root)
    user = root / USER_PARAMS
    given = user_params(user) if user.is_file() else {}
    locate = toml_locator(user)
    rows = []
    for name in TABLES:
        for key, value in data.get(name, {}).items():
            if key not in given.get(name, {}):
                where = "params/defaults.toml"  # designloop's own defaults, wherever it is installed
            else:
                line = locate((name, key))
                where = f"{USER_PARAMS}:{line}" if line else USER_PARAMS  # relative to the repository
            rows.append({"setting": f"[{name}] {key}", "value": value, "from": where})
    return rows


@app.command()
def config(
    model: ModelOpt = None,
    role_model: RoleModelOpt = None,
    base_url: BaseUrlOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Print the resolved configuration: every setting and each role's model, with where each
    came from (a flag, DESIGNLOOP_MODEL, designloop.toml and its line, or the defaults).

    designloop.toml is checked first: an unknown table or key exits 2 naming it."""
    from pipeline.agents.resolve import (
        ModelOptions,
        check_base_url,
        parse_role_models,
        resolve_with_sources,
    )
    from pipeline.agents.roles import load_roles
    from pipeline.settings import USER_PARAMS, merged_params, repo_root, run_settings

    root = repo_root()
    definitions = load_roles(root)
    check_base_url(base_url)
    params, source = merged_params(root)
    run_settings(params, source)  # the values of [run] checked as a run checks them
    options = ModelOptions(model, parse_role_models(list(role_model or ()), definitions), base_url)
    models = resolve_with_sources(definitions, options, params, source=source)
    settings = settings_rows(root)
    user = root / USER_PARAMS
    if as_json:
        emit_json(
            {
                "repository": str(root),
                "user_file": USER_PARAMS if user.is_file() else None,
                "settings": settings,
                "models": [
                    {"role": role, "model": spec, "from": why} for role, (spec, why) in models.items()
                ],
            }
        )
        return
    rows: list[list[object]] = [[r["setting"], r["value"], r["from"]] for r in settings]
    rows += [[f"model for {role}", spec, why] for role, (spec, why) in models.items()]
    table(
        ("setting", "value", "from"),
        rows,
        title=f"designloop configuration ({user if user.is_file() else 'defaults'})",
    )
