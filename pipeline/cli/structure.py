"""designloop slices and designloop gate: the auditor partition and the adversarial gate, read
from the documents alone (no model, no run store)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pipeline.cli.app import app
from pipeline.cli.options import JsonOpt
from pipeline.cli.paths import resolve, workflow_dir
from pipeline.errors import ExitCode, InputError


@app.command(no_args_is_help=True)
def slices(
    path: Annotated[Path, typer.Argument(metavar="PATH", help="design.md, or a design directory")],
    window: Annotated[
        int | None, typer.Option("--window", metavar="N", help="W, lines per slice (default from params)")
    ] = None,
    cap: Annotated[
        int | None, typer.Option("--cap", metavar="N", help="C, most slices (default from params)")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Print the deterministic auditor slice partition as JSON (``--json`` or not)."""
    from pipeline.cli.output import emit_json
    from pipeline.formats.design_doc import load_design
    from pipeline.formats.slices import FanOut, partition
    from pipeline.settings import load_limits, repo_root

    for name, value in (("window", window), ("cap", cap)):
        if value is not None and value < 1:
            raise InputError(f"--{name} must be a positive integer", hint="e.g. --window 200 --cap 6")
    target = resolve(path) or path
    if target.is_dir():
        target = workflow_dir(target) / "design.md"
    limits = load_limits(repo_root())
    doc = load_design(target)
    if not doc.lines:
        raise InputError(
            "the design is empty: there is nothing to partition",
            file=target,
            hint="write the design first, or pass the right path",
        )
    parts = partition(doc.lines, window or limits.window, cap or limits.cap, limits.single_slice_max)
    emit_json(FanOut(len(doc.lines), parts).to_json())


@app.command(no_args_is_help=True)
def gate(
    path: Annotated[Path, typer.Argument(metavar="PATH", help="research-log.md, or a design directory")],
    as_json: JsonOpt = False,
) -> None:
    """Print the research log's adversarial gate state as JSON (``--json`` or not).

    Exit 0 resolved, 3 open or not run.
    """
    from pipeline.cli.output import emit_json
    from pipeline.formats.research_log import load_research_log

    target = resolve(path) or path
    if target.is_dir():
        target = workflow_dir(target) / "research-log.md"
    state = load_research_log(target).gate()
    emit_json(state.to_json())
    raise typer.Exit(int(ExitCode.OK if state.state == "resolved" else ExitCode.GATE_PAUSED))
