"""One emitter registry behind every command's ``--output-format`` (``check``, ``drift``,
``ready``, ``batch``): the findings a command reports, written as

- ``text``: one line per finding, ``path:line:col: RULE [severity] message``, sorted by file,
  line and column (editors' problem matchers read it), then a summary line;
- ``json``: one object, ``schema_version`` first, the command's own fields and ``findings``;
- ``sarif``: SARIF 2.1.0 for code-scanning pages;
- ``github``: GitHub Actions workflow commands (``::error file=…,line=…,col=…,title=…::``),
  annotations inline on a pull request with no code scanning;
- ``rdjson``: reviewdog's Diagnostic JSON;
- ``junit``: JUnit XML, one test case per file checked, a failure per finding.

Every path is relative to the repository root, and no message holds an absolute path.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline import confinement
from pipeline.checks.registry import Rule, registry
from pipeline.errors import InputError
from pipeline.formats.findings import Finding

FORMATS = ("text", "json", "sarif", "github", "rdjson", "junit")
GITHUB_LEVEL = {"blocker": "error", "should-fix": "warning", "suggestion": "notice"}
RDJSON_LEVEL = {"blocker": "ERROR", "should-fix": "WARNING", "suggestion": "INFO"}


@dataclass(slots=True)
class Report:
    """What a command reports, for any emitter."""

    command: str
    findings: list[Finding]
    root: Path
    document: dict[str, Any] = field(default_factory=dict)
    """The command's own JSON fields (files, profiles, counts), put before ``findings``."""
    files: list[str] = field(default_factory=list)
    """Every file the command looked at (relative), for JUnit's passing cases."""
    summary: str = ""
    texts: dict[str, list[str]] = field(default_factory=dict)
    """Files' lines the command already read (relative path), for columns."""
    rules: dict[str, Rule] = field(default_factory=dict)
    """The rules the command ran, described in SARIF even when they found nothing."""
    record: bool = False
    """``json`` is the command's own record (``document``) alone: a batch's, which holds each
    directory's findings in its rows."""

    def path(self, finding: Finding) -> str:
        from pipeline.cli.render import repo_path

        return repo_path(finding.file, self.root) if finding.file else ""

    def column(self, finding: Finding) -> int:
        """Where the finding's quote starts on its line (1 when it quotes nothing found there)."""
        if finding.fix is not None:
            return finding.fix.column
        if not finding.quote or not finding.line:
            return 1
        lines = self._lines(self.path(finding))
        if finding.line > len(lines):
            return 1
        at = lines[finding.line - 1].find(finding.quote)
        return at + 1 if at >= 0 else 1

    def _lines(self, relative: str) -> list[str]:
        if relative not in self.texts:
            try:  # read through the one guard: a finding's path never leads out of the repository
                text = confinement.read_bytes(self.root / relative).decode("utf-8", "replace")
            except (OSError, InputError):
                text = ""
            self.texts[relative] = text.splitlines()
        return self.texts[relative]

    def ordered(self) -> list[tuple[Finding, str, int]]:
        """Each finding with its path and column, by file, line and column."""
        rows = [(f, self.path(f), self.column(f)) for f in self.findings]
        return sorted(rows, key=lambda r: (r[1], r[0].line or 0, r[2], r[0].rule))

    def message(self, finding: Finding) -> str:
        prefix = str(self.root).rstrip("/") + "/"
        return finding.message.replace(prefix, "")


def emit_text(report: Report) -> str:
    out = []
    for f, path, column in report.ordered():
        where = f"{path}:{f.line or 1}:{column}" if path else "-"
        fixable = " [*]" if f.auto_applicable else ""
        out.append(f"{where}: {f.rule}{fixable} [{f.severity}] {report.message(f)}")
    out.append(report.summary or counts(report.findings))
    return "\n".join(out)


def counts(findings: list[Finding]) -> str:
    if not findings:
        return "no findings"
    by = {s: sum(f.severity == s for f in findings) for s in ("blocker", "should-fix", "suggestion")}
    return (
        f"{len(findings)} finding{'s' if len(findings) != 1 else ''}: {by['blocker']} blocker, "
        f"{by['should-fix']} should-fix, {by['suggestion']} suggestion"
    )


def emit_json(report: Report) -> str:
    from pipeline.cli.output import SCHEMA_VERSION

    if report.record:
        return json.dumps({"schema_version": SCHEMA_VERSION} | report.document, indent=2, default=str)
    findings = []
    for f, path, column in report.ordered():
        findings.append(f.to_json() | {"file": path or None, "column": column})
    document = {"schema_version": SCHEMA_VERSION, "command": report.command} | report.document
    return json.dumps(document | {"findings": findings}, indent=2, ensure_ascii=False)


def _rules_of(report: Report) -> dict[str, Rule]:
    known = registry()
    used = {f.rule: rule for f in report.findings if (rule := known.find(f.rule)) is not None}
    return report.rules | used


def emit_sarif(report: Report) -> str:
    from pipeline.cli.render import to_sarif

    return to_sarif(report.findings, _rules_of(report), report.root)


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def emit_github(report: Report) -> str:
    """GitHub Actions workflow commands: one annotation per finding."""
    out = []
    for f, path, column in report.ordered():
        props = [f"file={_escape_property(path)}"] if path else []
        if f.line:
            props += [f"line={f.line}", f"col={column}"]
        props.append(f"title={_escape_property(f'{f.rule} ({f.severity})')}")
        text = report.message(f) + (f" Fix: {f.suggested_fix}" if f.suggested_fix else "")
        out.append(f"::{GITHUB_LEVEL[f.severity]} {','.join(props)}::{_escape_data(text)}")
    return "\n".join(out)


def emit_rdjson(report: Report) -> str:
    """reviewdog's Diagnostic JSON (rdjson)."""
    diagnostics = []
    for f, path, column in report.ordered():
        start = {"line": f.line or 1, "column": column}
        diagnostic: dict[str, Any] = {
            "message": report.message(f),
            "location": {"path": path, "range": {"start": start}},
            "severity": RDJSON_LEVEL[f.severity],
            "code": {"value": f.rule},
        }
        if f.fix is not None:
            end = {"line": f.fix.line, "column": f.fix.column + len(f.fix.expect)}
            diagnostic["suggestions"] = [
                {
                    "range": {"start": {"line": f.fix.line, "column": f.fix.column}, "end": end},
                    "text": f.fix.insert,
                }
            ]
        diagnostics.append(diagnostic)
    document = {"source": {"name": "designloop"}, "diagnostics": diagnostics}
    return json.dumps(document, indent=2, ensure_ascii=False)


def emit_junit(report: Report) -> str:
    """JUnit XML: a test case per file (passing when it has no finding), a failure per finding."""
    import xml.etree.ElementTree as ET

    by_file: dict[str, list[tuple[Finding, int]]] = {path: [] for path in report.files}
    for f, path, column in report.ordered():
        by_file.setdefault(path or "-", []).append((f, column))
    suites = ET.Element("testsuites", name="designloop")
    failures = sum(len(v) for v in by_file.values())
    suite = ET.SubElement(
        suites, "testsuite", name=f"designloop {report.command}", tests=str(max(1, len(by_file))),
        failures=str(failures), errors="0", skipped="0",
    )  # fmt: skip
    for path, found in sorted(by_file.items()):
        case = ET.SubElement(suite, "testcase", classname=path, name=f"designloop {report.command} {path}")
        for f, column in found:
            failure = ET.SubElement(case, "failure", message=report.message(f), type=f.rule)
            failure.text = f"{path}:{f.line or 1}:{column}: {f.rule} [{f.severity}] {report.message(f)}"
    if not by_file:
        ET.SubElement(suite, "testcase", classname="designloop", name=f"designloop {report.command}")
    return ET.tostring(suites, encoding="unicode", xml_declaration=True)


EMITTERS: dict[str, Callable[[Report], str]] = {
    "text": emit_text,
    "json": emit_json,
    "sarif": emit_sarif,
    "github": emit_github,
    "rdjson": emit_rdjson,
    "junit": emit_junit,
}


def emit(report: Report, output_format: str, output_file: Path | None) -> None:
    """The report in ``output_format`` on stdout, or written whole to ``output_file``."""
    text = EMITTERS[output_format](report)
    if output_file is None:
        from pipeline.cli.output import write

        if text:
            write(text)
        return
    from pipeline.formats.textio import atomic_write

    atomic_write(output_file, text if text.endswith("\n") else text + "\n")


def check_output_file(output_file: Path | None) -> Path | None:
    """``--output-file``: a file in an existing, writable directory, checked before anything runs."""
    if output_file is None:
        return None
    from pipeline.formats.textio import check_write_target
    from pipeline.runs.preflight import writable_file

    given = Path.cwd() / output_file if not output_file.is_absolute() else output_file
    check_write_target(given)
    target = given.resolve()
    writable_file(target, "--output-file", "name a file in an existing, writable directory")
    return target
