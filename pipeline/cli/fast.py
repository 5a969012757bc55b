"""The deterministic commands (check, slices, gate, drift, claims) on the standard library's argparse.

These run in CI on every merge and must start fast, so this module imports neither typer
(whose parameter coercion builds pydantic adapters, about 0.1 s per invocation) nor any
graph or model SDK. ``pipeline.cli`` dispatches here before anything heavy loads.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.cli.argv import ArgParser as _Parser
from pipeline.cli.argv import emit
from pipeline.errors import ExitCode, InputError

if TYPE_CHECKING:
    from pipeline.checks.engine import CheckRequest

FAST_COMMANDS = ("check", "slices", "gate", "drift", "claims")


def resolve(path: Path | None) -> Path | None:
    """Paths may be relative to the repository root or absolute (docs/formats.md §1)."""
    if path is None or path.is_absolute() or path.exists():
        return path
    from pipeline.settings import repo_root

    rooted = repo_root() / path
    return rooted if rooted.exists() else path


def workflow_dir(directory: Path) -> Path:
    return directory / "_workflow" if (directory / "_workflow").is_dir() else directory


def check_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="designloop check",
        description=(
            "Run the mechanical checks of docs/formats.md §6 over every design named: design "
            "directories, design documents, or globs of either (as pre-commit passes them). "
            "Exit 0 no blocker, 1 any blocker, 2 could not check."
        ),
    )
    p.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="a design directory (its _workflow/ fills in the paths below), a design.md, "
        "design-mechanics.md or design-final.md, or a glob of them",
    )
    p.add_argument("--design-path", type=Path, metavar="FILE", help="design.md (or design-final.md)")
    p.add_argument(
        "--design-mechanics-path",
        type=Path,
        metavar="FILE",
        help="design-mechanics.md, when a companion exists",
    )
    p.add_argument("--plan-path", type=Path, metavar="FILE", help="implementation-plan.md")
    p.add_argument("--plan-dir", type=Path, metavar="DIR", help="the plan/ directory of track-N.md files")
    p.add_argument(
        "--changed-section", metavar="NAME", help="the changed section's heading text (with --scope bounded)"
    )
    p.add_argument("--target", choices=("design", "mechanics", "both"), default="design")
    p.add_argument("--scope", choices=("bounded", "whole-doc"), default="whole-doc")
    p.add_argument("--format", dest="output", choices=("json", "text", "sarif"), default="json")
    p.add_argument("--fix", action="store_true", help="apply auto-applicable fixes in place, then re-check")
    return p


COMPANIONS = {"design-mechanics.md": "design.md", "design-mechanics-final.md": "design-final.md"}
"""A companion named on the command line is checked with the design it belongs to."""


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


def _request_for(path: Path, args: argparse.Namespace) -> CheckRequest:
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
    mech = args.design_mechanics_path or (companion if companion.is_file() else None)
    plan = args.plan_path or (
        wf / "implementation-plan.md" if (wf / "implementation-plan.md").is_file() else None
    )
    plan_dir = args.plan_dir or (wf / "plan" if (wf / "plan").is_dir() else None)
    return CheckRequest(
        design_path=resolve(args.design_path) or design if args.design_path else design,
        mechanics_path=resolve(mech),
        plan_path=resolve(plan),
        plan_dir=resolve(plan_dir),
        changed_section=args.changed_section,
        target=args.target,
        scope=args.scope,
    )


def check_requests(args: argparse.Namespace) -> list[CheckRequest]:
    """One request per design named (``--design-path`` alone is one request)."""
    if args.paths:
        if args.design_path is not None and len(args.paths) > 1:
            raise InputError(
                "--design-path names one design; several paths were given", hint="drop --design-path"
            )
        return [_request_for(path, args) for path in _expand(args.paths)]
    if args.design_path is None:
        raise InputError("no design to check", hint="pass --design-path PATH, a design directory or a glob")
    from pipeline.checks.engine import CheckRequest

    return [  # the flags alone say what to check
        CheckRequest(
            design_path=resolve(args.design_path) or args.design_path,
            mechanics_path=resolve(args.design_mechanics_path),
            plan_path=resolve(args.plan_path),
            plan_dir=resolve(args.plan_dir),
            changed_section=args.changed_section,
            target=args.target,
            scope=args.scope,
        )
    ]


def run_check(argv: list[str]) -> int:
    args = check_parser().parse_args(argv)
    from pipeline.checks.engine import run_checks
    from pipeline.checks.table import rule_table
    from pipeline.cli.render import to_json, to_sarif, to_text
    from pipeline.formats.findings import has_blocker
    from pipeline.settings import load_limits, repo_root

    requests = check_requests(args)
    limits = load_limits(repo_root())
    findings = []
    for request in requests:
        found = run_checks(request, limits)
        if args.fix and any(f.auto_applicable for f in found):
            from pipeline.checks.fixes import apply_fixes

            for name, count in apply_fixes(found).items():
                sys.stderr.write(f"fixed {count} finding(s) in {name}\n")
            found = run_checks(request, limits)
        findings += found
    if args.output == "text":
        emit(to_text(findings))
    elif args.output == "sarif":
        # Paths relative to the repository that holds what was checked (code scanning's root).
        emit(to_sarif(findings, rule_table(), repo_root(requests[0].design_path.resolve().parent)))
    else:
        emit(to_json(findings))
    return ExitCode.FINDINGS if has_blocker(findings) else ExitCode.OK


def run_slices(argv: list[str]) -> int:
    p = _Parser(
        prog="designloop slices", description="Print the deterministic auditor slice partition as JSON."
    )
    p.add_argument("path", type=Path, help="design.md, or a design directory")
    p.add_argument("--window", type=int, help="W, lines per slice (default from params)")
    p.add_argument("--cap", type=int, help="C, most slices (default from params)")
    args = p.parse_args(argv)
    from pipeline.formats.design_doc import load_design
    from pipeline.formats.slices import FanOut, partition
    from pipeline.settings import load_limits, repo_root

    for name in ("window", "cap"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            raise InputError(f"--{name} must be a positive integer", hint="e.g. --window 200 --cap 6")
    target = resolve(args.path) or args.path
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
    parts = partition(
        doc.lines, args.window or limits.window, args.cap or limits.cap, limits.single_slice_max
    )
    emit(json.dumps(FanOut(len(doc.lines), parts).to_json()))
    return ExitCode.OK


def run_gate(argv: list[str]) -> int:
    p = _Parser(
        prog="designloop gate",
        description="Print the adversarial gate state as JSON. Exit 0 resolved, 3 open or not run.",
    )
    p.add_argument("path", type=Path, help="research-log.md, or a design directory")
    args = p.parse_args(argv)
    from pipeline.formats.research_log import load_research_log

    target = resolve(args.path) or args.path
    if target.is_dir():
        target = workflow_dir(target) / "research-log.md"
    state = load_research_log(target).gate()
    emit(json.dumps(state.to_json(), indent=2, ensure_ascii=False))
    return ExitCode.OK if state.state == "resolved" else ExitCode.GATE_PAUSED


RUNNERS = {"check": run_check, "slices": run_slices, "gate": run_gate}


def run_fast(command: str, argv: list[str]) -> int:
    if command in ("drift", "claims"):
        from pipeline.cli.drift import run_claims, run_drift

        return (run_drift if command == "drift" else run_claims)(argv)
    return RUNNERS[command](argv)
