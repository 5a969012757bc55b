"""The commands that show the run records: status (one run) and runs (all of them), replayed
from their event logs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from pipeline.cli.app import app
from pipeline.cli.options import JsonOpt, RunsOpt, StoreOpt, open_store
from pipeline.cli.output import cost_text, emit_json, pasteable, say, table

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
    from rich.markup import escape

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
        emit_json(view.to_json())
        return
    say(f"[bold]{escape(view.run_id)}[/bold] {view.kind or '?'} {escape(view.directory)}")
    say(
        f"state {view.state}, round {view.round}, outcome {view.outcome or '-'}, "
        f"review log entry {view.review_log_entry or '-'}, tokens {view.tokens}, "
        f"cost {cost_text(view.cost, view.unpriced)}, cached calls {view.cache_hits}",
        plain=True,
    )
    if view.message:
        say(pasteable(view.message), plain=True)
    rows = []
    for spawn in view.spawns.values():
        where = f"{spawn.slice[0]}-{spawn.slice[1]}" if spawn.slice else ""
        rows.append(
            [spawn.round, spawn.role, where, spawn.status, spawn.findings, spawn.tokens, spawn.cache_hits]
        )
    table(("round", "role", "slice", "status", "findings", "tokens", "cached"), rows)


@app.command()
def runs(runs_dir: RunsOpt = None, as_json: JsonOpt = False, store: StoreOpt = None) -> None:
    """List the runs, replayed from their event logs (a damaged one is skipped with a warning)."""
    opened = open_store(store, runs_dir)
    try:
        views = opened.views(_warn)
    finally:
        opened.close()
    if as_json:
        listed = [
            {k: v for k, v in view.to_json().items() if k not in ("spawns", "checks")} for view in views
        ]
        emit_json({"runs": listed})
        return
    rows = [
        [
            view.run_id,
            view.kind or "?",
            view.state,
            view.round,
            view.outcome or "-",
            view.tokens,
            cost_text(view.cost, view.unpriced),
            view.directory,
        ]
        for view in views
    ]
    table(("run", "kind", "state", "round", "outcome", "tokens", "cost", "directory"), rows)
