"""The discard command: withdraw a run that did not finish."""

from __future__ import annotations

from typing import Annotated

import typer

from pipeline.cli.app import app
from pipeline.cli.options import JsonOpt, RunsOpt, StoreOpt, open_store


@app.command()
def discard(
    run_id: Annotated[str, typer.Argument(help="the run to withdraw")],
    runs_dir: RunsOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Withdraw a paused, stopped or interrupted run: it is recorded as discarded, never resumed
    (by resume, a batch or a worker), and its files are left as they are. Exit 2 for a run that
    finished, is running or was discarded already."""
    from pipeline.runs.discard import discard as withdraw

    runs = open_store(store, runs_dir)
    try:
        view = withdraw(runs, run_id)
    finally:
        runs.close()
    if as_json:
        from pipeline.cli.output import emit_json

        emit_json({"run_id": run_id, "was": view.state, "state": "discarded"})
    else:
        typer.echo(
            f"run {run_id} ({view.state}) discarded: it is never resumed; its files are left as they are"
        )
