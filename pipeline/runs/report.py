"""A run's report, from its records alone: a self-contained HTML page and Markdown beside it.

Everything comes from runs/<run-id>/: run.json, events.jsonl (spawns, checks with their
findings, settled sections, the outcome) and summary.md (the diff and the review-log entry).
The chart is inline SVG, so the page opens anywhere without a network.
"""

from __future__ import annotations

import html
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from pipeline.bounded import load_json
from pipeline.errors import InputError
from pipeline.formats.findings import Finding
from pipeline.runs.check_events import ComprehensionCheck, DualCleanCheck, MechanicalCheck
from pipeline.runs.event_fields import RevisionRef
from pipeline.runs.event_log import read_events
from pipeline.runs.events import (
    Finished,
    RevisionRecorded,
    RoundStarted,
    RunStarted,
    Settled,
    Spawned,
)

SEVERITIES = ("blocker", "should-fix", "suggestion")
COLOURS = {"blocker": "#c0392b", "should-fix": "#e67e22", "suggestion": "#95a5a6"}


class RecordHead(BaseModel):
    """What a report needs of run.json (of any format: a report reads old runs too)."""

    model_config = ConfigDict(extra="ignore")

    kind: str = "?"
    directory: str = "?"


@dataclass(slots=True)
class RoleCost:
    spawns: int = 0
    tokens: int = 0
    cost: Decimal = Decimal(0)
    cached: int = 0


@dataclass(slots=True)
class RunReport:
    run_id: str
    kind: str = "?"
    directory: str = "?"
    outcome: str = "-"
    rounds: int = 0
    findings: dict[int, list[Finding]] = field(default_factory=lambda: defaultdict(list))
    settled: dict[int, list[str]] = field(default_factory=dict)
    spawns: list[Spawned] = field(default_factory=list)
    roles: dict[str, RoleCost] = field(default_factory=lambda: defaultdict(RoleCost))
    diff: str = ""
    entry: str = ""
    remaining: list[Finding] = field(default_factory=list)
    """What remained at the finish: the findings table the report leads with."""
    models: dict[str, str] = field(default_factory=dict)
    """The model (or offline) each role ran on."""
    started: str = ""
    ended: str = ""

    @property
    def duration(self) -> str:
        """How long the run took, from its first event to its last (``-`` when unknown)."""
        import datetime as dt

        try:
            seconds = (
                dt.datetime.fromisoformat(self.ended) - dt.datetime.fromisoformat(self.started)
            ).seconds
        except ValueError:
            return "-"
        return f"{seconds // 60} min {seconds % 60} s" if seconds >= 60 else f"{seconds} s"

    def engine(self) -> str:
        """Who reviewed, in words."""
        if not self.models:
            return "-"
        by: dict[str, list[str]] = defaultdict(list)
        for role, model in sorted(self.models.items()):
            by["the offline engine" if model == "offline" else model].append(role)
        return "; ".join(f"{model} ({', '.join(roles)})" for model, roles in sorted(by.items()))

    revisions: dict[str, RevisionRef] = field(default_factory=dict)
    """The revision the run left of each document (its ``revision`` event)."""
    states: dict[str, str] = field(default_factory=dict)
    """Each of those revisions' state in the checkout the report is written from (docs/lifecycle.md)."""

    def revision_lines(self) -> list[str]:
        """``design.md r3 (sha256 …): accepted`` per revision; none for a run before revisions."""
        out = []
        for file, rev in sorted(self.revisions.items()):
            name = (rev.path or file).rsplit("/", 1)[-1]
            state = self.states.get(file, "state unknown: the directory is not in this checkout")
            out.append(f"{name} r{rev.number} (sha256 {rev.sha256[:12]}…): {state}")
        return out

    @property
    def tokens(self) -> int:
        return sum(r.tokens for r in self.roles.values())

    @property
    def cost(self) -> Decimal:
        return sum((r.cost for r in self.roles.values()), Decimal(0))


def _summary_parts(text: str) -> tuple[str, str]:
    diff = text.split("```diff\n", 1)[1].split("```", 1)[0] if "```diff\n" in text else ""
    entry = (
        text.split("## Review log\n", 1)[1].split("\n## Outcome", 1)[0].strip()
        if "## Review log\n" in text
        else ""
    )
    return diff, entry


def load_report(run_dir: Path) -> RunReport:
    report = RunReport(run_dir.name)
    record_path = run_dir / "run.json"
    if record_path.is_file():
        try:
            data = load_json(record_path.read_bytes(), file=record_path, what="run record", hint="")
            head = RecordHead.model_validate(data)
        except (ValidationError, InputError):
            head = RecordHead()
        report.kind, report.directory = head.kind, head.directory
    for event in read_events(run_dir):
        report.started = report.started or event.time
        report.ended = event.time
        match event:
            case RunStarted():
                report.models = dict(event.models)
            case RoundStarted():
                report.rounds = max(report.rounds, event.round)
            case Spawned():
                report.spawns.append(event)
                role = report.roles[event.role]
                role.spawns += 1
                role.tokens += event.tokens
                role.cost += event.cost_usd
                role.cached += event.cache_hits
                if event.model:
                    report.models[event.role] = event.played_by
            case MechanicalCheck() | DualCleanCheck() | ComprehensionCheck():
                report.findings[event.round] += event.found
            case Settled():
                report.settled[event.round] = list(event.sections)
            case Finished():
                report.outcome = event.outcome
                if event.declined:
                    report.outcome += f" (declined: {'; '.join(event.declined)})"
                report.remaining = list(event.findings)
            case RevisionRecorded():
                report.revisions = dict(event.files)
    summary = run_dir / "summary.md"
    if summary.is_file():
        report.diff, report.entry = _summary_parts(summary.read_text(encoding="utf-8"))
    return report


def _by_round(report: RunReport) -> list[tuple[int, Counter[str]]]:
    rounds = sorted(set(report.findings) | set(range(1, report.rounds + 1)))
    return [(r, Counter(f.severity for f in report.findings.get(r, []))) for r in rounds]


def _by_section(report: RunReport) -> list[tuple[int, str, Counter[str]]]:
    rows: list[tuple[int, str, Counter[str]]] = []
    for round_ in sorted(report.findings):
        sections: dict[str, Counter[str]] = defaultdict(Counter)
        for f in report.findings[round_]:
            sections[f.section or "(whole document)"][f.severity] += 1
        rows += [(round_, name, counts) for name, counts in sorted(sections.items())]
    return rows


def chart_svg(report: RunReport, width: int = 520, bar_height: int = 160) -> str:
    """Findings per round, stacked by severity."""
    data = _by_round(report)
    most = max((sum(c.values()) for _, c in data), default=0) or 1
    step = width // max(len(data), 1)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{bar_height + 40}" role="img">'
    ]
    for i, (round_, counts) in enumerate(data):
        x, y = i * step + 10, bar_height
        for severity in SEVERITIES:
            h = round(counts[severity] * (bar_height - 10) / most)
            if h:
                y -= h
                parts.append(
                    f'<rect x="{x}" y="{y}" width="{step - 20}" height="{h}" fill="{COLOURS[severity]}">'
                    f"<title>round {round_}: {counts[severity]} {severity}</title></rect>"
                )
        total = sum(counts.values())
        parts.append(f'<text x="{x}" y="{bar_height + 15}" font-size="12">round {round_}: {total}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _rows(report: RunReport) -> tuple[list[list[str]], list[list[str]], list[list[str]]]:
    sections = [[str(r), name, *(str(c[s]) for s in SEVERITIES)] for r, name, c in _by_section(report)]
    roles = [
        [role, str(c.spawns), str(c.tokens), str(c.cached), f"${c.cost}"]
        for role, c in sorted(report.roles.items())
    ]
    spawns = [
        [
            str(s.round),
            s.role,
            f"{s.slice[0]}-{s.slice[1]}" if s.slice else "",
            s.status,
            str(s.findings),
            str(s.tokens),
            str(s.cache_hits),
        ]
        for s in report.spawns
    ]
    return sections, roles, spawns


FINDING_HEAD = ["severity", "where", "quote", "message", "fix"]


def finding_rows(findings: list[Finding]) -> list[list[str]]:
    """The findings that remain, most severe first: severity, file:line, quote, message, fix."""
    ordered = sorted(findings, key=lambda f: SEVERITIES.index(f.severity))
    return [
        [
            f.severity,
            (f.file or "") + (f":{f.line}" if f.line else ""),
            f.quote or "",
            f.message,
            f.suggested_fix,
        ]
        for f in ordered
    ]


SECTION_HEAD = ["round", "section", *SEVERITIES]
ROLE_HEAD = ["role", "spawns", "tokens", "cached calls", "cost"]
SPAWN_HEAD = ["round", "role", "slice", "status", "findings", "tokens", "cached"]


def md_table(head: list[str], rows: list[list[str]]) -> str:
    if not rows:
        return "(none)\n"
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def render_markdown(report: RunReport) -> str:
    sections, roles, spawns = _rows(report)
    settled = "\n".join(
        f"- round {r}: {', '.join(names) or '(none)'}" for r, names in sorted(report.settled.items())
    )
    per_round = "\n".join(
        f"- round {r}: " + ", ".join(f"{c[s]} {s}" for s in SEVERITIES) for r, c in _by_round(report)
    )
    revisions = "\n".join(f"- {line}" for line in report.revision_lines())
    return (
        f"# Run {report.run_id}\n\n{report.kind} on {report.directory}: **{report.outcome}** after "
        f"{report.rounds} round(s), {report.tokens} tokens, ${report.cost}.\n\n"
        f"Started {report.started or '-'}, took {report.duration}; reviewed by {report.engine()}.\n\n"
        f"## Findings that remain\n\n{md_table(FINDING_HEAD, finding_rows(report.remaining))}\n"
        f"## Revision\n\n{revisions or '(none recorded)'}\n\n"
        f"## Findings per round\n\n{per_round or '(none)'}\n\n## Findings by section\n\n"
        f"{md_table(SECTION_HEAD, sections)}\n## Settled sections\n\n{settled or '(none)'}\n\n"
        f"## Tokens and cost per role\n\n{md_table(ROLE_HEAD, roles)}\n## Spawns\n\n"
        f"{md_table(SPAWN_HEAD, spawns)}\n## Diff\n\n```diff\n{report.diff}```\n\n"
        f"## Review-log entry\n\n{report.entry or '(none)'}\n"
    )


def _html_table(head: list[str], rows: list[list[str]]) -> str:
    if not rows:
        return "<p>(none)</p>"
    cells = "".join("<th>" + html.escape(h) + "</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"


STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;color:#222}"
    "table{border-collapse:collapse;margin:.5rem 0 1.5rem}td,th{border:1px solid #ccc;padding:.25rem .5rem;"
    "text-align:left;vertical-align:top}pre{background:#f6f6f6;padding:1rem;white-space:pre-wrap;"
    "overflow-wrap:anywhere}td code{white-space:pre-wrap}"
    ".legend span{display:inline-block;width:.8rem;height:.8rem;margin:0 .3rem 0 1rem}"
    ".blocker{color:#c0392b;font-weight:bold}.should-fix{color:#b9770e;font-weight:bold}"
)


def diff_html(diff: str) -> str:
    """The diff coloured (Pygments' diff lexer, inline styles: the page needs no stylesheet)
    and wrapped, never clipped."""
    if not diff:
        return "<pre>(no change)</pre>"
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import DiffLexer

    return str(highlight(diff, DiffLexer(), HtmlFormatter(noclasses=True, style="default")))


def findings_html(findings: list[Finding]) -> str:
    if not findings:
        return "<p>None remain.</p>"
    head = "".join(f"<th>{h}</th>" for h in FINDING_HEAD)
    body = ""
    for severity, where, quote, message, fix in finding_rows(findings):
        body += (
            f'<tr><td class="{severity}">{severity}</td><td><code>{html.escape(where)}</code></td>'
            f"<td><code>{html.escape(quote)}</code></td><td>{html.escape(message)}</td>"
            f"<td>{html.escape(fix)}</td></tr>"
        )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_html(report: RunReport) -> str:
    sections, roles, spawns = _rows(report)
    legend = "".join(f'<span style="background:{COLOURS[s]}"></span>{s}' for s in SEVERITIES)
    revisions = "".join(f"<li>{html.escape(line)}</li>" for line in report.revision_lines())
    settled = "".join(
        f"<li>round {r}: {html.escape(', '.join(n) or '(none)')}</li>"
        for r, n in sorted(report.settled.items())
    )
    return (
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>Run {html.escape(report.run_id)}"
        f"</title><style>{STYLE}</style></head><body><h1>Run {html.escape(report.run_id)}</h1>"
        f"<p>{html.escape(report.kind)} on <code>{html.escape(report.directory)}</code>: "
        f"<strong>{html.escape(report.outcome)}</strong> after {report.rounds} round(s), "
        f"{report.tokens} tokens, ${report.cost}.</p><p>Started {html.escape(report.started or '-')}, "
        f"took {report.duration}; reviewed by {html.escape(report.engine())}.</p>"
        f"<h2>Findings that remain</h2>{findings_html(report.remaining)}"
        f"<h2>Revision</h2><ul>{revisions or '<li>(none recorded)</li>'}</ul>"
        f"<h2>Findings per round</h2>{chart_svg(report)}"
        f'<p class="legend">{legend}</p><h2>Findings by section</h2>{_html_table(SECTION_HEAD, sections)}'
        f"<h2>Settled sections</h2><ul>{settled or '<li>(none)</li>'}</ul>"
        f"<h2>Tokens and cost per role</h2>{_html_table(ROLE_HEAD, roles)}"
        f"<h2>Spawns</h2>{_html_table(SPAWN_HEAD, spawns)}"
        f"<h2>Diff</h2>{diff_html(report.diff)}"
        f"<h2>Review-log entry</h2><pre>{html.escape(report.entry) or '(none)'}</pre></body></html>\n"
    )
