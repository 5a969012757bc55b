"""A batch's report: one row per design directory (what was done, how its run ended, what it
spent) with a link to that run's own report, as a self-contained HTML page and Markdown.

The rows come from the batch's record (runs/batches/<batch-id>.json, or the store's
``batches`` table); each run's outcome is read afresh from the store, so the report of an
enqueued batch shows how its runs ended on the workers.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from decimal import Decimal

from pipeline.runs.batch_record import RowRecord
from pipeline.runs.report import STYLE, md_table
from pipeline.runs.run_view import RunView

HEAD = ["directory", "action", "outcome", "why", "rounds", "spawns", "tokens", "cost (USD)", "report"]


@dataclass(slots=True)
class BatchLine:
    directory: str
    action: str
    run_id: str | None
    outcome: str
    rounds: int
    spawns: int
    tokens: int
    cost: Decimal
    link: str | None
    """The run's report, relative to the batch's report."""
    why: str = "-"
    """Why the directory did not simply pass (a pause, a stop, bad input, an edit): the first
    line of its message."""

    def cells(self) -> list[str]:
        return [
            self.directory,
            self.action,
            self.outcome,
            self.why,
            str(self.rounds),
            str(self.spawns),
            str(self.tokens),
            f"{self.cost:.4f}",
        ]


def line_for(row: RowRecord, view: RunView | None, link: str | None, root: str | None = None) -> BatchLine:
    """A directory's row: the record's figures, the outcome as the run's events now tell it;
    paths under ``root`` (the repository) shown relative to it."""
    message = (view.message if view is not None and view.message else None) or row.message
    if message and root:
        message = message.replace(root.rstrip("/") + "/", "")
    passed = (view.outcome if view is not None else row.outcome) in ("PASS", None) and row.action not in (
        "bad",
        "busy",
        "edited",
    )
    why = message.splitlines()[0] if message and not passed else "-"
    if view is None:
        outcome = row.outcome or row.action or "-"
        return BatchLine(
            row.directory,
            row.action,
            row.run_id,
            outcome,
            row.rounds,
            row.spawns,
            row.tokens,
            row.cost_usd,
            link,
            why,
        )
    return BatchLine(
        row.directory,
        row.action,
        row.run_id,
        view.outcome or view.state,
        view.round,
        len(view.spawns),
        view.tokens,
        view.cost,
        link,
        why,
    )


def render_batch_markdown(batch_id: str, kind: str, lines: list[BatchLine]) -> str:
    rows = [[*line.cells(), f"[{line.run_id}]({line.link})" if line.link else "-"] for line in lines]
    return f"# Batch {batch_id}\n\n{kind}, {len(lines)} directories.\n\n" + md_table(HEAD, rows)


def render_batch_html(batch_id: str, kind: str, lines: list[BatchLine]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in HEAD)
    body = ""
    for line in lines:
        cells = "".join(f"<td>{html.escape(c)}</td>" for c in line.cells())
        link = (
            f'<a href="{html.escape(line.link)}">{html.escape(line.run_id or "")}</a>' if line.link else "-"
        )
        body += f"<tr>{cells}<td>{link}</td></tr>"
    return (
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>Batch {html.escape(batch_id)}</title>"
        f"<style>{STYLE}</style></head><body><h1>Batch {html.escape(batch_id)}</h1>"
        f"<p>{html.escape(kind)}, {len(lines)} directories.</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></body></html>\n"
    )
