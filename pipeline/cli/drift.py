"""designloop drift and designloop claims: the claims ledgers against the code.

``drift DIR|GLOB...`` checks every claim of every ledger in the named design directories
against the code now: exit 0 when each is current, 1 when any is stale, 2 on bad input (a
directory that is none, a design file without its ledger, a ledger that does not parse).
``claims DIR|GLOB...`` writes each design file's ledger afresh from the design and the code.
Neither needs a model; drift reads only the code files the claims cite.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pipeline.cli.app import app
from pipeline.cli.options import DirsArg, JsonOpt
from pipeline.cli.output import emit_json, write
from pipeline.errors import DesignloopError, ExitCode, InputError

if TYPE_CHECKING:
    from pipeline.formats.findings import Finding
    from pipeline.grounding.drift import ClaimState


@dataclass(slots=True)
class DriftReport:
    states: list[ClaimState] = field(default_factory=list)
    files: list[dict[str, object]] = field(default_factory=list)
    errors: list[DesignloopError] = field(default_factory=list)

    @property
    def stale(self) -> list[ClaimState]:
        return [s for s in self.states if s.stale]

    @property
    def unchecked(self) -> list[ClaimState]:
        return [s for s in self.states if s.status == "unchecked"]

    @property
    def exit_code(self) -> ExitCode:
        if self.errors:
            return ExitCode.BAD_INPUT
        return ExitCode.FINDINGS if self.stale else ExitCode.OK

    def to_json(self) -> dict[str, object]:
        return {
            "claims": len(self.states),
            "current": sum(s.status == "current" for s in self.states),
            "stale": [s.to_json() for s in self.stale],
            "unchecked": [s.to_json() for s in self.unchecked],
            "files": self.files,
            "errors": [e.to_json() for e in self.errors],
            "exit_code": int(self.exit_code),
        }

    def text(self) -> str:
        out: list[str] = []
        for s in [*self.stale, *self.unchecked]:
            label = "stale" if s.stale else "not checked"
            out.append(f"{s.design}:{s.line}: {label} ({s.status}): {s.what}")
            out.append(f'    "{s.entry.quote}"')
        checked = len(self.files)
        out.append(
            f"{len(self.states)} claims in {checked} design file{'s' if checked != 1 else ''}: "
            f"{len(self.states) - len(self.stale) - len(self.unchecked)} current, {len(self.stale)} stale"
            + (f", {len(self.unchecked)} not checked" if self.unchecked else "")
        )
        return "\n".join(out)

    def findings(self) -> list[Finding]:
        from pipeline.formats.findings import Finding

        fix = (
            "run the directory again (designloop final DIR, or designloop batch final --stale-only) "
            "or correct the sentence; either writes the ledger afresh"
        )
        out = [
            Finding(
                severity="should-fix" if s.stale else "suggestion",
                rule=f"drift-{s.status}",
                file=s.design,
                line=s.line,
                quote=s.entry.quote,
                message=f"{s.entry.mention}: {s.what}",
                suggested_fix=fix,
            )
            for s in [*self.stale, *self.unchecked]
        ]
        out += [
            Finding(
                severity="blocker",
                rule="designloop-bad-input",
                file=e.file,
                line=e.line,
                message=e.message,
                suggested_fix=e.hint or "fix the input",
            )
            for e in self.errors
        ]
        return out


def _check_sarif(sarif: Path | None) -> Path | None:
    if sarif is None:
        return None
    from pipeline.formats.textio import check_write_target
    from pipeline.runs.preflight import writable_file

    given = Path.cwd() / sarif if not sarif.is_absolute() else sarif
    check_write_target(given)
    target = given.resolve()
    writable_file(target, "--sarif", "name a file in an existing, writable directory")
    return target


def drift_report(directories: list[Path]) -> DriftReport:
    from pipeline.grounding.drift import Drift
    from pipeline.grounding.ledger import design_files, ledger_path, load_ledger
    from pipeline.settings import repo_root

    report = DriftReport()
    drifts: dict[Path, Drift] = {}
    for directory in directories:
        root = repo_root(directory)
        drift = drifts.setdefault(root, Drift(root))
        for design in design_files(directory):
            ledger_file = ledger_path(design)
            rel = design.relative_to(root).as_posix()
            try:
                if not ledger_file.is_file():
                    raise InputError(
                        f"{design.name} has no claims ledger ({ledger_file.name})",
                        file=ledger_file.relative_to(root).as_posix(),
                        hint="write it: designloop claims DIR (a create, final or edit run writes it too)",
                    )
                states = drift.check(design, load_ledger(ledger_file))
            except InputError as exc:
                report.errors.append(exc)
                continue
            report.states += states
            stale = sum(s.stale for s in states)
            report.files.append({"design": rel, "claims": len(states), "stale": stale})
    return report


@app.command(no_args_is_help=True)
def drift(
    directories: DirsArg,
    as_json: JsonOpt = False,
    sarif: Annotated[
        Path | None,
        typer.Option(
            "--sarif", metavar="FILE", help="also write the stale claims as SARIF 2.1.0 to this file"
        ),
    ] = None,
) -> None:
    """Check every claim of the design directories' claims ledgers against the code now.

    Exit 0 every claim current, 1 any stale, 2 bad input.
    """
    from pipeline.grounding.ledger import claim_directories

    target = _check_sarif(sarif)
    report = drift_report(claim_directories(directories, Path.cwd()))
    if target is not None:
        _write_sarif(target, report)
    if as_json:
        emit_json(report.to_json())
    else:
        for error in report.errors:
            write(f"designloop: {error.render()}", stderr=True)
        write(report.text())
    raise typer.Exit(int(report.exit_code))


def _write_sarif(target: Path, report: DriftReport) -> None:
    from pipeline.checks.registry import registry
    from pipeline.cli.render import to_sarif
    from pipeline.formats.textio import atomic_write

    rules = registry().of_family("drift")
    atomic_write(target, to_sarif(report.findings(), rules))
    from pipeline.agents.readable import record_byproducts
    from pipeline.settings import default_runs_dir, repo_root

    root = repo_root(target.parent)
    runs = default_runs_dir(root)
    if runs.is_dir():  # designloop's own output: never an input of a batch (docs/ci.md)
        record_byproducts(runs, root, [target])


def _code_root(directory: Path, root: Path) -> Path:
    from pipeline.formats.design_dir import configured_code_root

    code = (configured_code_root(directory) or root).resolve()
    if not code.is_dir() or not code.is_relative_to(root.resolve()):
        raise InputError(
            "the code root is not a directory inside the repository",
            file=directory / "designloop.toml",
            hint="fix code_root in the design directory's designloop.toml",
        )
    return code


@app.command(no_args_is_help=True)
def claims(directories: DirsArg, as_json: JsonOpt = False) -> None:
    """Write each design file's claims ledger afresh from the design and the code now (no model).

    Exit 0, or 2 on bad input.
    """
    from pipeline.grounding.claims import Grounding
    from pipeline.grounding.ledger import claim_directories, design_files, ledger_path
    from pipeline.settings import repo_root

    found = claim_directories(directories, Path.cwd())
    shared: dict[tuple[Path, Path], Grounding] = {}  # one index per code root
    groundings = []
    for d in found:  # every directory checked before any ledger is written
        root = repo_root(d)
        code = _code_root(d, root)
        groundings.append((d, root, shared.setdefault((root, code), Grounding(root, code))))
    rows: list[dict[str, object]] = []
    for directory, root, grounding in groundings:
        for design in design_files(directory):
            resolution, written = grounding.refresh(design)
            rows.append(
                {
                    "design": design.relative_to(root).as_posix(),
                    "ledger": ledger_path(design).relative_to(root).as_posix(),
                    "claims": len(resolution.ledger.claims),
                    "written": written,
                    "findings": [f.to_json() for f in resolution.findings],
                    "notes": list(resolution.notes),
                }
            )
            if not as_json:
                state = "written" if written else "unchanged"
                write(f"{rows[-1]['ledger']}: {len(resolution.ledger.claims)} claims ({state})")
                for f in resolution.findings:
                    write(f"    {rows[-1]['design']}:{f.line}: {f.rule}: {f.message}")
                for note in resolution.notes:
                    write(f"    note: {note}")
    if as_json:
        emit_json({"files": rows})
