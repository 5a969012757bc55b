"""designloop enqueue create|final DIR_OR_GLOB... and designloop worker: runs on many machines
over the PostgreSQL store's queue (docs/scale.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pipeline.cli.app import app
from pipeline.cli.batch import present_batch
from pipeline.cli.options import (
    BaseUrlOpt,
    BatchFlags,
    BudgetOpt,
    CostOpt,
    DirsArg,
    FailOnOpt,
    JsonOpt,
    ModelOpt,
    NoWarmupOpt,
    RoleModelOpt,
    RunsOpt,
    StaleOnlyOpt,
    StoreOpt,
    parse_fail_on,
    runs_dir_of,
)
from pipeline.formats.kinds import PHASE1, PHASE4, CreationKind

if TYPE_CHECKING:
    from pipeline.runs.pg_store import PgStore

enqueue_app = typer.Typer(
    name="enqueue",
    help="Queue create or final runs for the workers of a PostgreSQL store (docs/scale.md).",
    no_args_is_help=True,
)
app.add_typer(enqueue_app)


def _pg_store(store: str | None, runs_dir: Path | None) -> PgStore:
    from pipeline.runs.address import store_url

    _require_queue(store)
    from pipeline.runs.pg_store import PgStore

    url = store_url(store)
    assert url is not None
    return PgStore(url, runs_dir_of(runs_dir))


def _require_queue(store: str | None) -> None:
    """The queue's store named and its packages installed (the postgres extra), before anything
    that needs them is imported: a missing extra is bad input naming it, never a traceback."""
    from pipeline.errors import InputError
    from pipeline.runs.address import require_postgres, store_url

    if store_url(store) is None:
        raise InputError(
            "the queue lives in a PostgreSQL store, and none is named",
            hint="pass --store postgresql://USER@HOST:PORT/DB or set DESIGNLOOP_STORE",
        )
    require_postgres()


def enqueue_runs(kind: CreationKind, directories: list[str], flags: BatchFlags) -> None:
    """Check the flags and every directory, start (or pick up) each directory's run, queue it."""
    _require_queue(flags.store)
    from pipeline.cli.batch import check_session
    from pipeline.fleet.rows import BatchOptions
    from pipeline.fleet.worker import enqueue
    from pipeline.formats.design_dir import expand_directories
    from pipeline.settings import repo_root

    failing = parse_fail_on(flags.fail_on) or "blocker"
    dirs = expand_directories(directories, Path.cwd())
    session = flags.session()
    sessions = check_session(repo_root(dirs[0]), session)  # bad flags: bad input before the store is touched
    opened = _pg_store(flags.store, flags.runs_dir)
    try:
        options = BatchOptions(
            kind=kind,
            session=session,
            jobs=1,
            warmup=not flags.no_warmup,
            fail_on=failing,
            stale_only=flags.stale_only,
        )
        import asyncio  # only the commands that run something load it

        batch = asyncio.run(enqueue(options, opened, dirs, sessions))
    finally:
        opened.close()
    if flags.as_json:
        from pipeline.cli.output import emit_json

        emit_json(batch.to_json())
    else:
        present_batch(batch)
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
        stale_only: StaleOnlyOpt = False,
    ) -> None:
        flags = BatchFlags(
            model=model,
            role_model=role_model,
            base_url=base_url,
            budget=budget,
            max_cost=max_cost,
            runs_dir=runs_dir,
            store=store,
            no_warmup=no_warmup,
            fail_on=fail_on,
            as_json=as_json,
            stale_only=stale_only,
        )
        enqueue_runs(kind, directories, flags)

    command.__doc__ = (
        f"Queue a {kind} run per design directory (paths or globs) for the workers. A directory unchanged "
        "since its last finished run is skipped (with --stale-only: its design inputs unchanged and "
        "every claim of its claims ledgers current), one edited since is left alone; an unfinished "
        "run is queued again to go on. Exit 2 when a "
        "directory is bad input (the others are queued), else 0."
    )
    enqueue_app.command(name=name)(command)


_register("create", PHASE1)
_register("final", PHASE4)


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

    _require_queue(store)
    from pipeline.fleet.worker import Worker
    from pipeline.settings import repo_root

    if jobs < 2:
        raise InputError(
            f"--jobs {jobs}: a worker runs at least 2 at once (the queue takes one job while one runs)",
            hint="pass --jobs 2 or more; run fewer workers to run fewer at once",
        )
    opened = _pg_store(store, runs_dir)
    try:
        import asyncio  # only the commands that run something load it

        asyncio.run(Worker(opened, jobs, repo_root(), drain).serve())
    finally:
        opened.close()
