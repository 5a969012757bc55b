"""The edit command: one interactive mutation of design.md or its companion, as a checkpointed run."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pipeline.cli.app import app
from pipeline.cli.options import (
    ApproveOpt,
    BaseUrlOpt,
    BudgetOpt,
    CostOpt,
    EditFlags,
    JsonOpt,
    ModelOpt,
    NoDiffOpt,
    QuietOpt,
    RequestsOpt,
    RoleModelOpt,
    RunsOpt,
    Show,
    UnfreezeOpt,
    VerboseOpt,
    WaitOpt,
    parse_fail_on,
    runs_dir_of,
)
from pipeline.errors import InputError
from pipeline.formats.kinds import EDIT_KINDS, is_edit_kind

if TYPE_CHECKING:
    from pipeline.formats.edit_request import Choice, EditRequest
    from pipeline.formats.sync_reconcile import StaleQuestion

KINDS = ", ".join(EDIT_KINDS)


def _choice(value: str | None, flag: str, allowed: tuple[str, ...]) -> str | None:
    if value is not None and value not in allowed:
        raise InputError(
            f"{flag} {value!r} is not one of {', '.join(allowed)}", hint=f"e.g. {flag} {allowed[0]}"
        )
    return value


def _ask(question: StaleQuestion) -> Choice:
    from rich.prompt import Prompt

    answer = Prompt.ask(question.text(), choices=["a", "b", "c"], default=question.default)
    return "a" if answer == "a" else "b" if answer == "b" else "c"


@app.command()
def edit(
    directory: Annotated[Path, typer.Argument(help="the design directory")],
    kind: Annotated[str, typer.Option("--kind", help=f"the mutation kind: {KINDS}")],
    section: Annotated[str | None, typer.Option("--section", help="the section the edit is about")] = None,
    old: Annotated[str | None, typer.Option("--old", help="the exact text to replace (once)")] = None,
    new: Annotated[str | None, typer.Option("--new", help="the text that replaces --old")] = None,
    content: Annotated[
        Path | None, typer.Option("--content", help="a file with a section's body (or the whole design)")
    ] = None,
    to: Annotated[str | None, typer.Option("--to", help="the new name (section-rename)")] = None,
    after: Annotated[str | None, typer.Option("--after", help="the section it goes after")] = None,
    instruction: Annotated[
        str | None, typer.Option("--instruction", help="a request for the inline editor role")
    ] = None,
    stale_choice: Annotated[
        str | None, typer.Option("--stale-choice", help="a|b|c: the answer to the staleness question")
    ] = None,
    fail_on: Annotated[
        str | None, typer.Option("--fail-on", help="should-fix: exit 1 when should-fix findings remain")
    ] = None,
    model: ModelOpt = None,
    role_model: RoleModelOpt = None,
    base_url: BaseUrlOpt = None,
    budget: BudgetOpt = None,
    max_cost: CostOpt = None,
    runs_dir: RunsOpt = None,
    wait: WaitOpt = False,
    as_json: JsonOpt = False,
    max_requests: RequestsOpt = None,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    no_diff: NoDiffOpt = False,
    approve_if_ready: ApproveOpt = False,
    unfreeze: UnfreezeOpt = False,
) -> None:
    """One interactive mutation through the discipline: apply, check, cold-read, fix, log.

    Exit 0 PASS (or should-fix findings left, with a warning), 1 blockers remain (or should-fix
    under --fail-on should-fix), 2 bad input or a malformed edit (nothing is changed), 4 budget,
    6 refused: design-final.md exists (the design is frozen; --unfreeze), or --approve-if-ready
    refused the approval of a PASS.
    """
    flags = EditFlags(
        kind=kind,
        section=section,
        old=old,
        new=new,
        content=content,
        to=to,
        after=after,
        instruction=instruction,
        stale_choice=stale_choice,
        fail_on=fail_on,
        model=model,
        role_model=role_model,
        base_url=base_url,
        budget=budget,
        max_cost=max_cost,
        runs_dir=runs_dir,
        wait=wait,
        as_json=as_json,
        max_requests=max_requests,
        show=Show(quiet=quiet, verbose=verbose, diff=not no_diff, as_json=as_json),
        approve_if_ready=approve_if_ready,
        unfreeze=unfreeze,
    )
    run_edit(directory, flags)


def edit_request(flags: EditFlags) -> EditRequest:
    """The edit the flags ask for (its form is validated when the run is planned)."""
    from pipeline.cli.paths import resolve
    from pipeline.formats.edit_request import EditRequest
    from pipeline.formats.textio import read_text

    if not is_edit_kind(flags.kind):
        raise InputError(f"{flags.kind!r} is not an interactive mutation kind", hint=f"one of: {KINDS}")
    text = None
    if flags.content is not None:
        text = read_text(resolve(flags.content) or flags.content, what="--content file").text
    return EditRequest(
        kind=flags.kind,
        section=flags.section,
        old=flags.old,
        new=flags.new,
        content=text,
        content_file=str(flags.content) if flags.content is not None else None,
        to=flags.to,
        after=flags.after,
        instruction=flags.instruction,
        fail_on=parse_fail_on(flags.fail_on) or "blocker",
    )


def _chooser(flags: EditFlags) -> Callable[[StaleQuestion], Choice] | None:
    """Who answers the staleness question: --stale-choice, else the person at the terminal."""
    choice = _choice(flags.stale_choice, "--stale-choice", ("a", "b", "c"))
    if choice is not None:
        answer: Choice = "a" if choice == "a" else "b" if choice == "b" else "c"
        return lambda _question: answer
    if sys.stdin.isatty() and sys.stdout.isatty() and not flags.as_json:
        return _ask
    return None


def run_edit(directory: Path, flags: EditFlags) -> None:
    """Take the directory's lock, validate the edit whole and start its run under it, run it."""
    from pipeline.cli.paths import resolve
    from pipeline.cli.runs import hold_directory, run_and_report
    from pipeline.runs.setup import new_run_id, plan_edit, start_run
    from pipeline.runs.store import LocalStore

    request = edit_request(flags)
    chooser = _chooser(flags)
    options = flags.session()
    target = resolve(directory) or directory
    run_id = new_run_id(request.kind)
    # The design directory's run lock is held from before the edit's run exists to its end.
    store = LocalStore(options.runs_dir or runs_dir_of(None))  # edits run on the local store
    with hold_directory(store, target.resolve(), run_id, flags.wait) as lock:
        _frozen(target, request.kind, flags)  # decided under the lock: no final run is under way
        run = start_run(plan_edit(request, target, options, chooser, run_id))
        if not flags.as_json and not flags.show.quiet:
            typer.echo(f"run {run.run_id}", err=True)
        run_and_report(run, False, flags.show, store, lock, flags.approve_if_ready)


def _frozen(target: Path, kind: str, flags: EditFlags) -> None:
    """Refuse an edit of a design phase 4 froze (exit 6), unless --unfreeze says so; with
    --approve-if-ready, an approvals file that cannot take the approval is bad input now."""
    from pipeline.errors import TransitionRefused
    from pipeline.formats.design_dir import open_design_dir
    from pipeline.runs.lifecycle import check_approvals, refuse_frozen

    design = open_design_dir(target)
    if flags.approve_if_ready:
        check_approvals(design)
    try:
        refuse_frozen(design, kind, flags.unfreeze)
    except TransitionRefused as exc:
        if flags.as_json:
            from pipeline.cli.output import emit_json

            emit_json({"error": exc.to_json()})
        raise
