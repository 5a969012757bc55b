"""The edit command: one interactive mutation of design.md or its companion, as a checkpointed run."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

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
    app,
)
from pipeline.cli.runs import ApproveOpt, WaitOpt
from pipeline.errors import InputError

if TYPE_CHECKING:
    from pipeline.formats.edit_request import Choice
    from pipeline.formats.staleness import StaleQuestion

KINDS = (
    "content-edit, section-add, section-remove, section-rename, section-move, structural-rewrite, "
    "length-trigger-crossing, mechanics-edit, design-sync"
)


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
    approve_if_ready: ApproveOpt = False,
    unfreeze: Annotated[
        bool,
        typer.Option("--unfreeze", help="edit design.md or its companion although phase 4 froze them"),
    ] = False,
) -> None:
    """One interactive mutation through the discipline: apply, check, cold-read, fix, log.

    Exit 0 PASS (or should-fix findings left, with a warning), 1 blockers remain (or should-fix
    under --fail-on should-fix), 2 bad input or a malformed edit (nothing is changed), 4 budget,
    6 refused: design-final.md exists (the design is frozen; --unfreeze), or --approve-if-ready
    refused the approval of a PASS.
    """
    from pipeline.agents.session import SessionOptions
    from pipeline.cli.fast import resolve
    from pipeline.cli.runs import _execute, _fail_on, _locked, runs_dir_of
    from pipeline.formats.edit_request import EditRequest
    from pipeline.formats.textio import read_text
    from pipeline.runs.edit_setup import new_edit_id, prepare_edit
    from pipeline.runs.store import LocalStore

    choice = _choice(stale_choice, "--stale-choice", ("a", "b", "c"))
    failing = _fail_on(fail_on) or "blocker"
    text = None
    if content is not None:
        text = read_text(resolve(content) or content, what="--content file").text
    request = EditRequest(
        kind=kind,
        section=section,
        old=old,
        new=new,
        content=text,
        content_file=str(content) if content is not None else None,
        to=to,
        after=after,
        instruction=instruction,
        fail_on=failing,
    )
    chooser: Callable[[StaleQuestion], Choice] | None = None
    if choice is not None:
        answer: Choice = "a" if choice == "a" else "b" if choice == "b" else "c"
        chooser = lambda _question: answer  # noqa: E731
    elif sys.stdin.isatty() and sys.stdout.isatty() and not as_json:
        chooser = _ask
    options = SessionOptions(
        model,
        tuple(role_model or ()),
        base_url,
        budget,
        max_cost,
        runs_dir_of(runs_dir),
        max_requests=max_requests,
    )
    target = resolve(directory) or directory
    _frozen(target, request.kind, unfreeze, approve_if_ready, as_json)
    run_id = new_edit_id(request.kind)
    # The design directory's run lock is held from before the edit's run exists to its end.
    store = LocalStore(options.runs_dir or runs_dir_of(None))  # edits run on the local store
    with _locked(store, target.resolve(), run_id, wait) as lock:
        run = prepare_edit(request, target, options, chooser, run_id)
        if not as_json:
            typer.echo(f"run {run.run_id}", err=True)
        _execute(run, False, as_json, store, lock, approve_if_ready)


def _frozen(target: Path, kind: str, unfreeze: bool, approve: bool, as_json: bool) -> None:
    """Refuse an edit of a design phase 4 froze (exit 6), unless --unfreeze says so; with
    --approve-if-ready, an approvals file that cannot take the approval is bad input now."""
    import json

    from pipeline.errors import TransitionRefused
    from pipeline.formats.design_dir import open_design_dir
    from pipeline.runs.lifecycle import check_approvals, refuse_frozen

    design = open_design_dir(target)
    if approve:
        check_approvals(design)
    try:
        refuse_frozen(design, kind, unfreeze)
    except TransitionRefused as exc:
        if as_json:
            typer.echo(json.dumps({"error": exc.to_json()}, indent=2))
        raise
