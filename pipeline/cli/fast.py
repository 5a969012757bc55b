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

from pipeline.cli.argv import ArgParser as _Parser
from pipeline.cli.argv import emit
from pipeline.errors import ExitCode, InputError

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
            "Run the mechanical checks of docs/formats.md §6. "
            "Exit 0 no blocker, 1 any blocker, 2 could not check."
        ),
    )
    p.add_argument(
        "directory",
        nargs="?",
        type=Path,
        help="a design directory; fills in the paths below from its _workflow/",
    )
    p.add_argument("--design-path", type=Path, help="design.md (or design-final.md)")
    p.add_argument("--design-mechanics-path", type=Path, help="design-mechanics.md, when a companion exists")
    p.add_argument("--plan-path", type=Path, help="implementation-plan.md")
    p.add_argument("--plan-dir", type=Path, help="the plan/ directory of track-N.md files")
    p.add_argument("--changed-section", help="the changed section's heading text (with --scope bounded)")
    p.add_argument("--target", choices=("design", "mechanics", "both"), default="design")
    p.add_argument("--scope", choices=("bounded", "whole-doc"), default="whole-doc")
    p.add_argument("--format", dest="output", choices=("json", "text", "sarif"), default="json")
    p.add_argument("--fix", action="store_true", help="apply auto-applicable fixes in place, then re-check")
    return p


def run_check(argv: list[str]) -> int:
    args = check_parser().parse_args(argv)
    from pipeline.checks.engine import CheckRequest, run_checks
    from pipeline.checks.table import rule_table
    from pipeline.cli.render import to_json, to_sarif, to_text
    from pipeline.formats.findings import has_blocker
    from pipeline.settings import load_limits, repo_root

    design_path, mech, plan_path, plan_dir = (
        args.design_path,
        args.design_mechanics_path,
        args.plan_path,
        args.plan_dir,
    )
    if args.directory is not None:
        base = resolve(args.directory)
        assert base is not None
        if not base.is_dir():
            raise InputError(
                "not a design directory", file=args.directory, hint="pass the directory that holds _workflow/"
            )
        wf = workflow_dir(base)
        design_path = design_path or wf / "design.md"
        if mech is None and (wf / "design-mechanics.md").is_file():
            mech = wf / "design-mechanics.md"
        if plan_path is None and (wf / "implementation-plan.md").is_file():
            plan_path = wf / "implementation-plan.md"
        if plan_dir is None and (wf / "plan").is_dir():
            plan_dir = wf / "plan"
    if design_path is None:
        raise InputError("no design to check", hint="pass --design-path PATH or a design directory")
    request = CheckRequest(
        design_path=resolve(design_path) or design_path,
        mechanics_path=resolve(mech),
        plan_path=resolve(plan_path),
        plan_dir=resolve(plan_dir),
        changed_section=args.changed_section,
        target=args.target,
        scope=args.scope,
    )
    limits = load_limits(repo_root())
    findings = run_checks(request, limits)
    if args.fix and any(f.auto_applicable for f in findings):
        from pipeline.checks.fixes import apply_fixes

        for name, count in apply_fixes(findings).items():
            sys.stderr.write(f"fixed {count} finding(s) in {name}\n")
        findings = run_checks(request, limits)
    if args.output == "text":
        emit(to_text(findings))
    elif args.output == "sarif":
        emit(to_sarif(findings, rule_table()))
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
