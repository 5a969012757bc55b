"""The run commands: create, final, resume and graph; and what every command that runs a run does
with it: hold its design directory's lock (``hold_directory``), run it and report (``run_and_report``)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pipeline.cli.app import app
from pipeline.cli.options import (
    BaseUrlOpt,
    BudgetOpt,
    CodeRootOpt,
    CostOpt,
    FailOnOpt,
    ForceOpt,
    JsonOpt,
    ModelOpt,
    NoWarmupOpt,
    RequestsOpt,
    ResumeFlags,
    RoleModelOpt,
    RunFlags,
    RunsOpt,
    StoreOpt,
    WaitOpt,
    open_store,
    parse_fail_on,
)
from pipeline.errors import ExitCode
from pipeline.formats.kinds import DESIGN_SYNC, PHASE1, PHASE4, CreationKind

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from pipeline.graph.result import RunResult
    from pipeline.runs.lock import Holder, RunLock
    from pipeline.runs.setup import OpenRun
    from pipeline.runs.store import RunStore


def _waiting(directory: Path) -> Callable[[Holder | None], None]:
    def say(holder: Holder | None) -> None:
        who = holder.describe() if holder is not None else "another run"
        typer.echo(f"waiting: {who} is working on {directory}", err=True)

    return say


def hold_directory(
    store: RunStore, directory: Path, run_id: str, wait: bool
) -> AbstractContextManager[RunLock]:
    """Hold the design directory's run lock for the rest of the command (one run at a time),
    named for ``run_id``; with ``wait``, wait for the run that holds it."""
    from pipeline.runs.lock import holder_for, holding
    from pipeline.runs.records import portable
    from pipeline.settings import repo_root

    lock = store.lock(directory, portable(directory, repo_root(directory)))
    return holding(lock, holder_for(run_id), wait, _waiting(directory))


def run_and_report(run: OpenRun, resume: bool, as_json: bool, store: RunStore, lock: RunLock) -> None:
    """Run under ``lock`` (held by the caller: a run that loses it stops, graph.watch), show it
    (live on a terminal), print its result, and exit with its code."""
    from pipeline.graph.runner import execute

    if not as_json and sys.stdout.isatty():
        from pipeline.cli.live import LiveView

        with LiveView(run.record.kind) as live:
            result = asyncio.run(execute(run, resume=resume, listener=live, store=store, lock=lock))
    else:
        result = asyncio.run(execute(run, resume=resume, store=store, lock=lock))
    if as_json:
        kept = {"overwrote": run.record.overwrote, "kept": run.record.kept}
        typer.echo(json.dumps(result.to_json() | kept, indent=2, default=str))
    else:
        _present(run.run_dir, result)
        for file, copy in run.record.kept.items():
            typer.echo(f"the overwritten {file} is kept at {copy}")
    raise typer.Exit(int(result.exit_code))


def _present(run_dir: Path, result: RunResult) -> None:
    from rich.console import Console

    console = Console()
    summary = run_dir / "summary.md"
    outcome = result.to_json()["outcome"]
    if result.exit_code in (ExitCode.OK, ExitCode.FINDINGS, ExitCode.INCONCLUSIVE) and summary.is_file():
        console.print(summary.read_text(encoding="utf-8"), markup=False, highlight=False)
    if outcome == "SHOULD-FIX REMAINS" and result.exit_code == ExitCode.OK:
        console.print(
            "[yellow]warning:[/yellow] should-fix findings remain as debt (see the review log); "
            "--fail-on should-fix makes this exit 1"
        )
    if result.paused:
        console.print(f"[yellow]paused at the S3 gate:[/yellow] {result.message}")
        console.print(f"resolve the research log's adversarial gate, then: designloop resume {result.run_id}")
    elif result.exit_code == ExitCode.BUDGET:
        console.print(f"[yellow]stopped:[/yellow] {result.message}")
        flag = result.flag or "--budget"
        more = "<more requests per spawn>" if flag == "--max-requests" else "<more tokens>"
        console.print(f"resume with: designloop resume {result.run_id} {flag} {more}")
    console.print(f"run {result.run_id}: {outcome}")


def start_creation(kind: CreationKind, directory: Path, flags: RunFlags) -> None:
    """create or final: check everything, take the directory's lock, refuse to overwrite later
    work (unless --force), start the run and take it to its end."""
    from pipeline.cli.fast import resolve
    from pipeline.runs.overwrite import later_work
    from pipeline.runs.setup import plan_run, start_run

    failing = parse_fail_on(flags.fail_on) or "blocker"
    root = resolve(flags.code_root) if flags.code_root else None
    target = resolve(directory) or directory
    plan = plan_run(
        kind, target, flags.session(), not flags.no_warmup, root.resolve() if root else None, failing
    )
    store = open_store(flags.store, flags.runs_dir)
    try:
        with hold_directory(store, plan.design.root, plan.run_id, flags.wait) as lock:
            # Decided under the lock: nothing another run or edit did meanwhile is overwritten.
            later = later_work(plan.design, kind, store)
            if later and not flags.force:
                raise later.refusal("create" if kind == PHASE1 else "final", plan.design.root)
            plan.overwrite = later.reasons
            run = start_run(plan)
            store.register(run.run_dir)
            if not flags.as_json:
                typer.echo(f"run {run.run_id}", err=True)
            run_and_report(run, False, flags.as_json, store, lock)
    finally:
        store.close()


def _register(name: str, kind: CreationKind, doc: str) -> None:
    def command(
        directory: Annotated[Path, typer.Argument(help="the design directory")],
        model: ModelOpt = None,
        role_model: RoleModelOpt = None,
        base_url: BaseUrlOpt = None,
        budget: BudgetOpt = None,
        max_cost: CostOpt = None,
        runs_dir: RunsOpt = None,
        no_warmup: NoWarmupOpt = False,
        code_root: CodeRootOpt = None,
        fail_on: FailOnOpt = None,
        wait: WaitOpt = False,
        as_json: JsonOpt = False,
        store: StoreOpt = None,
        force: ForceOpt = False,
        max_requests: RequestsOpt = None,
    ) -> None:
        flags = RunFlags(
            model=model,
            role_model=role_model,
            base_url=base_url,
            budget=budget,
            max_cost=max_cost,
            runs_dir=runs_dir,
            max_requests=max_requests,
            no_warmup=no_warmup,
            code_root=code_root,
            fail_on=fail_on,
            wait=wait,
            as_json=as_json,
            store=store,
            force=force,
        )
        start_creation(kind, directory, flags)

    command.__doc__ = doc
    app.command(name=name)(command)


_register(
    "create",
    PHASE1,
    """phase1-creation: write _workflow/design.md from the research log and the code, and review it.

    Exit 0 PASS (or SHOULD-FIX REMAINS, a warning), 1 BLOCKER REMAINS (or SHOULD-FIX REMAINS with
    --fail-on should-fix), 2 bad input, 3 paused at the adversarial gate, 4 budget reached,
    5 INCONCLUSIVE (a required review never happened).
    """,
)
_register(
    "final",
    PHASE4,
    """phase4-creation: write design-final.md from the frozen design, the track episodes and the code.

    Exit 0 PASS (or SHOULD-FIX REMAINS, a warning), 1 BLOCKER REMAINS or DECISION NEEDED (or
    SHOULD-FIX REMAINS with --fail-on should-fix), 2 bad input, 4 budget reached, 5 INCONCLUSIVE.
    """,
)


@app.command()
def resume(
    run_id: Annotated[str, typer.Argument(help="the run to continue")],
    budget: BudgetOpt = None,
    max_cost: CostOpt = None,
    runs_dir: RunsOpt = None,
    fail_on: FailOnOpt = None,
    wait: WaitOpt = False,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
    max_requests: RequestsOpt = None,
) -> None:
    """Continue a run from its last completed step (after a crash, a pause or a spent budget)."""
    flags = ResumeFlags(
        budget=budget,
        max_cost=max_cost,
        runs_dir=runs_dir,
        fail_on=fail_on,
        wait=wait,
        as_json=as_json,
        store=store,
        max_requests=max_requests,
    )
    resume_run(run_id, flags)


def resume_run(run_id: str, flags: ResumeFlags) -> None:
    """Check the new limits, take the directory's lock, then load the run as it is now and go on."""
    from pipeline.agents.session import check_budget, check_requests, parse_cost
    from pipeline.runs.discard import refuse_discarded
    from pipeline.runs.records import locate
    from pipeline.runs.setup import load_run

    failing = parse_fail_on(flags.fail_on)
    check_budget(flags.budget)
    check_requests(flags.max_requests)
    parse_cost(flags.max_cost)
    runs = open_store(flags.store, flags.runs_dir)
    try:
        # The lock first, then the run's directory: a run that went on elsewhere while this one
        # waited is read as it is now, never as it was before the wait.
        _, directory, _ = locate(runs.record(run_id), runs.runs_dir / run_id)
        with hold_directory(runs, directory, run_id, flags.wait) as lock:
            refuse_discarded(runs.view(run_id))
            run_dir = runs.run_dir(run_id)
            run = load_run(run_dir, flags.budget, flags.max_cost, failing, max_requests=flags.max_requests)
            run_and_report(run, True, flags.as_json, runs, lock)
    finally:
        runs.close()


@app.command(name="graph")
def graph_command(
    edit: Annotated[bool, typer.Option("--edit", help="the interactive kinds' graph instead")] = False,
) -> None:
    """Print the creation-kind graph (or, with --edit, the interactive kinds' graph) as a Mermaid
    diagram, drawn by LangGraph from the graph itself."""
    from pipeline.graph.runner import graph_for

    typer.echo(graph_for(DESIGN_SYNC if edit else PHASE1).get_graph().draw_mermaid())
