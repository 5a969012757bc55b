"""The commands that show the run records: status (one run) and runs (all of them), replayed
from their event logs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pipeline.cli.app import app
from pipeline.cli.options import JsonOpt, RunsOpt, StoreOpt, open_store
from pipeline.cli.output import cost_text, emit_json, pasteable, say, table

if TYPE_CHECKING:
    from pipeline.errors import InputError
    from pipeline.runs.run_view import RunView
    from pipeline.runs.store import RunStore


def _warn(error: InputError) -> None:
    typer.echo(f"designloop: warning: skipped a damaged run: {error.render()}", err=True)


def _directory(arg: str | None) -> Path | None:
    """The design directory ``status`` was given, or None when the argument is a run id."""
    from pipeline.cli.paths import resolve

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
    from rich.markup import escape

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
        revisions = _states([view], runs).get(view.run_id, [])
    finally:
        runs.close()
    if as_json:
        emit_json(view.to_json() | {"revision_states": revisions})
        return
    say(f"[bold]{escape(view.run_id)}[/bold] {view.kind or '?'} {escape(view.directory)}")
    say(
        f"state {view.state}, round {view.round}, outcome {view.shown_outcome()}, "
        f"review log entry {view.review_log_entry or '-'}, tokens {view.tokens}, "
        f"cost {cost_text(view.cost, view.unpriced)}, cached calls {view.cache_hits}",
        plain=True,
    )
    for part in view.declined:
        say(f"declined: {part}", plain=True)
    if revisions:
        left = ", ".join(f"{r['name']} r{r['number']} {r['state']}" for r in revisions)
        say(f"revisions: {left}", plain=True)
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
    """List the runs, replayed from their event logs (a damaged one is skipped with a warning),
    with the revision each left and its state (candidate, accepted, superseded, rejected)."""
    opened = open_store(store, runs_dir)
    try:
        views = opened.views(_warn)
        states = _states(views, opened)
    finally:
        opened.close()
    if as_json:
        skip = ("spawns", "checks")
        listed = [
            {k: v for k, v in view.to_json().items() if k not in skip}
            | {"revisions": states.get(view.run_id, [])}
            for view in views
        ]
        emit_json({"runs": listed})
        return
    rows = []
    for view in views:
        revision = ", ".join(f"{r['name']} r{r['number']} {r['state']}" for r in states.get(view.run_id, []))
        rows.append(
            [
                view.run_id,
                view.kind or "?",
                view.state,
                view.round,
                view.shown_outcome(),
                revision or "-",
                view.tokens,
                cost_text(view.cost, view.unpriced),
                view.directory,
            ]
        )
    table(("run", "kind", "state", "round", "outcome", "revision", "tokens", "cost", "directory"), rows)


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
