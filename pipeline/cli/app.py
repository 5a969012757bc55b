"""The typer application: the agent and run commands, and the listing of every command."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import typer
from typer.core import TyperGroup

from pipeline.cli.options import BaseUrlOpt, BudgetOpt, CostOpt, JsonOpt, ModelOpt, RoleModelOpt, RunsOpt
from pipeline.cli.output import emit_json, say, table
from pipeline.errors import ExitCode, InputError

app = typer.Typer(
    name="designloop",
    help="Write and review design documents under a strict, resumable review discipline.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help, as check, slices and gate print theirs
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from pipeline import __version__

        typer.echo(f"designloop {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", "-V", callback=_version, is_eager=True, help="print the version and exit"),
    ] = False,
) -> None:
    """Write and review design documents under a strict, resumable review discipline."""


def command_tree() -> TyperGroup:
    """The click command tree of every typer command, each parameter with a metavar that says
    what to write (``DIR``, ``N``, ``MODEL``), never a Python type."""
    from typer.core import TyperArgument

    root = typer.main.get_command(app)
    assert isinstance(root, TyperGroup)

    def walk(command: object) -> None:
        for child in getattr(command, "commands", {}).values():
            walk(child)
        if any(isinstance(p, TyperArgument) and p.required for p in getattr(command, "params", [])):
            setattr(command, "no_args_is_help", True)  # noqa: B010 (a bare command prints its help)
        for param in getattr(command, "params", []):
            if isinstance(param, TyperArgument):  # the name says what to write, never the type
                setattr(param, "display_type_rich", lambda ctx: "")  # noqa: B010
            if param.metavar is not None:
                continue
            if isinstance(param, TyperArgument):
                param.metavar = (param.name or "value").upper()
            elif getattr(param, "is_flag", False):
                param.metavar = ""
            else:
                param.metavar = _METAVARS.get(_declared(command, param.name), "TEXT")

    walk(root)
    return root


_METAVARS = {"int": "N", "float": "NUMBER", "Path": "PATH", "str": "TEXT", "bool": ""}
"""What to write for a parameter, by the Python type its command declares."""


def _declared(command: object, name: str | None) -> str:
    """The Python type a command's function declares for a parameter (``Path`` for ``Path |
    None``, ``int`` for ``list[int]``), read from the function itself: no parser's internals."""
    import inspect
    import types
    import typing

    callback = getattr(command, "callback", None)
    if callback is None or name is None:
        return ""
    try:
        hint = typing.get_type_hints(inspect.unwrap(callback)).get(name)
    except (NameError, TypeError):
        return ""
    while typing.get_origin(hint) in (typing.Union, types.UnionType, list):
        hint = next((a for a in typing.get_args(hint) if a is not type(None)), None)
    return getattr(hint, "__name__", "")


@app.command()
def roles(
    model: ModelOpt = None,
    role_model: RoleModelOpt = None,
    base_url: BaseUrlOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List each role with its tools, whether it may read the research log, and its resolved model."""
    from pipeline.agents.resolve import (
        OFFLINE,
        ModelOptions,
        check_base_url,
        parse_role_models,
        resolve_models,
    )
    from pipeline.agents.roles import load_roles
    from pipeline.settings import merged_params, repo_root

    root = repo_root()
    definitions = load_roles(root)
    check_base_url(base_url)
    options = ModelOptions(model, parse_role_models(list(role_model or ()), definitions), base_url)
    params, source = merged_params(root)
    specs = resolve_models(definitions, options, params, source=source)
    configured = sorted(set(specs.values()) - {OFFLINE})
    if configured:  # a model SDK loads only when a model is named
        from pipeline.agents.models import check_spec

        for spec in configured:
            check_spec(spec)
    rows = [
        {
            "role": r.name,
            "tools": list(r.tools),
            "tier": r.tier,
            "reads_research_log": r.reads_research_log,
            "output": r.output,
            "model": specs[r.name],
            "definition": str(r.source),
        }
        for r in definitions.values()
    ]
    if as_json:
        emit_json({"roles": rows})
        return
    cells: list[list[object]] = []
    for r in definitions.values():
        log = "reads" if r.reads_research_log else "cold"
        model = "offline engine" if specs[r.name] == OFFLINE else specs[r.name]
        cells.append([r.name, ", ".join(r.tools), log, r.tier, model])
    table(("role", "tools", "log", "tier", "model"), cells)


def _parse_slice(value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    match = re.fullmatch(r"(\d+)-(\d+)", value.strip())
    if not match or int(match.group(1)) < 1 or int(match.group(2)) < int(match.group(1)):
        raise InputError(f"--slice {value!r} is not START-END", hint="e.g. --slice 1-200")
    return int(match.group(1)), int(match.group(2))


@app.command()
def review(
    role: Annotated[str, typer.Argument(help="the role to run, e.g. readability-auditor")],
    directory: Annotated[Path, typer.Argument(help="the design directory")],
    draft: Annotated[
        Path | None, typer.Option("--draft", help="the draft to review (default per role)")
    ] = None,
    slice_: Annotated[str | None, typer.Option("--slice", help="START-END, one auditor slice")] = None,
    model: ModelOpt = None,
    role_model: RoleModelOpt = None,
    base_url: BaseUrlOpt = None,
    budget: BudgetOpt = None,
    max_cost: CostOpt = None,
    runs_dir: RunsOpt = None,
    keep_params: Annotated[
        bool, typer.Option("--keep-params", help="keep the params files under _workflow/reviews/")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Run one role once on a design directory with its round-1 params and print its typed output.

    The design directory is left as it was (params files are removed afterwards) unless
    --keep-params is given; the adversarial review appends its dated gate entry.

    Exit 0 when the role passes, 1 with findings or an INCONCLUSIVE result, 2 bad input, 4 budget.
    """
    from pipeline.agents.review import review_once
    from pipeline.agents.session import SessionOptions, check_models, open_session
    from pipeline.cli.paths import resolve
    from pipeline.formats.design_dir import open_design_dir
    from pipeline.formats.research_log import load_research_log
    from pipeline.formats.textio import read_text
    from pipeline.runs.lock import holder_for, holding, run_lock
    from pipeline.runs.preflight import (
        REVIEW,
        check_inputs,
        check_links,
        check_reviews,
        check_run_space,
        check_runs_dir,
    )

    part = _parse_slice(slice_)
    d = open_design_dir(resolve(directory) or directory)
    session = open_session(
        d.repo_root, SessionOptions(model, tuple(role_model or ()), base_url, budget, max_cost, runs_dir)
    )
    roles = session.runtime.roles
    if role not in roles:
        raise InputError(f"unknown role {role!r}", hint=f"roles: {', '.join(sorted(roles))}")
    if part is not None and role != "readability-auditor":
        raise InputError(f"--slice applies to the readability-auditor, not to {role}", hint="drop --slice")
    # Everything the review will read or write, checked before its first spawn writes a params file.
    check_models(session.runtime)
    check_links(d, REVIEW)
    check_reviews(d)
    check_runs_dir(session.runs_dir)
    check_run_space(d, session.runs_dir)
    if roles[role].reads_research_log:
        load_research_log(d.research_log)
    target = (resolve(draft) or draft).resolve() if draft else None
    if target is not None and not target.is_relative_to(d.repo_root):
        raise InputError(
            "--draft is outside the repository (no role reads there)",
            file=target,
            hint="pass a draft inside the repository",
        )
    check_inputs(d, REVIEW)  # the designs, the plan, the track files and the review log
    if target is not None and target.is_file():
        read_text(target, what="draft")
    # One at a time per design directory, runs and reviews alike: they share _workflow/reviews/.
    with holding(run_lock(d.root), holder_for(f"review-{role}"), wait=False):
        import asyncio  # only the commands that run something load it

        run = asyncio.run(
            review_once(session.runtime, role, d, session.limits, target, part, keep_params=keep_params)
        )
    total = session.runtime.ledger.total()
    failed = any(r.status != "ok" for r in run.results)
    findings = [f for r in run.results if r.review for f in r.review.findings]
    blocking = any(f.severity in ("blocker", "should-fix") for f in findings)
    if as_json:
        emit_json(
            {
                "role": role,
                "models": {role: session.runtime.model_specs.get(role, "offline")},
                "results": [r.to_json() for r in run.results],
                "usage": total.to_json(),
                "prefix_share": round(run.prefix_share, 4),
                "gate_entry": run.gate_entry,
            }
        )
    else:
        _print_review(role, run, total)
    raise typer.Exit(ExitCode.FINDINGS if failed or blocking else ExitCode.OK)


def _print_review(role: str, run: object, total: object) -> None:
    from rich.markup import escape

    from pipeline.agents.resolve import OFFLINE
    from pipeline.agents.review import ReviewRun
    from pipeline.agents.usage import Usage

    assert isinstance(run, ReviewRun) and isinstance(total, Usage)
    for result in run.results:
        engine = "the offline engine" if result.model == OFFLINE else result.model
        head = f"[bold]{role}[/bold] ({escape(engine)}): {result.status}"
        if result.review is not None:
            head += f", {result.review.verdict}"
        elif result.output is not None:
            head += f" — {escape(getattr(result.output, 'summary', ''))}"
        say(head)
        if result.error:
            say(f"  [red]{escape(result.error)}[/red]")
        if result.review and result.review.findings:
            rows = [[f.severity, f.rule, f.where(), f.message] for f in result.review.findings]
            table(("severity", "rule", "where", "message"), rows)
    if run.gate_entry:
        say("appended to the gate record:\n" + run.gate_entry, plain=True)
    cost = (
        "unpriced"
        if total.calls and not total.cost and any(r.model != OFFLINE for r in run.results)
        else f"${total.cost}"
    )
    say(
        f"tokens {total.total_tokens} ({total.calls} calls, {total.cache_hits} cached), cost {cost}",
        plain=True,
    )
