"""designloop batch create|final DIR_OR_GLOB...: one run per design directory, many at once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pipeline.cli.app import app
from pipeline.cli.options import (
    ApproveOpt,
    BaseUrlOpt,
    BatchFlags,
    BudgetOpt,
    CostOpt,
    DirsArg,
    FailOnOpt,
    ForceOpt,
    JsonOpt,
    ModelOpt,
    NoWarmupOpt,
    OutputFileOpt,
    OutputFormatOpt,
    QuietOpt,
    RequestsOpt,
    RoleModelOpt,
    RunsOpt,
    Show,
    StaleOnlyOpt,
    StoreOpt,
    VerboseOpt,
    WaitOpt,
    parse_fail_on,
    runs_dir_of,
)
from pipeline.cli.output import is_terminal
from pipeline.formats.kinds import PHASE1, PHASE4, CreationKind

if TYPE_CHECKING:
    from rich.table import Table

    from pipeline.agents.session import SessionOptions, Sessions
    from pipeline.errors import ExitCode
    from pipeline.fleet.batch import Batch, BatchRunner, Row
    from pipeline.runs.event_fields import BaseEvent

batch_app = typer.Typer(
    name="batch",
    help="Run create or final over many design directories in one process (docs/scale.md).",
    no_args_is_help=True,
)
app.add_typer(batch_app)

JobsOpt = Annotated[int, typer.Option("--jobs", "-j", help="how many runs at once")]
BatchBudgetOpt = Annotated[
    int | None,
    typer.Option("--batch-budget", help="stop every run cleanly once the batch spent this many tokens"),
]
BatchCostOpt = Annotated[
    str | None,
    typer.Option("--batch-max-cost", help="stop every run cleanly once the batch spent this many USD"),
]
SarifOpt = Annotated[
    Path | None, typer.Option("--sarif", help="also write the batch's findings as SARIF 2.1.0 to this file")
]
COLUMNS = ("directory", "action", "run", "round", "spawns", "outcome", "tokens", "cost (USD)", "exit", "why")


def _cells(row: Row) -> list[str]:
    return [
        row.directory,
        row.action,
        row.run_id or "-",
        str(row.round or "-"),
        str(row.spawns),
        row.outcome or "-",
        str(row.tokens),
        f"{row.cost:.4f}",
        "-" if row.exit_code is None else str(row.exit_code),
        why(row),
    ]


def why(row: Row) -> str:
    """Why a directory did not simply pass: its message's first line (a pause, a stop, a bad
    input, another run holding it, an edit since its last run), else ``-``."""
    if row.message and (row.action in ("bad", "busy", "edited") or (row.exit_code or 0) >= 2):
        from pipeline.cli.output import relative_text
        from pipeline.settings import repo_root

        return relative_text(row.message.splitlines()[0], repo_root(), Path.cwd())
    return "-"


def _table(batch: Batch) -> Table:
    from pipeline.cli.output import rich_table

    return rich_table(COLUMNS, [_cells(row) for row in batch.rows], title=f"batch {batch.batch_id}")


def present_batch(batch: Batch, quiet: bool = False) -> None:
    """The batch's table (pure TSV in a pipe), then on stderr each directory's whole message and
    the summary: stdout holds the table alone."""
    from pipeline.agents.resolve import engine_summary
    from pipeline.cli.output import cost_text, relative_text, say, table, write
    from pipeline.settings import repo_root

    roots = (repo_root(), Path.cwd())
    if not quiet:
        table(COLUMNS, [_cells(row) for row in batch.rows], title=f"batch {batch.batch_id}")
        for row in batch.rows:  # whole messages, on stderr: a CI log shows each error in full
            if why(row) != "-":
                write(f"{row.directory}: {relative_text(row.message or '', *roots)}", stderr=True)
            for reason in row.stale:  # --stale-only: why the directory ran again
                write(f"{row.directory}: stale claim: {reason}", stderr=True)
    totals = batch.totals()
    outcomes = ", ".join(f"{n} {k}" for k, n in sorted(totals["outcomes"].items()))
    say(
        f"{totals['directories']} directories: {outcomes}; {totals['spawns']} spawns, "
        f"{totals['tokens']} tokens, {cost_text(totals['cost_usd'])}, {totals['cache_hits']} cached calls; "
        f"exit {totals['exit_code']}",
        stderr=True,
        plain=True,
    )
    if totals["models"]:  # who reviewed; nothing when no run spawned (all skipped or bad)
        say(f"reviewed by {engine_summary(totals['models'])}", stderr=True, plain=True)


def run_batch(kind: CreationKind, directories: list[str], flags: BatchFlags) -> None:
    """Check everything that holds for the whole batch, run it (live on a terminal), report it
    (and write its SARIF), and exit with its most urgent code."""
    from pipeline.agents.session import check_budget, parse_cost
    from pipeline.errors import InputError
    from pipeline.fleet.batch import BatchOptions, BatchRunner, worker_processes
    from pipeline.formats.design_dir import expand_directories
    from pipeline.runs.store import open_store
    from pipeline.settings import repo_root

    # Everything that holds for the whole batch is checked before anything is opened or written.
    if flags.jobs < 1:
        raise InputError(f"--jobs {flags.jobs} is not a positive number", hint="e.g. --jobs 8")
    check_budget(flags.batch_budget, "--batch-budget")
    cost = parse_cost(flags.batch_max_cost, "--batch-max-cost")
    failing = parse_fail_on(flags.fail_on) or "blocker"
    target = _check_sarif(flags.sarif)
    from pipeline.cli.emitters import check_output_file

    output = check_output_file(flags.output_file)
    dirs = expand_directories(directories, Path.cwd())
    session = flags.session()
    sessions = check_session(repo_root(dirs[0]), session)
    runs = runs_dir_of(flags.runs_dir)
    store = open_store(flags.store, runs)
    options = BatchOptions(
        kind=kind,
        session=session,
        jobs=flags.jobs,
        warmup=not flags.no_warmup,
        fail_on=failing,
        wait=flags.wait,
        batch_tokens=flags.batch_budget,
        batch_cost=cost,
        outputs=(target,) if target is not None else (),
        force=flags.force,
        approve_if_ready=flags.approve_if_ready,
        stale_only=flags.stale_only,
    )
    show = flags.show
    live = flags.output_format is None and not show.quiet and not show.verbose and is_terminal()
    try:
        setup = sessions.set_up(repo_root(dirs[0]), session)
        runner = BatchRunner(
            options, store, sessions=sessions, workers=worker_processes(options, setup, store, len(dirs))
        )
        if not live and show.verbose and not flags.as_json:
            runner.progress = _row_lines()
        import asyncio  # only the commands that run something load it

        batch = _with_live(runner, dirs) if live else asyncio.run(runner.run(dirs))
    finally:
        store.close()
    code = _write_sarif(target, batch, runs, repo_root(dirs[0])) if target is not None else batch.exit_code
    if flags.output_format is not None:
        from pipeline.cli.batch_sarif import batch_findings
        from pipeline.cli.emitters import Report, emit

        root = repo_root(dirs[0])
        report = Report("batch", batch_findings(batch, root), root, document=batch.to_json(), record=True)
        report.files = [row.directory for row in batch.rows]
        emit(report, flags.output_format, output)
    else:
        present_batch(batch, show.quiet)
    raise typer.Exit(int(code))


def _row_lines() -> Callable[[Row, BaseEvent | None], None]:
    """``--verbose``: each directory's steps as lines on stderr, named by the directory."""
    from pipeline.cli.live import step_line
    from pipeline.cli.output import write

    def tell(row: Row, event: BaseEvent | None) -> None:
        line = step_line(event) if event is not None else f"{row.action}"
        if line is not None:
            write(f"{row.directory}: {line.strip()}", stderr=True)

    return tell


def check_session(root: Path, session: SessionOptions) -> Sessions:
    """The model flags (--model, --role-model, --base-url) and budgets, checked once for every
    directory of the batch: bad ones are bad input before anything is written. The set-up made
    is the one the batch's runs share."""
    from pipeline.agents.session import Sessions

    sessions = Sessions()
    sessions.set_up(root, session)
    return sessions


def _check_sarif(sarif: Path | None) -> Path | None:
    from pipeline.formats.textio import check_write_target
    from pipeline.runs.preflight import writable_file

    if sarif is None:
        return None
    given = Path.cwd() / sarif if not sarif.is_absolute() else sarif
    check_write_target(given)  # never through a link, nor into a linked directory leading out
    target = given.resolve()
    writable_file(target, "--sarif", "name a file in an existing, writable directory")
    return target


def _write_sarif(target: Path, batch: Batch, runs: Path, root: Path) -> ExitCode:
    """Write the batch's SARIF and record it as designloop's own output (never an input of the
    next batch). A failure after the runs (checked up front, so a race) is reported, and the
    exit is 2 unless the batch's own is more urgent: the batch's results are printed still."""
    from pipeline.agents.readable import record_byproducts
    from pipeline.cli.batch_sarif import batch_sarif
    from pipeline.errors import ExitCode
    from pipeline.fleet.rows import EXIT_RANK
    from pipeline.formats.textio import atomic_write

    try:
        atomic_write(target, batch_sarif(batch, root))
        record_byproducts(runs, root, [target])
    except OSError as exc:
        typer.echo(f"designloop: {target}: cannot write the SARIF file: {exc.strerror}", err=True)
        return EXIT_RANK[min(EXIT_RANK.index(batch.exit_code), EXIT_RANK.index(ExitCode.BAD_INPUT))]
    return batch.exit_code


def _with_live(runner: BatchRunner, dirs: list[Path]) -> Batch:
    from rich.live import Live

    with Live(_table(runner.batch), refresh_per_second=4, transient=True) as live:

        def redraw(row: Row, event: BaseEvent | None) -> None:
            live.update(_table(runner.batch))

        runner.progress = redraw
        import asyncio  # only the commands that run something load it

        batch: Batch = asyncio.run(runner.run(dirs))
    return batch


def _register(name: str, kind: CreationKind, doc: str) -> None:
    def command(
        directories: DirsArg,
        jobs: JobsOpt = 4,
        model: ModelOpt = None,
        role_model: RoleModelOpt = None,
        base_url: BaseUrlOpt = None,
        budget: BudgetOpt = None,
        max_cost: CostOpt = None,
        batch_budget: BatchBudgetOpt = None,
        batch_max_cost: BatchCostOpt = None,
        runs_dir: RunsOpt = None,
        store: StoreOpt = None,
        no_warmup: NoWarmupOpt = False,
        fail_on: FailOnOpt = None,
        wait: WaitOpt = False,
        as_json: JsonOpt = False,
        sarif: SarifOpt = None,
        force: ForceOpt = False,
        max_requests: RequestsOpt = None,
        quiet: QuietOpt = False,
        verbose: VerboseOpt = False,
        approve_if_ready: ApproveOpt = False,
        stale_only: StaleOnlyOpt = False,
        output_format: OutputFormatOpt = None,
        output_file: OutputFileOpt = None,
    ) -> None:
        from pipeline.cli.options import output_format as output_format_of

        chosen = output_format_of(output_format, "json") if output_format or as_json else None
        flags = BatchFlags(
            model=model,
            role_model=role_model,
            base_url=base_url,
            budget=budget,
            max_cost=max_cost,
            runs_dir=runs_dir,
            max_requests=max_requests,
            jobs=jobs,
            batch_budget=batch_budget,
            batch_max_cost=batch_max_cost,
            store=store,
            no_warmup=no_warmup,
            fail_on=fail_on,
            wait=wait,
            as_json=as_json,
            sarif=sarif,
            force=force,
            show=Show(quiet=quiet, verbose=verbose, as_json=as_json),
            approve_if_ready=approve_if_ready,
            stale_only=stale_only,
            output_format=chosen,
            output_file=output_file,
        )
        run_batch(kind, directories, flags)

    command.__doc__ = doc
    batch_app.command(name=name)(command)


EXITS = """
    Exit: the most urgent of the directories' codes, in this order: 70 internal error, 2 bad input
    (or a directory another run holds), 5 INCONCLUSIVE, 4 budget, 3 paused, 1 findings remain,
    6 --approve-if-ready refused the approval of a run that exited 0, then 0 every directory
    PASS (or SHOULD-FIX REMAINS, a warning), skipped as unchanged, or left alone as edited since
    its last run. A directory whose last run finished on unchanged inputs is skipped with that
    outcome reported again (--approve-if-ready approves runs of this batch only); --force runs
    every directory. With
    --stale-only the whole code counts for nothing: a directory runs when one of its design
    inputs changed or a claim of its claims ledger is stale (designloop drift).
    """
_register(
    "create",
    PHASE1,
    "phase1-creation on every design directory named (paths or globs), --jobs at a time.\n" + EXITS,
)
_register(
    "final",
    PHASE4,
    "phase4-creation on every design directory named (paths or globs), --jobs at a time.\n" + EXITS,
)
