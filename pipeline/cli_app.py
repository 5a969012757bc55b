"""The typer application: the agent and run commands, and the listing of every command."""

from __future__ import annotations

import typer

from .cli_checks import FAST_COMMANDS, run_fast

app = typer.Typer(
    name="designloop",
    help="Write and review design documents under a strict, resumable review discipline.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

_SUMMARIES = {
    "check": "Run the mechanical checks (exit 0 no blocker, 1 any blocker, 2 could not check).",
    "slices": "Print the deterministic auditor slice partition as JSON.",
    "gate": "Print the research log's adversarial gate state (exit 0 resolved, 3 open or not run).",
}


def _passthrough(name: str) -> None:
    # `designloop <name> ...` is normally served before typer loads; this keeps the command
    # listed in `designloop --help` and serves calls that come through the typer app.
    @app.command(
        name=name,
        help=_SUMMARIES[name],
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []},
        add_help_option=False,
    )
    def command(ctx: typer.Context) -> None:
        raise typer.Exit(run_fast(name, list(ctx.args)))


for _name in FAST_COMMANDS:
    _passthrough(_name)
