"""designloop check: the mechanical checks over every design named (design directories, design
documents, globs of either, as pre-commit passes them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pipeline.cli.app import app
from pipeline.cli.paths import resolve, workflow_dir
from pipeline.errors import ExitCode, InputError

if TYPE_CHECKING:
    from pipeline.checks.engine import CheckRequest
    from pipeline.formats.kinds import Target

COMPANIONS = {"design-mechanics.md": "design.md", "design-mechanics-final.md": "design-final.md"}
"""A companion named on the command line is checked with the design it belongs to."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckFlags:
    paths: list[str]
    design_path: Path | None = None
    design_mechanics_path: Path | None = None
    plan_path: Path | None = None
    plan_dir: Path | None = None
    changed_section: str | None = None
    target: Target = "design"
    scope: str = "whole-doc"
    output_format: str = "json"
    fix: bool = False


def _expand(paths: list[str]) -> list[Path]:
    """Each path or glob, resolved (relative to the repository root when not found here),
    each design once, in the order named; a name that matches nothing is bad input."""
    import glob

    found: list[Path] = []
    for given in paths:
        matches = sorted(glob.glob(given)) if glob.has_magic(given) else [given]
        if not matches:
            raise InputError(f"{given!r} matches no file or directory", hint="check the path or the glob")
        for match in matches:
            path = resolve(Path(match)) or Path(match)
            if path.name in COMPANIONS:
                path = path.with_name(COMPANIONS[path.name])
            if path not in found:
                found.append(path)
    return found


def _request_for(path: Path, flags: CheckFlags) -> CheckRequest:
    """What to check for one design directory or document, its companion, plan and tracks
    found beside it unless a flag names them."""
    from pipeline.checks.engine import CheckRequest

    if path.is_dir():
        wf = workflow_dir(path)
        design = wf / "design.md"
    elif path.is_file() or path.suffix == ".md":
        design, wf = path, path.parent
    else:
        raise InputError("not a design directory", file=path, hint="pass the directory that holds _workflow/")
    companion = design.with_name(
        "design-mechanics-final.md" if design.name == "design-final.md" else "design-mechanics.md"
    )
    mech = flags.design_mechanics_path or (companion if companion.is_file() else None)
    plan = flags.plan_path or (
        wf / "implementation-plan.md" if (wf / "implementation-plan.md").is_file() else None
    )
    plan_dir = flags.plan_dir or (wf / "plan" if (wf / "plan").is_dir() else None)
    return CheckRequest(
        design_path=resolve(flags.design_path) or design if flags.design_path else design,
        mechanics_path=resolve(mech),
        plan_path=resolve(plan),
        plan_dir=resolve(plan_dir),
        changed_section=flags.changed_section,
        target=flags.target,
        scope="bounded" if flags.scope == "bounded" else "whole-doc",
    )


def check_requests(flags: CheckFlags) -> list[CheckRequest]:
    """One request per design named (``--design-path`` alone is one request)."""
    if flags.paths:
        if flags.design_path is not None and len(flags.paths) > 1:
            raise InputError(
                "--design-path names one design; several paths were given", hint="drop --design-path"
            )
        return [_request_for(path, flags) for path in _expand(flags.paths)]
    if flags.design_path is None:
        raise InputError("no design to check", hint="pass --design-path PATH, a design directory or a glob")
    from pipeline.checks.engine import CheckRequest

    return [  # the flags alone say what to check
        CheckRequest(
            design_path=resolve(flags.design_path) or flags.design_path,
            mechanics_path=resolve(flags.design_mechanics_path),
            plan_path=resolve(flags.plan_path),
            plan_dir=resolve(flags.plan_dir),
            changed_section=flags.changed_section,
            target=flags.target,
            scope="bounded" if flags.scope == "bounded" else "whole-doc",
        )
    ]


def run_check(flags: CheckFlags) -> int:
    from pipeline.checks.engine import run_checks
    from pipeline.checks.table import rule_table
    from pipeline.cli.output import write
    from pipeline.cli.render import to_json, to_sarif, to_text
    from pipeline.formats.findings import has_blocker
    from pipeline.settings import load_limits, repo_root

    requests = check_requests(flags)
    limits = load_limits(repo_root())
    findings = []
    for request in requests:
        found = run_checks(request, limits)
        if flags.fix and any(f.auto_applicable for f in found):
            from pipeline.checks.fixes import apply_fixes

            for name, count in apply_fixes(found).items():
                write(f"fixed {count} finding(s) in {name}", stderr=True)
            found = run_checks(request, limits)
        findings += found
    if flags.output_format == "text":
        write(to_text(findings))
    elif flags.output_format == "sarif":
        # Paths relative to the repository that holds what was checked (code scanning's root).
        write(to_sarif(findings, rule_table(), repo_root(requests[0].design_path.resolve().parent)))
    else:
        write(to_json(findings))
    return ExitCode.FINDINGS if has_blocker(findings) else ExitCode.OK


FileOpt = Annotated[Path | None, typer.Option(metavar="FILE")]


@app.command(no_args_is_help=True)
def check(
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="PATH...",
            help="a design directory (its _workflow/ fills in the paths below), a design.md, "
            "design-mechanics.md or design-final.md, or a glob of them",
        ),
    ] = None,
    design_path: Annotated[
        Path | None, typer.Option("--design-path", metavar="FILE", help="design.md (or design-final.md)")
    ] = None,
    design_mechanics_path: Annotated[
        Path | None,
        typer.Option(
            "--design-mechanics-path", metavar="FILE", help="design-mechanics.md, when a companion exists"
        ),
    ] = None,
    plan_path: Annotated[
        Path | None, typer.Option("--plan-path", metavar="FILE", help="implementation-plan.md")
    ] = None,
    plan_dir: Annotated[
        Path | None, typer.Option("--plan-dir", metavar="DIR", help="the plan/ directory of track-N.md files")
    ] = None,
    changed_section: Annotated[
        str | None,
        typer.Option(
            "--changed-section",
            metavar="NAME",
            help="the changed section's heading text (with --scope bounded)",
        ),
    ] = None,
    target: Annotated[str, typer.Option("--target", metavar="design|mechanics|both")] = "design",
    scope: Annotated[str, typer.Option("--scope", metavar="bounded|whole-doc")] = "whole-doc",
    output_format: Annotated[
        str, typer.Option("--output-format", "--format", metavar="FORMAT", help="json, text or sarif")
    ] = "json",
    fix: Annotated[
        bool, typer.Option("--fix", help="apply auto-applicable fixes in place, then re-check")
    ] = False,
) -> None:
    """Run the mechanical checks over every design named: design directories, design documents,
    or globs of either (as pre-commit passes them).

    Exit 0 no blocker, 1 any blocker, 2 could not check.
    """
    from pipeline.cli.options import choice

    flags = CheckFlags(
        paths=list(paths or ()),
        design_path=design_path,
        design_mechanics_path=design_mechanics_path,
        plan_path=plan_path,
        plan_dir=plan_dir,
        changed_section=changed_section,
        target=choice("--target", target, ("design", "mechanics", "both")),
        scope=choice("--scope", scope, ("bounded", "whole-doc")),
        output_format=choice("--output-format", output_format, ("json", "text", "sarif")),
        fix=fix,
    )
    raise typer.Exit(int(run_check(flags)))
