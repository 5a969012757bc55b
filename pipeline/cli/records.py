"""The commands that show the run records: status (one run) and runs (all of them), replayed
from their event logs."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from pipeline.cli.app import app
from pipeline.cli.options import JsonOpt, RunsOpt, StoreOpt, open_store

if TYPE_CHECKING:
    from pipeline.errors import InputError


def _warn(error: InputError) -> None:
    typer.echo(f"designloop: warning: skipped a damaged run: {error.render()}", err=True)


@app.command()
def status(
    run_id: Annotated[str | None, typer.Argument(help="a run id; the latest run by default")] = None,
    runs_dir: RunsOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Show a run, replayed from its event log."""
    from pipeline.errors import InputError

    runs = open_store(store, runs_dir)
    try:
        if run_id is None:
            views = runs.views(_warn)
            if not views:
                raise InputError(
                    "no runs yet", file=runs.url or runs.runs_dir, hint="start one with designloop create DIR"
                )
            view = views[-1]
        else:
            view = runs.view(run_id)
    finally:
        runs.close()
    if as_json:
        typer.echo(json.dumps(view.to_json(), indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"[bold]{view.run_id}[/bold] {view.kind or '?'} {view.directory}")
    console.print(
        f"state {view.state}, round {view.round}, outcome {view.outcome or '-'}, "
        f"review log entry {view.review_log_entry or '-'}, tokens {view.tokens}, "
        f"cost ${view.cost:.4f}, cached calls {view.cache_hits}"
    )
    if view.message:
        console.print(view.message)
    table = Table("round", "role", "slice", "status", "findings", "tokens", "cached")
    for spawn in view.spawns.values():
        where = f"{spawn.slice[0]}-{spawn.slice[1]}" if spawn.slice else ""
        table.add_row(
            str(spawn.round),
            spawn.role,
            where,
            spawn.status,
            str(spawn.findings),
            str(spawn.tokens),
            str(spawn.cache_hits),
        )
    console.print(table)


@app.command()
def runs(runs_dir: RunsOpt = None, as_json: JsonOpt = False, store: StoreOpt = None) -> None:
    """List the runs, replayed from their event logs (a damaged one is skipped with a warning)."""
    opened = open_store(store, runs_dir)
    try:
        views = opened.views(_warn)
    finally:
        opened.close()
    if as_json:
        typer.echo(
            json.dumps(
                [
                    {k: v for k, v in view.to_json().items() if k not in ("spawns", "checks")}
                    for view in views
                ],
                indent=2,
            )
        )
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("run", "kind", "state", "round", "outcome", "tokens", "directory")
    for view in views:
        table.add_row(
            view.run_id,
            view.kind or "?",
            view.state,
            str(view.round),
            view.outcome or "-",
            str(view.tokens),
            view.directory,
        )
    Console().print(table)
