"""designloop drift and designloop claims: the claims ledgers against the code.

``drift DIR|GLOB...`` checks every claim of every ledger in the named design directories
against the code now: exit 0 when each claim of the documents in their stage is current, 1 when
any is stale, 2 on bad input (a directory that is none, a design file without its ledger, a
ledger that does not parse). Once phase 4 ran, a directory's design.md is frozen history: its
claims are shown, never a reason to fail. Sentences that name no code under a heading whose
claims went stale are shown as at risk (never a reason to fail either).

``claims DIR|GLOB...`` writes each design file's ledger afresh from the design and the code,
but never over a ledger with stale claims (that would hide them) unless ``--accept-current``
says the code as it is now is what the design means; then it lists every claim it reset.
Neither needs a model; drift reads only the code files the claims cite.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pipeline.cli.app import app
from pipeline.cli.options import DirsArg, JsonOpt, OutputFileOpt, OutputFormatOpt
from pipeline.cli.output import emit_json, write
from pipeline.errors import DesignloopError, ExitCode, InputError

if TYPE_CHECKING:
    from pipeline.formats.findings import Finding
    from pipeline.grounding.drift import AtRisk, ClaimState, Drift


FROZEN = " (a frozen document: shown only)"


@dataclass(slots=True)
class DriftReport:
    states: list[ClaimState] = field(default_factory=list)
    files: list[dict[str, object]] = field(default_factory=list)
    errors: list[DesignloopError] = field(default_factory=list)
    shown: set[str] = field(default_factory=set)
    """Documents outside their directory's stage (design.md once phase 4 ran): shown only."""
    risks: list[AtRisk] = field(default_factory=list)

    @property
    def stale(self) -> list[ClaimState]:
        return [s for s in self.states if s.stale and s.design not in self.shown]

    @property
    def stale_shown(self) -> list[ClaimState]:
        return [s for s in self.states if s.stale and s.design in self.shown]

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
            "stale_shown_only": [s.to_json() for s in self.stale_shown],
            "at_risk": [r.to_json() for r in self.risks],
            "unchecked": [s.to_json() for s in self.unchecked],
            "files": self.files,
            "errors": [e.to_json() for e in self.errors],
            "exit_code": int(self.exit_code),
        }

    def text(self) -> str:
        out: list[str] = []
        for s in [*self.stale, *self.stale_shown, *self.unchecked]:
            label = "not checked" if not s.stale else "stale" if s.design not in self.shown else "shown only"
            out.append(f"{s.design}:{s.line}: {label} ({s.status}): {s.what}")
            out.append(f'    "{s.entry.quote}"')
        for r in self.risks:
            out.append(
                f"{r.design}:{r.line}: at risk: names no code, under a heading whose claims went stale"
            )
            out.append(f'    "{r.quote}"')
        checked = len(self.files)
        shown = len(self.stale_shown)
        out.append(
            f"{len(self.states)} claims in {checked} design file{'s' if checked != 1 else ''}: "
            f"{len(self.states) - len(self.stale) - shown - len(self.unchecked)} current, "
            f"{len(self.stale)} stale"
            + (f", {shown} stale in frozen documents (shown only)" if shown else "")
            + (f", {len(self.unchecked)} not checked" if self.unchecked else "")
            + (f"; {len(self.risks)} sentences at risk" if self.risks else "")
        )
        return "\n".join(out)

    def findings(self) -> list[Finding]:
        from pipeline.formats.findings import Finding

        stale = self.stale
        fix = (
            "run the directory again (designloop final DIR, or designloop batch final --stale-only) "
            "or correct the sentence; either writes the ledger afresh"
        )
        out = [
            Finding(
                severity="should-fix" if s in stale else "suggestion",
                rule=f"drift-{s.status}",
                file=s.design,
                line=s.line,
                quote=s.entry.quote,
                message=f"{s.entry.mention}: {s.what}"
                + ("" if s in stale else " (a frozen document: shown only)"),
                suggested_fix=fix,
            )
            for s in [*stale, *self.stale_shown, *self.unchecked]
        ]
        out += [
            Finding(
                severity="suggestion",
                rule="drift-at-risk",
                file=r.design,
                line=r.line,
                quote=r.quote,
                message="names no code, under a heading whose claims went stale (lines "
                + ", ".join(str(n) for n in r.stale)
                + "): read it again",
                suggested_fix="correct the sentence if the change made it untrue",
            )
            for r in self.risks
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
    from pipeline.formats.design_dir import DesignDir
    from pipeline.grounding.drift import Drift, at_risk
    from pipeline.grounding.index_store import store_for
    from pipeline.grounding.ledger import FINAL_FILES, design_files, ledger_path, load_ledger
    from pipeline.runs.lifecycle_read import stage
    from pipeline.settings import default_runs_dir, repo_root

    report = DriftReport()
    drifts: dict[Path, Drift] = {}
    for directory in directories:
        root = repo_root(directory)
        drift = drifts.setdefault(root, Drift(root, store_for(default_runs_dir(root))))
        final = stage(DesignDir(directory, root, root)) == "final"
        for design in design_files(directory):
            ledger_file = ledger_path(design)
            rel = design.relative_to(root).as_posix()
            in_stage = not final or design.name in FINAL_FILES
            try:
                if not ledger_file.is_file():
                    if not in_stage:
                        continue  # frozen history without a ledger: nothing to show
                    raise InputError(
                        f"{design.name} has no claims ledger ({ledger_file.name})",
                        file=ledger_file.relative_to(root).as_posix(),
                        hint="write it: designloop claims DIR (a create, final or edit run writes it too)",
                    )
                states = drift.check(design, load_ledger(ledger_file))
            except InputError as exc:
                if in_stage:
                    report.errors.append(exc)
                continue
            if not in_stage:
                report.shown.add(rel)
            report.states += states
            report.risks += at_risk(design, states)
            stale = sum(s.stale for s in states)
            report.files.append({"design": rel, "claims": len(states), "stale": stale, "in_stage": in_stage})
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
    output_format: OutputFormatOpt = None,
    output_file: OutputFileOpt = None,
) -> None:
    """Check every claim of the design directories' claims ledgers against the code now.

    Exit 0 every claim current, 1 any stale, 2 bad input. --output-format gives the stale
    claims as text, json, sarif, github, rdjson or junit.
    """
    from pipeline.cli.emitters import Report, check_output_file, emit
    from pipeline.cli.options import output_format as output_format_of
    from pipeline.grounding.ledger import claim_directories
    from pipeline.settings import repo_root

    chosen = output_format_of(output_format, "json") if output_format or as_json else None
    target = _check_sarif(sarif)
    output = check_output_file(output_file)
    report = drift_report(claim_directories(directories, Path.cwd()))
    if target is not None:
        _write_sarif(target, report)
    if chosen is not None:
        files = [str(f["design"]) for f in report.files]
        emitted = Report("drift", report.findings(), repo_root(), document=report.to_json(), files=files)
        emit(emitted, chosen, output)
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
def claims(
    directories: DirsArg,
    as_json: JsonOpt = False,
    accept_current: Annotated[
        bool,
        typer.Option(
            "--accept-current",
            help="write ledgers with stale claims too: the code as it is now is what the design means "
            "(every claim reset is listed)",
        ),
    ] = False,
) -> None:
    """Write each design file's claims ledger afresh from the design and the code now (no model).

    A ledger with stale claims is left alone (writing it would hide them) unless --accept-current.
    Exit 0, 1 when a ledger with stale claims was left alone, 2 on bad input.
    """
    from pipeline.grounding.drift import Drift
    from pipeline.grounding.index_store import store_for
    from pipeline.grounding.ledger import claim_directories
    from pipeline.settings import default_runs_dir, make_runs_dir, repo_root

    found = claim_directories(directories, Path.cwd())
    planned = []
    for d in found:  # every directory checked before anything is written
        root = repo_root(d)
        planned.append((d, root, _code_root(d, root)))
    drifts: dict[Path, Drift] = {}  # one per repository: one index per code root, kept in runs/
    for _, root, _ in planned:
        if root not in drifts:
            drifts[root] = Drift(root, store_for(make_runs_dir(default_runs_dir(root))))
    rows: list[dict[str, object]] = []
    for directory, root, code in planned:
        rows += _claims_rows(directory, root, drifts[root], code, accept_current, as_json)
    refused = any(r["refused"] for r in rows)
    bad = any(r["error"] for r in rows)
    code_out = ExitCode.BAD_INPUT if bad else ExitCode.FINDINGS if refused else ExitCode.OK
    if as_json:
        emit_json({"files": rows, "exit_code": int(code_out)})
    raise typer.Exit(int(code_out))


def _claims_rows(
    directory: Path, root: Path, drift: Drift, code: Path, accept: bool, as_json: bool
) -> list[dict[str, object]]:
    """Each design file of ``directory``: its ledger written afresh, or left alone (it does not
    parse, or it has stale claims and ``accept`` is not given)."""
    from pipeline.grounding.ledger import design_files, ledger_path, load_ledger

    grounding = drift.grounding(code)
    rows: list[dict[str, object]] = []
    for design in design_files(directory):
        ledger = ledger_path(design)
        row: dict[str, object] = {
            "design": design.relative_to(root).as_posix(),
            "ledger": ledger.relative_to(root).as_posix(),
            "refused": False,
            "error": None,
            "reset": [],
        }
        rows.append(row)
        stale: list[ClaimState] = []
        if ledger.is_file():
            try:
                states = drift.check(design, load_ledger(ledger))
                # a claim whose sentence was rewritten or removed hides nothing
                stale = [s for s in states if s.stale and s.status != "quote" and s.present]
            except InputError as exc:
                if not accept:
                    row["error"] = exc.to_json()
                    write(f"designloop: {exc.render()}", stderr=True)
                    continue
        if stale and not accept:
            row["refused"], row["stale"] = True, [s.to_json() for s in stale]
            if not as_json:
                write(f"{row['ledger']}: left alone: {len(stale)} stale claim(s) would be hidden")
                for s in stale:
                    write(f"    {s.design}:{s.line}: {s.entry.mention}: {s.what}")
                write("    correct the sentences (designloop drift shows them), or pass --accept-current")
            continue
        resolution, written = grounding.refresh(design)
        row.update(
            claims=len(resolution.ledger.claims),
            written=written,
            reset=[s.to_json() for s in stale],
            findings=[f.to_json() for f in resolution.findings],
            notes=list(resolution.notes),
        )
        if not as_json:
            state = "written" if written else "unchanged"
            write(f"{row['ledger']}: {len(resolution.ledger.claims)} claims ({state})")
            for s in stale:
                write(f"    reset: {s.design}:{s.line}: {s.entry.mention}: {s.what}")
            for f in resolution.findings:
                write(f"    {row['design']}:{f.line}: {f.rule}: {f.message}")
            for note in resolution.notes:
                write(f"    note: {note}")
    return rows
