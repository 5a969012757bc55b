"""The report and estimate commands."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pipeline.cli.app import app
from pipeline.cli.options import JsonOpt, ModelOpt, RoleModelOpt, RunsOpt, StoreOpt, open_store
from pipeline.cli.output import cost_text, emit_json, table

if TYPE_CHECKING:
    from pipeline.runs.store import RunStore


@app.command()
def report(
    run_id: Annotated[
        str | None,
        typer.Argument(help="the run to report on (with --batch: a batch id, the latest by default)"),
    ] = None,
    batch: Annotated[bool, typer.Option("--batch", help="report on a batch: one row per directory")] = False,
    out: Annotated[
        Path | None, typer.Option("--out", help="where to write report.html and report.md (default: the run)")
    ] = None,
    runs_dir: RunsOpt = None,
    store: StoreOpt = None,
) -> None:
    """Write a self-contained HTML report of a run (and Markdown beside it) from its records;
    with --batch, a page with one row per design directory of a batch, linking each run's report."""
    from pipeline.agents.readable import record_byproducts
    from pipeline.errors import InputError
    from pipeline.formats.textio import check_write_target
    from pipeline.runs.preflight import writable_dir
    from pipeline.settings import repo_root

    if out is not None:
        given = out if out.is_absolute() else Path.cwd() / out
        for name in ("report.html", "report.md"):  # never through a link, nor a linked directory leading out
            check_write_target(given / name)
        writable_dir(out.resolve(), "--out", "name a directory to write report.html and report.md into")
    opened = open_store(store, runs_dir)
    try:
        if batch:
            paths = _batch_report(opened, run_id, out)
        elif run_id is None:
            raise InputError(
                "name the run to report on, or pass --batch", hint="designloop runs lists the runs"
            )
        else:
            paths = _run_report(opened.run_dir(run_id), out, opened)
        if out is not None:  # designloop's own files: no role reads them, no batch counts them
            # Relative to the repository the commands run in (that of the default runs
            # directory, as for a batch's --sarif), never to a checkout nested in it.
            record_byproducts(opened.runs_dir, repo_root(), paths)
    finally:
        opened.close()
    for path in paths:
        typer.echo(str(path))


def _run_report(run_dir: Path, out: Path | None, store: RunStore) -> list[Path]:
    from pipeline.formats.textio import atomic_write
    from pipeline.runs.lifecycle_read import revision_states
    from pipeline.runs.report import load_report, render_html, render_markdown

    data = load_report(run_dir)
    if data.revisions:  # each revision's state, as this checkout's approvals file tells it
        states = revision_states(store, run_dir.name)
        revisions = data.revisions.items()
        data.states = {
            file: states[file, rev.number] for file, rev in revisions if (file, rev.number) in states
        }
    target = (out or run_dir).resolve()
    target.mkdir(parents=True, exist_ok=True)
    atomic_write(target / "report.html", render_html(data))
    atomic_write(target / "report.md", render_markdown(data))
    return [target / "report.html", target / "report.md"]


def _batch_report(store: RunStore, batch_id: str | None, out: Path | None) -> list[Path]:
    from pipeline.errors import InputError
    from pipeline.formats.textio import atomic_write
    from pipeline.runs.batch_report import line_for, render_batch_html, render_batch_markdown
    from pipeline.runs.store import BATCHES
    from pipeline.settings import repo_root

    data = store.load_batch(batch_id)
    name = data.batch_id
    target = (out or store.runs_dir / BATCHES / name).resolve()
    lines = []
    for row in data.directories:
        view, link = None, None
        if row.run_id:
            try:
                run_dir = store.run_dir(row.run_id)
                view = store.view(row.run_id)
                # Each run's report beside the batch's, linked relatively: the links work
                # wherever the directory goes (an uploaded artifact, another machine).
                _run_report(run_dir, target / "runs" / row.run_id, store)
                link = f"runs/{row.run_id}/report.html"
            except InputError:
                view = None  # a run whose records are gone keeps the batch record's figures
        lines.append(line_for(row, view, link, str(repo_root())))
    atomic_write(target / "report.html", render_batch_html(name, data.kind, lines))
    atomic_write(target / "report.md", render_batch_markdown(name, data.kind, lines))
    return [target / "report.html", target / "report.md"]


@app.command()
def estimate(
    directories: Annotated[list[str], typer.Argument(help="design directories or globs, e.g. 'docs/adr/*'")],
    kind: Annotated[str, typer.Option("--kind", help="create or final")] = "create",
    model: ModelOpt = None,
    role_model: RoleModelOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Print the spawns, tokens and cost range a run would take, before running it."""
    from pipeline.agents.estimate import estimate as estimate_dir
    from pipeline.agents.session import SessionOptions, open_session
    from pipeline.errors import InputError
    from pipeline.formats.design_dir import expand_directories, open_design_dir
    from pipeline.formats.kinds import PHASE1, PHASE4
    from pipeline.runs.preflight import check_inputs, check_links
    from pipeline.settings import repo_root

    kinds = {"create": PHASE1, "final": PHASE4}
    if kind not in kinds:
        raise InputError(f"--kind {kind!r} is not create or final", hint="e.g. --kind final")
    root = repo_root()
    session = open_session(root, SessionOptions(model, tuple(role_model or ()), no_cache=True))
    rows = []
    for path in expand_directories(directories, root):
        design = open_design_dir(path)
        # What create/final refuse, estimate refuses: the same checks of every input (it writes
        # nothing and sends nothing, so it needs neither write access nor a provider's key).
        check_links(design, kinds[kind])
        check_inputs(design, kinds[kind])
        rows.append(estimate_dir(design, kinds[kind], session))
    if as_json:
        emit_json({"estimates": [r.to_json() for r in rows]})
        return
    cells = []
    for r in rows:
        low, high = (
            cost_text(r.low.cost, sorted(r.low.unpriced)),
            cost_text(r.high.cost, sorted(r.high.unpriced)),
        )
        cells.append(
            [
                r.directory,
                r.kind,
                r.slices,
                f"{r.low.spawns}–{r.high.spawns}",
                f"{r.low.tokens}–{r.high.tokens}",
                f"{low} – {high}",
            ]
        )
    table(("directory", "kind", "slices", "spawns", "tokens", "cost (USD)"), cells)
