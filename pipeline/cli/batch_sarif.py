"""A batch as SARIF 2.1.0 for code-scanning pages (docs/ci.md).

Every finding that remains in a directory's run is one result, located at its file, line and
quote, at the level of its severity (blocker: error, should-fix: warning, suggestion: note).
A directory that did not end PASS for another reason is one result of its own on the
document it writes: ``designloop-bad-input`` and ``designloop-inconclusive`` (error),
``designloop-budget`` and ``designloop-paused`` (warning), ``designloop-decision-needed``
(error, on top of the decision-shaped findings). A directory skipped as unchanged reports its
last run's findings and outcome again (an upload replaces the earlier alerts, so what is still
open stays open); one left alone as edited adds nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

from pipeline.cli.render import to_sarif
from pipeline.fleet.rows import Batch, Row
from pipeline.formats.findings import Finding, Severity
from pipeline.formats.kinds import PHASE1

STATES: dict[str, tuple[str, Severity, str]] = {
    "bad": (
        "designloop-bad-input",
        "blocker",
        "fix the input named in the message, then run the batch again",
    ),
    "busy": ("designloop-bad-input", "blocker", "another run held the directory; run the batch again"),
    "INCONCLUSIVE": (
        "designloop-inconclusive",
        "blocker",
        "a required review never happened; run the batch again",
    ),
    "STOPPED": ("designloop-budget", "should-fix", "resume with a larger budget"),
    "PAUSED": ("designloop-paused", "should-fix", "resolve the research log's adversarial gate, then resume"),
    "DECISION NEEDED": ("designloop-decision-needed", "blocker", "take the decision back to phase 0"),
}


LEAD = re.compile(r"^(?P<file>[^\s:][^:\n]*?)(?::\d+)?: ")


def _at_fault(row: Row, root: Path, document: str) -> str:
    """Where a directory's own result points: the research log for a paused run (its gate is
    what to resolve), the file a bad input names (or, when that file is missing, the nearest
    directory that exists), else the document the run writes."""
    if row.outcome == "PAUSED":
        return f"{row.directory}/_workflow/research-log.md"
    match = LEAD.match(row.message or "") if row.action == "bad" else None
    if match is None:
        return document
    named = Path(match.group("file"))
    path = named if named.is_absolute() else root / named
    while not path.exists() and path != path.parent:
        path = path.parent
    try:
        return path.resolve().relative_to(root.resolve()).as_posix() or "."
    except ValueError:
        return document


def batch_findings(batch: Batch, root: Path | None = None) -> list[Finding]:
    base = root or Path.cwd()
    out: list[Finding] = []
    for row in batch.rows:
        target = (
            f"{row.directory}/_workflow/design.md"
            if batch.kind == PHASE1
            else (f"{row.directory}/design-final.md")
        )
        out += [f if f.file else f.model_copy(update={"file": target}) for f in row.findings]
        state = STATES.get(row.action) or STATES.get(row.outcome or "")
        if state is not None:
            rule, severity, fix = state
            message = (row.message or row.outcome or row.action).splitlines()[0]
            text = f"{row.directory}: {message}"
            where = _at_fault(row, base, target)
            out.append(Finding(severity=severity, rule=rule, message=text, suggested_fix=fix, file=where))
    return out


def batch_sarif(batch: Batch, root: Path | None = None) -> str:
    from pipeline.checks.registry import registry

    findings = batch_findings(batch, root)
    known = registry()
    rules = {f.rule: rule for f in findings if (rule := known.find(f.rule)) is not None}
    return to_sarif(findings, rules, root)
