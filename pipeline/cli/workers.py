"""designloop enqueue create|final DIR_OR_GLOB... and designloop worker: runs on many machines
over the PostgreSQL store's queue (docs/scale.md)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from pipeline.cli.app import (
    BaseUrlOpt,
    BudgetOpt,
    CostOpt,
    JsonOpt,
    ModelOpt,
    RoleModelOpt,
    RunsOpt,
    StoreOpt,
    app,
)
from pipeline.cli.batch import DirsArg, _present
from pipeline.cli.runs import FailOnOpt, NoWarmupOpt, _fail_on, runs_dir_of
from pipeline.formats.kinds import CreationKind

enqueue_app = typer.Typer(
    name="enqueue",
    help="Queue create or final runs for the workers of a PostgreSQL store (docs/scale.md).",
    no_args_is_help=True,
)
app.add_typer(enqueue_app)


def _pg_store(store: str | None, runs_dir: Path | None) -> Any:
    from pipeline.errors import InputError
    from pipeline.runs.address import store_url
    from pipeline.runs.store import open_store

    if store_url(store) is None:
        raise InputError(
            "the queue lives in a PostgreSQL store, and none is named",
            hint="pass --store postgresql://USER@HOST:PORT/DB or set DESIGNLOOP_STORE",
        )
    return open_store(store, runs_dir_of(runs_dir))


def _enqueue(
    kind: CreationKind,
    directories: list[str],
    model: str | None,
    role_model: list[str] | None,
    base_url: str | None,
    budget: int | None,
    max_cost: str | None,
    runs_dir: Path | None,
    store: str | None,
    no_warmup: bool,
    fail_on: str | None,
    as_json: bool,
) -> None:
    from pipeline.agents.session import SessionOptions
    from pipeline.cli.batch import check_session
    from pipeline.fleet.rows import BatchOptions
    from pipeline.fleet.worker import enqueue
    from pipeline.formats.design_dir import expand_directories
    from pipeline.settings import repo_root

    failing = _fail_on(fail_on) or "blocker"
    dirs = expand_directories(directories, Path.cwd())
    runs = runs_dir_of(runs_dir)
    session = SessionOptions(model, tuple(role_model or ()), base_url, budget, max_cost, runs)
    check_session(repo_root(dirs[0]), session)  # bad flags: bad input before the store is touched
    opened = _pg_store(store, runs_dir)
    try:
        batch = asyncio.run(enqueue(BatchOptions(kind, session, 1, not no_warmup, failing), opened, dirs))
    finally:
        opened.close()
    if as_json:
        typer.echo(json.dumps(batch.to_json(), indent=2))
    else:
        _present(batch)
    raise typer.Exit(int(batch.exit_code))


def _register(name: str, kind: CreationKind) -> None:
    def command(
        directories: DirsArg,
        model: ModelOpt = None,
        role_model: RoleModelOpt = None,
        base_url: BaseUrlOpt = None,
        budget: BudgetOpt = None,
        max_cost: CostOpt = None,
        runs_dir: RunsOpt = None,
        store: StoreOpt = None,
        no_warmup: NoWarmupOpt = False,
        fail_on: FailOnOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        _enqueue(
            kind,
            directories,
            model,
            role_model,
            base_url,
            budget,
            max_cost,
            runs_dir,
            store,
            no_warmup,
            fail_on,
            as_json,
        )

    command.__doc__ = (
        f"Queue a {kind} run per design directory (paths or globs) for the workers. A directory unchanged "
        "since its last finished run is skipped, one edited since is left alone; an unfinished run is "
        "queued again to go on. Exit 2 when a "
        "directory is bad input (the others are queued), else 0."
    )
    enqueue_app.command(name=name)(command)


_register("create", "phase1-creation")
_register("final", "phase4-creation")


@app.command()
def worker(
    store: StoreOpt = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="runs at once in this worker (at least 2)")] = 2,
    runs_dir: RunsOpt = None,
    drain: Annotated[bool, typer.Option("--drain", help="exit once the queue is empty")] = False,
) -> None:
    """Take queued runs from the PostgreSQL store and run them, --jobs at a time, until stopped
    (or, with --drain, until the queue is empty). Run it from a checkout of the repository."""
    from pipeline.errors import InputError
    from pipeline.fleet.worker import Worker
    from pipeline.settings import repo_root

    if jobs < 2:
        raise InputError(
            f"--jobs {jobs}: a worker runs at least 2 at once (the queue takes one job while one runs)",
            hint="pass --jobs 2 or more; run fewer workers to run fewer at once",
        )
    opened = _pg_store(store, runs_dir)
    try:
        asyncio.run(Worker(opened, jobs, repo_root(), drain).serve())
    finally:
        opened.close()
