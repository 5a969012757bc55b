"""designloop check: the mechanical checks over every design named (design directories, design
documents, globs of either, as pre-commit passes them)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pipeline.cli.app import app
from pipeline.cli.options import OutputFileOpt, OutputFormatOpt
from pipeline.cli.output import write
from pipeline.cli.paths import resolve, workflow_dir
from pipeline.errors import ExitCode, InputError

if TYPE_CHECKING:
    from collections.abc import Callable

    from pipeline.checks.context import CheckContext
    from pipeline.checks.engine import CheckRequest
    from pipeline.checks.registry import Profile
    from pipeline.checks.selection import CheckConfig
    from pipeline.formats.findings import Finding
    from pipeline.formats.kinds import Target
    from pipeline.settings import Limits

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
    output_file: Path | None = None
    fix: bool = False
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    profile: str | None = None
    stdin_filename: str | None = None


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


def _documents(path: Path, flags: CheckFlags) -> list[Path]:
    """The documents a path names: itself; for a design directory, its design.md and its
    design-final.md, whichever exist (one with neither, at phase 0, is said and skipped)."""
    if not path.is_dir() or flags.design_path is not None:
        return [path]
    found = [p for p in (workflow_dir(path) / "design.md", path / "design-final.md") if p.is_file()]
    if not found and (path / "_workflow").is_dir():
        write(f"{path}: no design document yet (nothing to check)", stderr=True)
        return []
    return found or [path]


def check_requests(flags: CheckFlags) -> list[CheckRequest]:
    """One request per design named (``--design-path`` alone is one request)."""
    if flags.paths:
        if flags.design_path is not None and len(flags.paths) > 1:
            raise InputError(
                "--design-path names one design; several paths were given", hint="drop --design-path"
            )
        requests: dict[Path, CheckRequest] = {}  # each design once, however it was named
        for path in _expand(flags.paths):
            for document in _documents(path, flags):
                request = _request_for(document, flags)
                requests.setdefault(request.design_path.absolute(), request)
        if not requests:
            raise InputError(
                "no design document in the directories named (no _workflow/design.md, no design-final.md)",
                hint="run designloop create DIR first, or name the documents to check",
            )
        return list(requests.values())
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


def _stdin_request(flags: CheckFlags) -> CheckRequest:
    """``check -``: the design read from stdin, named by ``--stdin-filename`` (its plan, tracks
    and companion found beside that name, as for a file)."""
    import sys

    from pipeline.checks.engine import CheckRequest

    if sys.stdin is None or sys.stdin.isatty():
        raise InputError(
            "check - reads the design from stdin, and stdin is a terminal (or closed)",
            hint="pipe the design in: designloop check - --stdin-filename docs/x/design.md < file",
        )
    data = sys.stdin.buffer.read()
    if not data:
        raise InputError(
            "check - read nothing from stdin",
            hint="pipe the design in: designloop check - --stdin-filename docs/x/design.md < file",
        )
    name = Path(flags.stdin_filename or "-")
    request = _request_for(name, flags) if flags.stdin_filename else CheckRequest(design_path=name)
    return replace(request, design_bytes=data)


def _requests(flags: CheckFlags) -> list[CheckRequest]:
    if "-" in flags.paths:
        if len(flags.paths) > 1 or flags.fix:
            raise InputError(
                "check - checks stdin alone" + (" and cannot fix it in place" if flags.fix else ""),
                hint="pass - alone (without --fix), or the files by name",
            )
        return [_stdin_request(flags)]
    if flags.stdin_filename is not None:
        raise InputError(
            "--stdin-filename names what check - reads", hint="add - to read the design from stdin"
        )
    return check_requests(flags)


def run_check(flags: CheckFlags) -> int:
    from pipeline.checks.engine import load_context
    from pipeline.checks.selection import load_config
    from pipeline.checks.table import rule_table
    from pipeline.cli.emitters import Report, check_output_file, emit
    from pipeline.formats.findings import has_blocker
    from pipeline.settings import load_limits, repo_root

    output = check_output_file(flags.output_file)
    requests = _requests(flags)
    # The repository that holds what is checked: its settings, and the root every path is shown from.
    root = repo_root(requests[0].design_path.absolute().parent)
    config = load_config(root).with_command_line(flags.select, flags.ignore, flags.profile)
    limits = load_limits(root)
    contexts = [load_context(request, limits) for request in requests]  # all read before any fix
    findings: list[Finding] = []
    files: list[dict[str, object]] = []
    for request, ctx in zip(requests, contexts, strict=True):
        found, checked = _checked(request, ctx, config, flags.fix, limits)
        findings += found
        files += checked
    report = Report(
        command="check",
        findings=findings,
        root=root,
        document={"files": files},
        files=[str(f["path"]) for f in files],
        summary=_summary(findings, files),
        rules=rule_table(),
    )
    if flags.output_format != "json":  # JSON holds it in `files`; every other format says it on stderr
        for entry in files:  # which rules ran on what, said once per file, beside the findings
            write(f"{entry['path']}: profile {entry['profile']} ({entry['why']})", stderr=True)
    emit(report, flags.output_format, output)
    return ExitCode.FINDINGS if has_blocker(findings) else ExitCode.OK


def _checked(
    request: CheckRequest, ctx: CheckContext, config: CheckConfig, fix: bool, limits: Limits
) -> tuple[list[Finding], list[dict[str, object]]]:
    """One design's findings after its profile, the selection and its inline suppressions;
    with ``fix``, the auto-applicable ones applied in place first, then checked again."""
    from pipeline.checks.engine import load_context, run_rules
    from pipeline.checks.selection import profile_of

    doc = ctx.design
    choice = profile_of(request.design_path, doc.lines[0] if doc.lines else None, config.profile)
    kept = _kept(ctx, run_rules(ctx), config, choice.profile)
    if fix and any(f.auto_applicable for f in kept):
        from pipeline.checks.fixes import apply_fixes

        for name, count in apply_fixes([f for f in kept if f.auto_applicable]).items():
            write(f"fixed {count} finding(s) in {name}", stderr=True)
        ctx = load_context(request, limits)
        kept = _kept(ctx, run_rules(ctx), config, choice.profile)
    from pipeline.cli.render import repo_path

    root = config.root or Path.cwd()
    entry: dict[str, object] = {
        "path": repo_path(str(request.design_path), root),
        "profile": choice.profile,
        "why": choice.why,
    }
    return kept, [entry]


def _kept(ctx: CheckContext, found: list[Finding], config: CheckConfig, profile: Profile) -> list[Finding]:
    """The findings of the rules selected for this profile, at this repository's severities,
    less those an inline comment turns off; and a finding for each comment that turned off
    nothing."""
    from pipeline.checks.registry import registry
    from pipeline.checks.suppress import UNUSED, Directive, parse_suppressions, unused
    from pipeline.formats.findings import Finding

    known = registry()
    texts = _texts(ctx)
    suppressions = {
        path: parse_suppressions(path, lines, in_code, known) for path, (lines, in_code) in texts.items()
    }
    kept: list[Finding] = []
    for f in found:
        rule = config.effective(known.get(f.rule))
        path = f.file or str(ctx.design.path)
        if not config.active(rule, path, profile):
            continue
        if path in suppressions and suppressions[path].suppresses(f):
            continue
        kept.append(f.model_copy(update={"severity": rule.severity}) if rule.severity != f.severity else f)
    unused_rule = config.effective(known.get(UNUSED))
    for path, suppression in suppressions.items():
        if not config.active(unused_rule, path, profile):
            continue

        def finding(directive: Directive, path: str = path) -> Finding:
            names = "every rule" if directive.rules is None else ", ".join(sorted(directive.rules))
            return Finding(
                rule=UNUSED,
                severity=unused_rule.severity,
                file=path,
                line=directive.line,
                quote=directive.quote,
                message=f"this designloop-{directive.kind} comment suppresses nothing ({names})",
                suggested_fix="remove the comment",
            )

        kept += unused(suppression, finding)
    return kept


def _texts(ctx: CheckContext) -> dict[str, tuple[list[str], Callable[[int], bool]]]:
    """Each file a check read, with its lines and where its code is: where comments may sit."""
    out: dict[str, tuple[list[str], Callable[[int], bool]]] = {
        str(ctx.design.path): (ctx.design.lines, ctx.design.structure.in_code)
    }
    if ctx.mechanics is not None:
        out[str(ctx.mechanics.path)] = (ctx.mechanics.lines, ctx.mechanics.structure.in_code)
    for plan in ctx.plans:
        out[str(plan.path)] = (plan.structure.lines, plan.structure.in_code)
    return out


def _summary(findings: list[Finding], files: list[dict[str, object]]) -> str:
    from pipeline.cli.emitters import counts

    checked = len(files)
    return f"{counts(findings)} in {checked} design{'s' if checked != 1 else ''}"


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
    output_format: OutputFormatOpt = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="the same as --output-format json (the default)")
    ] = False,
    legacy_format: Annotated[str | None, typer.Option("--format", hidden=True)] = None,
    output_file: OutputFileOpt = None,
    fix: Annotated[
        bool, typer.Option("--fix", help="apply auto-applicable fixes in place, then re-check")
    ] = False,
    select: Annotated[
        list[str] | None,
        typer.Option("--select", metavar="RULE", help="run only these rules (ids, families, prefixes, ALL)"),
    ] = None,
    ignore: Annotated[
        list[str] | None, typer.Option("--ignore", metavar="RULE", help="leave these rules out (repeatable)")
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option(
            "--profile",
            metavar="auto|house|any",
            help="house: designloop's own designs; any: any design document (default: decided per file)",
        ),
    ] = None,
    stdin_filename: Annotated[
        str | None,
        typer.Option("--stdin-filename", metavar="PATH", help="with check -: the name of what stdin holds"),
    ] = None,
) -> None:
    """Run the mechanical checks over every design named: design directories, design documents,
    or globs of either (as pre-commit passes them); - reads one design from stdin.

    designloop's own designs (in a design directory with a research log, or stamped) get the
    house rules; any other Markdown the rules that hold for any design document. Rules are
    selected with [check] in designloop.toml, --select and --ignore, and turned off inline with
    <!-- designloop-disable RULE --> comments (docs/checks.md). Exit 0 no blocker, 1 any
    blocker, 2 could not check.
    """
    from pipeline.cli.options import choice
    from pipeline.cli.options import output_format as output_format_of

    flags = CheckFlags(
        paths=list(paths or ()),
        design_path=design_path,
        design_mechanics_path=design_mechanics_path,
        plan_path=plan_path,
        plan_dir=plan_dir,
        changed_section=changed_section,
        target=choice("--target", target, ("design", "mechanics", "both")),
        scope=choice("--scope", scope, ("bounded", "whole-doc")),
        output_format=output_format_of(
            output_format or legacy_format or ("json" if as_json else None), "json"
        ),
        output_file=output_file,
        fix=fix,
        select=list(select or ()),
        ignore=list(ignore or ()),
        profile=profile,
        stdin_filename=stdin_filename,
    )
    raise typer.Exit(int(run_check(flags)))
