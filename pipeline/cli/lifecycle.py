"""The lifecycle commands (docs/lifecycle.md): approve, reject, ready, show, and ``status DIR``.

A refused transition exits 6 with its name in the message (and, with --json, the error object
on stdout); bad input (a directory that is not a design directory, a damaged file) exits 2.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pipeline.cli.app import app
from pipeline.cli.options import (
    DirArg,
    DirsArg,
    DocFileOpt,
    JsonOpt,
    OutputFileOpt,
    OutputFormatOpt,
    RunsOpt,
    StoreFlags,
    StoreOpt,
)
from pipeline.cli.output import emit_json
from pipeline.errors import ExitCode, InputError, TransitionRefused

if TYPE_CHECKING:
    from pipeline.formats.design_dir import DesignDir
    from pipeline.formats.findings import Finding
    from pipeline.runs.lifecycle import Done
    from pipeline.runs.readiness import Context, DirStatus
    from pipeline.runs.store import RunStore


def _design(directory: Path) -> DesignDir:
    from pipeline.cli.paths import resolve
    from pipeline.formats.design_dir import open_design_dir

    return open_design_dir(resolve(directory) or directory)


def _refused(exc: TransitionRefused, as_json: bool) -> TransitionRefused:
    if as_json:
        emit_json({"error": exc.to_json()})
    return exc


def _transition(action: str, directory: Path, file: str | None, why: str | None, flags: StoreFlags) -> None:
    from pipeline.runs.lifecycle import request, transition
    from pipeline.runs.lifecycle_read import revision_stores
    from pipeline.runs.records import portable

    try:
        req = request(action, file, why)
        design = _design(directory)
        store = flags.open()
        try:
            lock = store.lock(design.root, portable(design.root, design.repo_root))
            done = transition(design, revision_stores(store), req, lock)
        finally:
            store.close()
    except TransitionRefused as exc:
        raise _refused(exc, flags.as_json) from None
    if flags.as_json:
        emit_json(done.to_json())
        return
    _say_done(done)


def _say_done(done: Done) -> None:
    from pipeline.formats.revisions import basename

    for record in done.records:
        line = f"{done.directory}: {basename(record.file)} r{record.number} {record.action} by {record.actor}"
        if record.file in done.superseded:
            line += f" (r{done.superseded[record.file]} is superseded)"
        typer.echo(line)
    if done.records:
        typer.echo(f"recorded in {done.directory}/design-approvals.md: commit it with the design")
        accepted = [r for r in done.records if r.action == "accepted"]
        if accepted:
            from pipeline.cli.next_step import after_approval
            from pipeline.cli.output import pasteable
            from pipeline.formats.kinds import PHASE1, PHASE4

            final = any(r.file.startswith("final") for r in accepted)
            typer.echo(pasteable(after_approval(PHASE4 if final else PHASE1, Path(done.directory))))


@app.command()
def approve(
    directory: DirArg,
    file: DocFileOpt = None,
    why: Annotated[
        str | None, typer.Option("--why", help="(reject's option: refused here)", hidden=True)
    ] = None,
    runs_dir: RunsOpt = None,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Accept the current revision of the design's documents (recorded in design-approvals.md).

    Only when: a revision exists, the file on disk is it, its run ended PASS, the research log's
    gate is resolved, and no run holds the directory. Exit 0 accepted, 6 refused (named), 2 bad input.
    """
    _transition("approve", directory, file, why, StoreFlags(runs_dir=runs_dir, store=store, as_json=as_json))


@app.command()
def reject(
    directory: DirArg,
    why: Annotated[
        str | None, typer.Option("--why", help="why the candidate is turned down (required)")
    ] = None,
    file: DocFileOpt = None,
    runs_dir: RunsOpt = None,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Reject the current candidate revision; the accepted revision stays accepted.

    Exit 0 rejected, 6 refused (named), 2 bad input.
    """
    _transition("reject", directory, file, why, StoreFlags(runs_dir=runs_dir, store=store, as_json=as_json))


def directory_status(design: DesignDir, store: RunStore, ctx: Context) -> DirStatus:
    from pipeline.runs.lifecycle_read import revision_stores
    from pipeline.runs.readiness import directory_status as status_of
    from pipeline.runs.records import portable

    holder = store.lock(design.root, portable(design.root, design.repo_root)).holder()
    return status_of(design, revision_stores(store), holder, ctx)


def show_status(design: DesignDir, store: RunStore, as_json: bool) -> None:
    """``designloop status DIR``: the accepted and current revisions, and every gap."""
    from pipeline.runs.readiness import Context

    status = directory_status(design, store, Context(store.runs_dir))
    if as_json:
        emit_json(status.to_json())
        return
    for line in status_lines(status):
        typer.echo(line)


def status_lines(status: DirStatus) -> list[str]:
    from pipeline.formats.revisions import basename

    out = [f"{status.directory} (stage: {status.stage}): {'ready' if status.ready else 'not ready'}"]
    out += [f"  {g.name}: {g.message}" for g in status.gaps]
    out += [f"    {d}" for g in status.gaps for d in g.details]
    for doc in status.docs:
        where = "" if doc.in_stage else " (not in the stage: frozen history)"
        out.append(f"  {basename(doc.file)}{where}")
        acc = doc.accepted
        if acc is not None:
            out.append(
                f"    accepted: r{acc.number} (sha256 {acc.sha256[:12]}…) by {acc.actor} "
                f"({acc.requested_by}) on {acc.time}; evidence: {acc.evidence}"
            )
        else:
            out.append("    accepted: none")
        cur = doc.current
        if cur is not None:
            run = f"run {cur.run_id} ({cur.kind}, {cur.outcome_words()})"
            out.append(
                f"    current:  r{cur.number} (sha256 {cur.sha256[:12]}…) {doc.state_of(cur)}; "
                f"{run} by {cur.actor or '?'} ({cur.requested_by})"
            )
        else:
            out.append("    current:  none")
        for gap in doc.gaps:
            out.append(f"    - {gap.name}: {gap.message}")
            out += [f"        {d}" for d in gap.details]
    return out


def _sarif(statuses: list[DirStatus]) -> str:
    from pipeline.cli.emitters import Report, emit_sarif
    from pipeline.settings import repo_root

    return emit_sarif(Report("ready", gap_findings(statuses), repo_root()))


def gap_findings(statuses: list[DirStatus]) -> list[Finding]:
    """Each directory's gaps as findings (a stale claim at the design line that makes it)."""
    from pipeline.formats.findings import Finding
    from pipeline.formats.revisions import FILES

    findings = []
    for status in statuses:
        for file, gap in status.all_gaps():
            path = f"{status.directory}/{FILES[file or status.stage]}"
            if gap.name == "stale-claims":  # one result per stale claim, at its design line
                findings += _stale_claims(status, file)
                continue
            findings.append(
                Finding(
                    severity="blocker",
                    rule=f"designloop-{gap.name}",
                    message=f"{status.directory}: {gap.message}",
                    suggested_fix="see designloop status DIR and docs/lifecycle.md",
                    file=path,
                )
            )
    return findings


def _stale_claims(status: DirStatus, file: str | None) -> list[Finding]:
    from pipeline.formats.findings import Finding

    doc = next(d for d in status.docs if d.file == file)
    fix = "correct the sentence, or run the directory again; see designloop drift DIR (docs/formats.md §11)"
    return [
        Finding(
            severity="blocker",
            rule="designloop-stale-claims",
            message=f"{status.directory}: stale claim: {s.entry.mention}: {s.what}",
            suggested_fix=fix,
            file=s.design,
            line=s.line,
            quote=s.entry.quote,
        )
        for s in (doc.claims.stale if doc.claims is not None else [])
    ]


@app.command()
def ready(
    directories: DirsArg,
    sarif: Annotated[Path | None, typer.Option("--sarif", help="also write the gaps as SARIF 2.1.0")] = None,
    runs_dir: RunsOpt = None,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
    output_format: OutputFormatOpt = None,
    output_file: OutputFileOpt = None,
) -> None:
    """The CI gate: exit 0 when every matched directory's documents are accepted and current, 1
    listing each directory's gaps, 2 bad input. --output-format gives the gaps as text, json,
    sarif, github, rdjson or junit."""
    from pipeline.cli.options import output_format as output_format_of

    chosen = output_format_of(output_format, "json") if output_format or as_json else None
    check_ready(
        directories,
        sarif,
        StoreFlags(runs_dir=runs_dir, store=store, as_json=as_json),
        chosen,
        output_file,
    )


def check_ready(
    directories: list[str],
    sarif: Path | None,
    flags: StoreFlags,
    output_format: str | None = None,
    output_file: Path | None = None,
) -> None:
    """Every matched directory's status, its gaps printed (and written as SARIF); exits 0 or 1."""
    from pipeline.cli.batch import _check_sarif
    from pipeline.cli.emitters import Report, check_output_file, emit
    from pipeline.formats.design_dir import expand_directories, open_design_dir
    from pipeline.formats.textio import atomic_write
    from pipeline.runs.readiness import Context
    from pipeline.settings import repo_root

    target = _check_sarif(sarif)
    output = check_output_file(output_file)
    dirs = [open_design_dir(p) for p in expand_directories(directories, Path.cwd())]
    opened = flags.open()
    try:
        ctx = Context(opened.runs_dir)
        statuses = [directory_status(d, opened, ctx) for d in dirs]
    finally:
        opened.close()
    if target is not None:
        atomic_write(target, _sarif(statuses))
    everything = all(s.ready for s in statuses)
    if output_format is not None:
        document = {"ready": everything, "directories": [s.to_json() for s in statuses]}
        report = Report("ready", gap_findings(statuses), repo_root(), document=document)
        report.files = [f"{s.directory}" for s in statuses]
        emit(report, output_format, output)
    else:
        for status in statuses:
            for line in status_lines(status) if not status.ready else _ready_line(status):
                typer.echo(line)
    raise typer.Exit(int(ExitCode.OK if everything else ExitCode.FINDINGS))


def _ready_line(status: DirStatus) -> list[str]:
    from pipeline.formats.revisions import basename

    accepted = [
        f"{basename(d.file)} r{d.accepted.number} accepted by {d.accepted.actor} on {d.accepted.time}"
        for d in status.docs
        if d.in_stage and d.accepted is not None
    ]
    return [f"{status.directory}: ready ({'; '.join(accepted)})"]


@app.command()
def show(
    directory: DirArg,
    revision: Annotated[
        str, typer.Option("--revision", help="a revision number, accepted or current")
    ] = "accepted",
    file: DocFileOpt = None,
    runs_dir: RunsOpt = None,
    store: StoreOpt = None,
) -> None:
    """Print the bytes of one revision of a document (kept in the run store), even after the
    file has moved on."""
    from pipeline.runs.lifecycle_read import find_bytes, revision_stores, stage

    check_file(file)
    design = _design(directory)
    name = file or stage(design)
    opened = StoreFlags(runs_dir=runs_dir, store=store).open()
    try:
        data = find_bytes(design, revision_stores(opened), name, revision)
    finally:
        opened.close()
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a text-only stream (captured output): the document is UTF-8 text
        sys.stdout.write(data.decode("utf-8", "replace"))
        return
    buffer.write(data)
    buffer.flush()


def check_file(file: str | None) -> None:
    from pipeline.formats.revisions import FILES

    if file is not None and file not in FILES:
        raise InputError(f"--file {file!r} is not a document", hint=f"one of {', '.join(FILES)}")
