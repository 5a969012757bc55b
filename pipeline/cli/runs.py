"""The run commands: create, final, resume and graph; and what every command that runs a run does
with it: hold its design directory's lock (``hold_directory``), run it and report (``run_and_report``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pipeline.cli.app import app
from pipeline.cli.options import (
    ApproveOpt,
    BaseUrlOpt,
    BudgetOpt,
    CodeRootOpt,
    CostOpt,
    FailOnOpt,
    ForceOpt,
    JsonOpt,
    ModelOpt,
    NoDiffOpt,
    NoWarmupOpt,
    QuietOpt,
    RequestsOpt,
    ResumeFlags,
    RoleModelOpt,
    RunFlags,
    RunsOpt,
    Show,
    StoreOpt,
    VerboseOpt,
    WaitOpt,
    open_store,
    parse_fail_on,
)
from pipeline.cli.output import say
from pipeline.errors import ExitCode
from pipeline.formats.kinds import DESIGN_SYNC, PHASE1, PHASE4, CreationKind

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from pipeline.formats.design_dir import DesignDir
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


def run_and_report(
    run: OpenRun, resume: bool, show: Show, store: RunStore, lock: RunLock, approve: bool = False
) -> None:
    """Run under ``lock`` (held by the caller: a run that loses it stops, graph.watch), show it
    (live on a terminal, step by step on stderr with --verbose), print its result, and exit
    with its code. With ``approve`` (--approve-if-ready), accept what the run left, still
    under the lock."""
    from pipeline.cli.output import is_terminal, pasteable
    from pipeline.fleet.resume import record_outputs
    from pipeline.fleet.rows import FINISHED
    from pipeline.graph.runner import execute
    from pipeline.runs.lifecycle import approve_if_ready

    live_view = not show.as_json and not show.quiet and not show.verbose and is_terminal()
    if live_view:
        from pipeline.cli.live import LiveView

        with LiveView(run.record.kind) as live:
            import asyncio  # only the commands that run something load it

            result = asyncio.run(execute(run, resume=resume, listener=live, store=store, lock=lock))
    else:
        from pipeline.cli.live import StepLines

        listener = StepLines() if show.verbose and not show.as_json else None
        import asyncio  # only the commands that run something load it

        result = asyncio.run(execute(run, resume=resume, listener=listener, store=store, lock=lock))
    outcome = result.state.outcome if result.state is not None else None
    if outcome is not None and outcome.verdict in FINISHED:  # a later batch can tell it unchanged
        record_outputs(store, run)
    approval = approve_if_ready(run.design, store, run.run_id, lock, "cli") if approve else None
    # The outcome stands; a run that exited 0 exits as its refused approval does (6, or 2).
    code = approval.exit_code(result.exit_code) if approval is not None else result.exit_code
    revisions = revisions_left(store, run.run_id)
    if show.as_json:
        from pipeline.cli.output import emit_json

        kept = {"overwrote": run.record.overwrote, "kept": run.record.kept}
        extra = {"approval": approval.to_json()} if approval is not None else {}
        emit_json(result.to_json() | kept | extra | {"revisions": revisions})
    else:
        from pipeline.cli.next_step import after_run

        for file, copy in run.record.kept.items():
            say(f"the overwritten {file} is kept at {copy}", plain=True)
        if approval is not None:
            say(approval.line(), plain=True)
        step = after_run(
            kind=run.record.kind,
            directory=run.design.root,
            run_id=run.run_id,
            outcome=str(result.to_json()["outcome"]),
            revisions=revisions,
            approved=approval is not None and approval.refused is None,
            declined=len(result.to_json()["declined"]),
        )
        present(run.run_dir, result, show, revisions, pasteable(step))
    raise typer.Exit(int(code))


def revisions_left(store: RunStore, run_id: str) -> list[dict[str, object]]:
    """Each revision the run left, with its state now (candidate, accepted ...)."""
    from pipeline.errors import InputError
    from pipeline.runs.lifecycle_read import revision_states

    try:
        view = store.view(run_id)
    except InputError:  # a run whose records cannot be read now: its own output says the rest
        return []
    if not view.revisions:
        return []
    states = revision_states(store, run_id)
    return [
        {
            "file": file,
            "name": Path(rev.path or file).name,
            "number": rev.number,
            "sha256": rev.sha256,
            "state": states.get((file, rev.number), "unknown"),
        }
        for file, rev in sorted(view.revisions.items())
    ]


def without_diff(summary: str) -> str:
    """summary.md without its ``## Diff`` section (a diff line never starts with ``## ``)."""
    out: list[str] = []
    skipping = False
    for line in summary.splitlines(keepends=True):
        if line.startswith("## "):
            skipping = line.strip() == "## Diff"
        if not skipping:
            out.append(line)
    return "".join(out)


def present(
    run_dir: Path,
    result: RunResult,
    show: Show,
    revisions: list[dict[str, object]] | None = None,
    next_step: str | None = None,
) -> None:
    """The run's summary (the diff, the review-log entry), then the outcome line naming who
    reviewed, and last what to do next: on a terminal through Rich, elsewhere as it is (a
    valid diff)."""
    from rich.markup import escape

    from pipeline.agents.resolve import engine_summary
    from pipeline.cli.output import console, is_terminal, pasteable, write
    from pipeline.formats.contracts import declined_words

    summary = run_dir / "summary.md"
    said = result.to_json()
    outcome = said["outcome"]
    shown = result.exit_code in (ExitCode.OK, ExitCode.FINDINGS, ExitCode.INCONCLUSIVE)
    if shown and summary.is_file() and not show.quiet:
        text = summary.read_text(encoding="utf-8")
        text = text if show.diff else without_diff(text)
        if is_terminal():
            console().print(text, markup=False, highlight=False)
        else:
            write(text)
    if outcome == "SHOULD-FIX REMAINS" and result.exit_code == ExitCode.OK:
        say(
            "[yellow]warning:[/yellow] should-fix findings remain as debt (see the review log); "
            "--fail-on should-fix makes this exit 1"
        )
    if result.paused:
        say(f"[yellow]paused at the S3 gate:[/yellow] {escape(result.message or '')}")
    elif result.exit_code == ExitCode.BUDGET:
        say(f"[yellow]stopped:[/yellow] {escape(result.message or '')}")
        flag = result.flag or "--budget"
        more = "<more requests per spawn>" if flag == "--max-requests" else "<more tokens>"
        next_step = pasteable(f"next: designloop resume {result.run_id} {flag} {more}")
    reviewed = reviewed_by(result, engine_summary)
    for rev in revisions or []:
        reviewed += f"; {rev['name']} r{rev['number']} {rev['state']}"
    declined = "".join(f"\ndeclined: {part}" for part in said["declined"])
    if declined:
        outcome += f", {declined_words(len(said['declined']))}"
    say(f"run {result.run_id}: {outcome}" + (f", {reviewed}" if reviewed else "") + declined, plain=True)
    if next_step:  # the last line: what to do next
        say(next_step, plain=True)


def unapproved_design(design: DesignDir, store: RunStore) -> str | None:
    """Why the design.md phase 4 is about to finalise is not the accepted one (None when it is):
    final runs on it all the same, but says so."""
    from pipeline.cli.next_step import shown
    from pipeline.runs.lifecycle_read import Directory, revision_stores

    d = Directory.read(design, revision_stores(store))
    accepted, current, on_disk = d.accepted("design"), d.current("design"), d.on_disk("design")
    approve = f"designloop approve {shown(design.root)} --file design"
    if accepted is None:
        return f"design.md was never approved; final runs on it as it is ({approve} records it)"
    if on_disk != accepted.sha256:
        now = f"r{current.number}" if current is not None and current.sha256 == on_disk else "a hand edit"
        return (
            f"design.md is {now}, not the accepted r{accepted.number}; final runs on it as it is ({approve})"
        )
    return None


def reviewed_by(result: RunResult, summary: Callable[[dict[str, str]], str]) -> str:
    """Who reviewed, as the outcome line says it: the reviewing roles that returned a valid
    review and their models; ``not reviewed`` when none did (an author that never wrote, a
    server that never answered), with the author's error when it has one."""
    from pipeline.graph.story import AUTHORS

    state = result.state
    if not result.models:
        return ""
    valid = {r.role for r in state.reviews() if r.status == "ok"} if state is not None else set()
    reviewers: dict[str, str] = {
        str(role): model for role, model in result.models.items() if role in valid and role not in AUTHORS
    }
    if reviewers:
        return f"reviewed by {summary(reviewers)}"
    author = getattr(state, "author", None)
    error = getattr(author, "error", None) if author is not None and not author.draft_ok else None
    return "not reviewed" + (f" (the author wrote no draft: {error})" if error else "")


def start_creation(kind: CreationKind, directory: Path, flags: RunFlags) -> None:
    """create or final: check everything, take the directory's lock, refuse to overwrite later
    work (unless --force), start the run and take it to its end."""
    from pipeline.cli.paths import resolve
    from pipeline.fleet.rows import fingerprint
    from pipeline.runs.fingerprint import Fingerprints
    from pipeline.runs.overwrite import later_work
    from pipeline.runs.setup import plan_run, start_run

    failing = parse_fail_on(flags.fail_on) or "blocker"
    root = resolve(flags.code_root) if flags.code_root else None
    target = resolve(directory) or directory
    plan = plan_run(
        kind, target, flags.session(), not flags.no_warmup, root.resolve() if root else None, failing
    )
    if flags.approve_if_ready:
        from pipeline.runs.lifecycle import check_approvals

        check_approvals(plan.design)
    store = open_store(flags.store, flags.runs_dir)
    try:
        with hold_directory(store, plan.design.root, plan.run_id, flags.wait) as lock:
            # Decided under the lock: nothing another run or edit did meanwhile is overwritten.
            later = later_work(plan.design, kind, store)
            if later and not flags.force:
                raise later.refusal("create" if kind == PHASE1 else "final", plan.design.root)
            plan.overwrite = later.reasons
            # What a later batch compares to skip it, leaving out what the session found private.
            prints = Fingerprints(store.runs_dir, private=lambda _: plan.session.runtime.private_dirs)
            plan.inputs = fingerprint(plan, prints)
            plan.design_inputs = fingerprint(plan, prints, code=False)
            run = start_run(plan)
            store.register(run.run_dir)
            if not flags.as_json and not flags.show.quiet:
                typer.echo(f"run {run.run_id}", err=True)
            unapproved = (
                unapproved_design(plan.design, store) if kind == PHASE4 and not flags.as_json else None
            )
            if unapproved:
                say(f"[yellow]warning:[/yellow] {unapproved}", stderr=True)
            run_and_report(run, False, flags.show, store, lock, flags.approve_if_ready)
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
        quiet: QuietOpt = False,
        verbose: VerboseOpt = False,
        no_diff: NoDiffOpt = False,
        approve_if_ready: ApproveOpt = False,
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
            show=Show(quiet=quiet, verbose=verbose, diff=not no_diff, as_json=as_json),
            approve_if_ready=approve_if_ready,
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
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    no_diff: NoDiffOpt = False,
    approve_if_ready: ApproveOpt = False,
    force: ForceOpt = False,
) -> None:
    """Continue a run from its last completed step (after a crash, a pause or a spent budget).

    A run is never resumed over work recorded after it started (a newer run or edit of its
    documents): that is refused (exit 2) unless --force, which keeps those documents under the
    run's directory."""
    flags = ResumeFlags(
        force=force,
        budget=budget,
        max_cost=max_cost,
        runs_dir=runs_dir,
        fail_on=fail_on,
        wait=wait,
        as_json=as_json,
        store=store,
        max_requests=max_requests,
        show=Show(quiet=quiet, verbose=verbose, diff=not no_diff, as_json=as_json),
        approve_if_ready=approve_if_ready,
    )
    resume_run(run_id, flags)


def resume_run(run_id: str, flags: ResumeFlags) -> None:
    """Check the new limits, take the directory's lock, then load the run as it is now and go on."""
    from pipeline.agents.session import check_budget, check_requests, parse_cost
    from pipeline.runs.discard import refuse_discarded
    from pipeline.runs.lock import holder_for
    from pipeline.runs.overwrite import LaterWork
    from pipeline.runs.records import locate
    from pipeline.runs.setup import anew_over, load_run, refuse_later

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
            resumed = True
            try:
                refuse_later(run, runs, f"designloop resume {run_id} --force")
            except LaterWork as exc:
                if not flags.force or exc.overwrite is None:
                    raise
                run, resumed = anew_over(run, runs, exc.overwrite), False
                lock.relabel(holder_for(run.run_id))
            if flags.approve_if_ready:
                from pipeline.runs.lifecycle import check_approvals

                check_approvals(run.design)
            run_and_report(run, resumed, flags.show, runs, lock, flags.approve_if_ready)
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
