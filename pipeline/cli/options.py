"""Every option more than one command takes, defined once; each command's flags as one object;
and what the shared options resolve to (the runs directory, the run store, ``--fail-on``).

A command's function lists its options (typer reads them from its signature) and hands them on
as one flags object, by name: no helper takes a dozen values in a row.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from pipeline.errors import InputError

if TYPE_CHECKING:
    from pipeline.agents.session import SessionOptions
    from pipeline.runs.records import FailOn
    from pipeline.runs.store import RunStore

C = TypeVar("C", bound=str)

ModelOpt = Annotated[
    str | None, typer.Option("--model", metavar="MODEL", help="pydantic-ai model string for every role")
]
RoleModelOpt = Annotated[
    list[str] | None, typer.Option("--role-model", metavar="ROLE=MODEL", help="a role's model, repeatable")
]
BaseUrlOpt = Annotated[
    str | None, typer.Option("--base-url", metavar="URL", help="an OpenAI-compatible server's base URL")
]
BudgetOpt = Annotated[
    int | None, typer.Option("--budget", metavar="TOKENS", help="stop cleanly after this many tokens")
]
CostOpt = Annotated[
    str | None, typer.Option("--max-cost", metavar="USD", help="stop cleanly after this many US dollars")
]
RequestsOpt = Annotated[
    int | None,
    typer.Option("--max-requests", help="the most model requests one spawn may make ([run] spawn_requests)"),
]
RunsOpt = Annotated[
    Path | None, typer.Option("--runs-dir", metavar="DIR", help="run records and the model-call cache")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="one JSON object on stdout")]
StoreOpt = Annotated[
    str | None,
    typer.Option(
        "--store",
        metavar="URL",
        help="postgresql://... keeps runs in PostgreSQL (default: DESIGNLOOP_STORE, else local files)",
    ),
]
NoWarmupOpt = Annotated[bool, typer.Option("--no-warmup", help="spawn every auditor slice at once")]
FailOnOpt = Annotated[
    str | None,
    typer.Option(
        "--fail-on",
        metavar="blocker|should-fix",
        help="blocker (default): only BLOCKER REMAINS exits 1; should-fix: SHOULD-FIX REMAINS exits 1 too",
    ),
]
WaitOpt = Annotated[
    bool, typer.Option("--wait", help="if another run is working on the directory, start when it is done")
]
CodeRootOpt = Annotated[
    Path | None, typer.Option("--code-root", metavar="DIR", help="where the code the design describes lives")
]
ForceOpt = Annotated[
    bool,
    typer.Option(
        "--force",
        help="run even over later work (edits logged since the last create, a hand-edited "
        "document); the overwritten files are kept under runs/<run-id>/",
    ),
]
StaleOnlyOpt = Annotated[
    bool,
    typer.Option(
        "--stale-only",
        help="skip by the design inputs and the claims ledgers instead of the whole code: run only "
        "where a design input changed or a claim went stale",
    ),
]
ApproveOpt = Annotated[
    bool,
    typer.Option(
        "--approve-if-ready",
        help="accept the revision the run leaves in the same invocation, only when every condition "
        "holds (docs/lifecycle.md); the run's outcome stands either way",
    ),
]
UnfreezeOpt = Annotated[
    bool,
    typer.Option("--unfreeze", help="edit design.md or its companion although phase 4 froze them"),
]
DirArg = Annotated[Path, typer.Argument(help="the design directory")]
DocFileOpt = Annotated[
    str | None,
    typer.Option(
        "--file", help="design, mechanics, final or final-mechanics (default: the stage's documents)"
    ),
]
DirsArg = Annotated[list[str], typer.Argument(help="design directories or globs, e.g. 'docs/adr/*'")]
QuietOpt = Annotated[
    bool, typer.Option("--quiet", "-q", help="print only the outcome (and what to do next); no live view")
]
VerboseOpt = Annotated[
    bool, typer.Option("--verbose", "-v", help="print each step as a line on stderr as it happens")
]
OutputFormatOpt = Annotated[
    str | None,
    typer.Option(
        "--output-format",
        metavar="FORMAT",
        help="text, json, sarif, github (workflow commands), rdjson (reviewdog) or junit",
    ),
]
OutputFileOpt = Annotated[
    Path | None, typer.Option("--output-file", "-o", metavar="FILE", help="write the output to FILE")
]
NoDiffOpt = Annotated[bool, typer.Option("--no-diff", help="leave the diff out of what is printed")]


@dataclass(frozen=True, slots=True, kw_only=True)
class Show:
    """What a run command prints (``--quiet``, ``--verbose``, ``--no-diff``, ``--json``)."""

    quiet: bool = False
    verbose: bool = False
    diff: bool = True
    as_json: bool = False


def choice(flag: str, value: str, allowed: tuple[C, ...]) -> C:
    """``value`` as one of ``allowed``, or bad input naming the likeliest one meant."""
    for option in allowed:
        if value == option:
            return option
    from pipeline.validation import did_you_mean

    close = did_you_mean(value, allowed)
    guess = f"did you mean {flag} {close}? " if close else ""
    raise InputError(
        f"{flag} {value!r} is not one of {', '.join(allowed)}", hint=f"{guess}e.g. {flag} {allowed[0]}"
    )


def output_format(value: str | None, default: str) -> str:
    """``--output-format``, checked against the emitters (cli/emitters.py)."""
    from pipeline.cli.emitters import FORMATS

    return choice("--output-format", value if value is not None else default, FORMATS)


def parse_fail_on(value: str | None) -> FailOn | None:
    """``--fail-on``: blocker or should-fix (None: not given)."""
    if value is None:
        return None
    if value == "blocker":
        return "blocker"
    if value == "should-fix":
        return "should-fix"
    raise InputError(f"--fail-on {value!r} is not blocker or should-fix", hint="e.g. --fail-on should-fix")


def runs_dir_of(runs_dir: Path | None) -> Path:
    """``--runs-dir``, or the repository's runs directory; never one reached through a link."""
    from pipeline.formats.textio import check_runs_link
    from pipeline.settings import default_runs_dir, repo_root

    given = Path(os.path.abspath(runs_dir or default_runs_dir(repo_root())))
    check_runs_link(given)
    if runs_dir is not None:  # every hint printed from here on names it, so pasting it works
        from pipeline.cli.output import remember_flag

        remember_flag("--runs-dir", str(runs_dir))
    return given.resolve()


def open_store(store: str | None, runs_dir: Path | None) -> RunStore:
    """The run store the command works against: --store, DESIGNLOOP_STORE, else local files."""
    from pipeline.runs.store import open_store as open_

    if store is not None:  # for the hints; an address with a password is never printed
        from pipeline.cli.output import remember_flag
        from pipeline.runs.address import redact

        shown = redact(store)
        remember_flag("--store", "URL" if "***" in shown or shown != store else store)
    return open_(store, runs_dir_of(runs_dir))


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionFlags:
    """The models a run uses and what it may spend: every command that runs roles takes these."""

    model: str | None = None
    role_model: list[str] | None = None
    base_url: str | None = None
    budget: int | None = None
    max_cost: str | None = None
    runs_dir: Path | None = None
    max_requests: int | None = None

    def session(self) -> SessionOptions:
        from pipeline.agents.session import SessionOptions

        return SessionOptions(
            model=self.model,
            role_models=tuple(self.role_model or ()),
            base_url=self.base_url,
            budget_tokens=self.budget,
            max_cost=self.max_cost,
            runs_dir=runs_dir_of(self.runs_dir),
            max_requests=self.max_requests,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFlags(SessionFlags):
    """``create`` and ``final``."""

    no_warmup: bool = False
    code_root: Path | None = None
    fail_on: str | None = None
    wait: bool = False
    as_json: bool = False
    store: str | None = None
    force: bool = False
    show: Show = Show()
    approve_if_ready: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ResumeFlags:
    """``resume``: a new budget, cost cap or request limit replaces the recorded one."""

    budget: int | None = None
    max_cost: str | None = None
    runs_dir: Path | None = None
    fail_on: str | None = None
    wait: bool = False
    as_json: bool = False
    store: str | None = None
    max_requests: int | None = None
    show: Show = Show()
    approve_if_ready: bool = False
    force: bool = False
    """Go on over work recorded after the run started (kept under the run's directory)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EditFlags(SessionFlags):
    """``edit``: the change (its payload flags as the edit request takes them) and the run's."""

    kind: str
    section: str | None = None
    old: str | None = None
    new: str | None = None
    content: Path | None = None
    to: str | None = None
    after: str | None = None
    instruction: str | None = None
    stale_choice: str | None = None
    fail_on: str | None = None
    wait: bool = False
    as_json: bool = False
    show: Show = Show()
    approve_if_ready: bool = False
    unfreeze: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchFlags(SessionFlags):
    """``batch create|final`` (and, without the batch's own limits and files, ``enqueue``)."""

    jobs: int = 4
    batch_budget: int | None = None
    batch_max_cost: str | None = None
    store: str | None = None
    no_warmup: bool = False
    fail_on: str | None = None
    wait: bool = False
    as_json: bool = False
    sarif: Path | None = None
    force: bool = False
    stale_only: bool = False
    """Skip by the design inputs and the claims ledgers instead of the whole code (fleet.rows)."""
    show: Show = Show()
    approve_if_ready: bool = False
    output_format: str | None = None
    """``--output-format`` (``--json`` is ``json``); None: the table."""
    output_file: Path | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreFlags:
    """The run store a lifecycle command reads (``approve``, ``reject``, ``ready``, ``show``,
    ``status DIR``) and how it answers."""

    runs_dir: Path | None = None
    store: str | None = None
    as_json: bool = False

    def open(self) -> RunStore:
        return open_store(self.store, self.runs_dir)
