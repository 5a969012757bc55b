"""The report and estimate commands."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pipeline.cli.app import JsonOpt, ModelOpt, RoleModelOpt, RunsOpt, app
from pipeline.cli.runs import runs_dir_of


@app.command()
def report(
    run_id: Annotated[str, typer.Argument(help="the run to report on")],
    out: Annotated[
        Path | None, typer.Option("--out", help="where to write report.html and report.md (default: the run)")
    ] = None,
    runs_dir: RunsOpt = None,
) -> None:
    """Write a self-contained HTML report of a run (and Markdown beside it) from its records."""
    from pipeline.formats.textio import atomic_write
    from pipeline.runs.report import load_report, render_html, render_markdown
    from pipeline.runs.setup import run_dir_for

    run_dir = run_dir_for(runs_dir_of(runs_dir), run_id)
    data = load_report(run_dir)
    target = (out or run_dir).resolve()
    atomic_write(target / "report.html", render_html(data))
    atomic_write(target / "report.md", render_markdown(data))
    typer.echo(str(target / "report.html"))
    typer.echo(str(target / "report.md"))


@app.command()
def estimate(
    directories: Annotated[list[str], typer.Argument(help="design directories or globs, e.g. 'docs/adr/*'")],
    kind: Annotated[str, typer.Option("--kind", help="create or final")] = "create",
    model: ModelOpt = None,
    role_model: RoleModelOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Print the spawns, tokens and cost range a run would take, before running it."""
    import json

    from pipeline.agents.estimate import estimate as estimate_dir
    from pipeline.agents.session import SessionOptions, open_session
    from pipeline.errors import InputError
    from pipeline.formats.design_dir import expand_directories, open_design_dir
    from pipeline.formats.kinds import PHASE1, PHASE4
    from pipeline.settings import repo_root

    kinds = {"create": PHASE1, "final": PHASE4}
    if kind not in kinds:
        raise InputError(f"--kind {kind!r} is not create or final", hint="e.g. --kind final")
    root = repo_root()
    session = open_session(root, SessionOptions(model, tuple(role_model or ()), no_cache=True))
    rows = [
        estimate_dir(open_design_dir(p), kinds[kind], session) for p in expand_directories(directories, root)
    ]
    if as_json:
        typer.echo(json.dumps([r.to_json() for r in rows], indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("directory", "kind", "slices", "spawns", "tokens", "cost (USD)")
    for r in rows:
        cost = f"{r.low.cost:.4f} – {r.high.cost:.4f}"
        if r.high.unpriced:
            cost += f" (no price for {', '.join(sorted(r.high.unpriced))})"
        table.add_row(
            r.directory,
            r.kind,
            str(r.slices),
            f"{r.low.spawns}–{r.high.spawns}",
            f"{r.low.tokens}–{r.high.tokens}",
            cost,
        )
    Console().print(table)
