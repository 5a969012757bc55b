"""The run commands: create, final, resume, status, runs."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pipeline.cli.app import (
    BaseUrlOpt,
    BudgetOpt,
    CostOpt,
    JsonOpt,
    ModelOpt,
    RequestsOpt,
    RoleModelOpt,
    RunsOpt,
    StoreOpt,
    app,
)
from pipeline.errors import ExitCode
from pipeline.formats.kinds import PHASE1

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from pipeline.runs.lock import RunLock
    from pipeline.runs.records import FailOn
    from pipeline.runs.setup import OpenRun
    from pipeline.runs.store import RunStore

NoWarmupOpt = Annotated[bool, typer.Option("--no-warmup", help="spawn every auditor slice at once")]
FailOnOpt = Annotated[
    str | None,
    typer.Option(
        "--fail-on",
        help="blocker (default): only BLOCKER REMAINS exits 1; should-fix: SHOULD-FIX REMAINS exits 1 too",
    ),
]


def _fail_on(value: str | None) -> FailOn | None:
    from pipeline.errors import InputError

    if value is None:
        return None
    if value == "blocker":
        return "blocker"
    if value == "should-fix":
        return "should-fix"
    raise InputError(f"--fail-on {value!r} is not blocker or should-fix", hint="e.g. --fail-on should-fix")


WaitOpt = Annotated[
    bool, typer.Option("--wait", help="if another run is working on the directory, start when it is done")
]
CodeRootOpt = Annotated[
    Path | None, typer.Option("--code-root", help="where the code the design describes lives")
]
ApproveOpt = Annotated[
    bool,
    typer.Option(
        "--approve-if-ready",
        help="accept the revision the run leaves in the same invocation, only when every condition "
        "holds (docs/lifecycle.md); the run's outcome stands either way",
    ),
]
ForceOpt = Annotated[
    bool,
    typer.Option(
        "--force",
        help="run even over later work (edits logged since the last create, a hand-edited "
        "document); the overwritten files are kept under runs/<run-id>/",
    ),
]


def runs_dir_of(runs_dir: Path | None) -> Path:
    import os

    from pipeline.agents.session import check_runs_link
    from pipeline.settings import default_runs_dir, repo_root

    given = Path(os.path.abspath(runs_dir or default_runs_dir(repo_root())))
    check_runs_link(given)
    return given.resolve()


def _waiting(directory: Path) -> Any:
    def say(holder: Any) -> None:
        who = holder.describe() if holder is not None else "another run"
        typer.echo(f"waiting: {who} is working on {directory}", err=True)

    return say


def open_store(store: str | None, runs_dir: Path | None) -> RunStore:
    """The run store the command works against: --store, DESIGNLOOP_STORE, else local files."""
    from pipeline.runs.store import open_store as open_

    return open_(store, runs_dir_of(runs_dir))


def _locked(store: RunStore, directory: Path, run_id: str, wait: bool) -> AbstractContextManager[RunLock]:
    """Hold the design directory's run lock for the rest of the command (one run at a time)."""
    from pipeline.runs.lock import holder_for, holding
    from pipeline.runs.records import portable
    from pipeline.settings import repo_root

    lock = store.lock(directory, portable(directory, repo_root(directory)))
    return holding(lock, holder_for(run_id), wait, _waiting(directory))


def _execute(
    run: OpenRun, resume: bool, as_json: bool, store: RunStore, lock: RunLock, approve: bool = False
) -> None:
    """Run under ``lock`` (held by the caller): a run that loses it stops (graph.watch). With
    ``approve`` (--approve-if-ready), accept what the run left, still under the lock."""
    from pipeline.graph.runner import execute
    from pipeline.runs.lifecycle import approve_if_ready

    if not as_json and sys.stdout.isatty():
        from pipeline.cli.live import LiveView

        with LiveView(run.record.kind) as live:
            result = asyncio.run(execute(run, resume=resume, listener=live, store=store, lock=lock))
    else:
        result = asyncio.run(execute(run, resume=resume, store=store, lock=lock))
    approval = approve_if_ready(run.design, store, run.run_id, lock, "cli") if approve else None
    # The outcome stands; a run that exited 0 exits as its refused approval does (6, or 2).
    code = approval.exit_code(result.exit_code) if approval is not None else result.exit_code
    if as_json:
        kept = {"overwrote": run.record.overwrote, "kept": run.record.kept}
        extra = {"approval": approval.to_json()} if approval is not None else {}
        typer.echo(json.dumps(result.to_json() | kept | extra, indent=2, default=str))
    else:
        _present(run.run_dir, result)
        for file, copy in run.record.kept.items():
            typer.echo(f"the overwritten {file} is kept at {copy}")
        if approval is not None:
            typer.echo(approval.line())
    raise typer.Exit(int(code))


def _present(run_dir: Path, result: Any) -> None:
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


def _start(
    kind: str,
    directory: Path,
    model: str | None,
    role_model: list[str] | None,
    base_url: str | None,
    budget: int | None,
    max_cost: str | None,
    runs_dir: Path | None,
    no_warmup: bool,
    code_root: Path | None,
    fail_on: str | None,
    wait: bool,
    as_json: bool,
    store_url: str | None = None,
    force: bool = False,
    max_requests: int | None = None,
    approve: bool = False,
) -> None:
    from pipeline.agents.session import SessionOptions
    from pipeline.cli.fast import resolve
    from pipeline.runs.overwrite import later_work
    from pipeline.runs.setup import plan_run, start_run

    failing = _fail_on(fail_on) or "blocker"
    options = SessionOptions(
        model,
        tuple(role_model or ()),
        base_url,
        budget,
        max_cost,
        runs_dir_of(runs_dir),
        max_requests=max_requests,
    )
    root = resolve(code_root) if code_root else None
    target = resolve(directory) or directory
    plan = plan_run(kind, target, options, not no_warmup, root.resolve() if root else None, failing)
    if approve:
        from pipeline.runs.lifecycle import check_approvals

        check_approvals(plan.design)
    store = open_store(store_url, runs_dir)
    try:
        with _locked(store, plan.design.root, plan.run_id, wait) as lock:
            # Decided under the lock: nothing another run or edit did meanwhile is overwritten.
            later = later_work(plan.design, kind, store)
            if later and not force:
                raise later.refusal("create" if kind == PHASE1 else "final", plan.design.root)
            plan.overwrite = later.reasons
            run = start_run(plan)
            store.register(run.run_dir)
            if not as_json:
                typer.echo(f"run {run.run_id}", err=True)
            _execute(run, False, as_json, store, lock, approve)
    finally:
        store.close()


def _register(name: str, kind: str, doc: str) -> None:
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
        approve_if_ready: ApproveOpt = False,
    ) -> None:
        _start(
            kind,
            directory,
            model,
            role_model,
            base_url,
            budget,
            max_cost,
            runs_dir,
            no_warmup,
            code_root,
            fail_on,
            wait,
            as_json,
            store,
            force,
            max_requests,
            approve_if_ready,
        )

    command.__doc__ = doc
    app.command(name=name)(command)


_register(
    "create",
    "phase1-creation",
    """phase1-creation: write _workflow/design.md from the research log and the code, and review it.

    Exit 0 PASS (or SHOULD-FIX REMAINS, a warning), 1 BLOCKER REMAINS (or SHOULD-FIX REMAINS with
    --fail-on should-fix), 2 bad input, 3 paused at the adversarial gate, 4 budget reached,
    5 INCONCLUSIVE (a required review never happened).
    """,
)
_register(
    "final",
    "phase4-creation",
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
    approve_if_ready: ApproveOpt = False,
) -> None:
    """Continue a run from its last completed step (after a crash, a pause or a spent budget)."""
    from pipeline.agents.session import check_budget, check_requests, parse_cost
    from pipeline.runs.discard import refuse_discarded
    from pipeline.runs.records import locate
    from pipeline.runs.setup import load_run

    failing = _fail_on(fail_on)
    check_budget(budget)
    check_requests(max_requests)
    parse_cost(max_cost)
    runs = open_store(store, runs_dir)
    try:
        # The lock first, then the run's directory: a run that went on elsewhere while this one
        # waited is read as it is now, never as it was before the wait.
        _, directory, _ = locate(runs.record(run_id), runs.runs_dir / run_id)
        with _locked(runs, directory, run_id, wait) as lock:
            refuse_discarded(runs.view(run_id))
            run = load_run(runs.run_dir(run_id), budget, max_cost, failing, max_requests=max_requests)
            if approve_if_ready:
                from pipeline.runs.lifecycle import check_approvals

                check_approvals(run.design)
            _execute(run, True, as_json, runs, lock, approve_if_ready)
    finally:
        runs.close()


@app.command(name="graph")
def graph_command(
    edit: Annotated[bool, typer.Option("--edit", help="the interactive kinds' graph instead")] = False,
) -> None:
    """Print the creation-kind graph (or, with --edit, the interactive kinds' graph) as a Mermaid
    diagram, drawn by LangGraph from the graph itself."""
    if edit:
        from pipeline.graph.edit_build import build_edit_graph

        typer.echo(build_edit_graph().get_graph().draw_mermaid())
        return
    from pipeline.graph.build import build_graph

    typer.echo(build_graph().get_graph().draw_mermaid())
