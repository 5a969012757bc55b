"""The commands that show the run records: status (one run) and runs (all of them), replayed
from their event logs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pipeline.cli.app import app
from pipeline.cli.options import JsonOpt, RunsOpt, StoreOpt, open_store

if TYPE_CHECKING:
    from pipeline.errors import InputError
    from pipeline.runs.store import RunStore
    from pipeline.runs.views import RunView


def _warn(error: InputError) -> None:
    typer.echo(f"designloop: warning: skipped a damaged run: {error.render()}", err=True)


def _directory(arg: str | None) -> Path | None:
    """The design directory ``status`` was given, or None when the argument is a run id."""
    from pipeline.cli.fast import resolve

    if arg is None:
        return None
    path = resolve(Path(arg)) or Path(arg)
    return path if path.is_dir() or "/" in arg else None


@app.command()
def status(
    run_id: Annotated[
        str | None, typer.Argument(help="a run id (the latest run by default), or a design directory")
    ] = None,
    runs_dir: RunsOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Show a run, replayed from its event log; or, given a design directory, which revision of
    each document is accepted, which is current, and why it is not ready (docs/lifecycle.md)."""
    from pipeline.errors import InputError

    directory = _directory(run_id)
    runs = open_store(store, runs_dir)
    try:
        if directory is not None:
            from pipeline.cli.lifecycle import _design, show_status

            show_status(_design(directory), runs, as_json)
            return
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
    """List the runs, replayed from their event logs (a damaged one is skipped with a warning),
    with the revision each left and its state (candidate, accepted, superseded, rejected)."""
    opened = open_store(store, runs_dir)
    try:
        views = opened.views(_warn)
        states = _states(views, opened)
    finally:
        opened.close()
    if as_json:
        typer.echo(
            json.dumps(
                [
                    {k: v for k, v in view.to_json().items() if k not in ("spawns", "checks")}
                    | {"revisions": states.get(view.run_id, [])}
                    for view in views
                ],
                indent=2,
            )
        )
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("run", "kind", "state", "round", "outcome", "revision", "tokens", "directory")
    for view in views:
        revision = ", ".join(f"{r['name']} r{r['number']} {r['state']}" for r in states.get(view.run_id, []))
        table.add_row(
            view.run_id,
            view.kind or "?",
            view.state,
            str(view.round),
            view.outcome or "-",
            revision or "-",
            str(view.tokens),
            view.directory,
        )
    Console().print(table)


def _states(views: list[RunView], store: RunStore) -> dict[str, list[dict[str, Any]]]:
    """Each run's revisions with their state, as this checkout's design directories tell it (a
    directory not in this checkout: state unknown)."""
    from pipeline.runs.lifecycle_read import revision_states

    out: dict[str, list[dict[str, Any]]] = {}
    known: dict[str, dict[tuple[str, int], str]] = {}
    for view in views:
        if not view.revisions:
            continue
        if view.directory not in known:  # one look per directory
            known[view.directory] = revision_states(store, view.run_id)
        table = known[view.directory]
        out[view.run_id] = [
            {
                "file": file,
                "name": Path(rev.path or file).name,
                "number": rev.number,
                "sha256": rev.sha256,
                "state": table.get((file, rev.number), "unknown"),
            }
            for file, rev in view.revisions.items()
        ]
    return out
