"""Findings rendered for machines (JSON, SARIF 2.1.0) and for people (text)."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

from pipeline import __version__
from pipeline.checks.table import Rule
from pipeline.formats.findings import Finding

SARIF_LEVEL = {"blocker": "error", "should-fix": "warning", "suggestion": "note"}
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def display_path(path: str | None) -> str:
    if path is None:
        return ""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def to_json(findings: list[Finding]) -> str:
    return json.dumps([f.to_json() for f in findings], indent=2, ensure_ascii=False)


def summary(findings: list[Finding]) -> str:
    counts = Counter(f.severity for f in findings)
    return (
        f"{len(findings)} finding(s): {counts['blocker']} blocker, {counts['should-fix']} should-fix, "
        f"{counts['suggestion']} suggestion"
    )


def to_text(findings: list[Finding]) -> str:
    out: list[str] = []
    for f in findings:
        where = display_path(f.file) + (f":{f.line}" if f.line else "")
        section = f' [§"{f.section}"]' if f.section else ""
        fixable = " (auto-fixable: designloop check --fix)" if f.auto_applicable else ""
        out.append(f"{where}: {f.severity} {f.rule}{section}: {f.message}")
        out.append(f"    fix: {f.suggested_fix}{fixable}")
    out.append(summary(findings) if findings else "no findings")
    return "\n".join(out)


def to_sarif(findings: list[Finding], rules: dict[str, Rule]) -> str:
    used = sorted({f.rule for f in findings} | set(rules))
    driver_rules = []
    for rule_id in used:
        rule = rules.get(rule_id)
        driver_rules.append(
            {
                "id": rule_id,
                "shortDescription": {"text": rule.summary if rule else rule_id},
                "defaultConfiguration": {"level": SARIF_LEVEL[rule.severity] if rule else "error"},
            }
        )
    results = []
    for f in findings:
        uri = Path(display_path(f.file)).as_posix()
        region: dict[str, object] = {"startLine": f.line or 1}
        if f.quote:
            region["snippet"] = {"text": f.quote}
        result: dict[str, object] = {
            "ruleId": f.rule,
            "level": SARIF_LEVEL[f.severity],
            "message": {"text": f"{f.message}. Fix: {f.suggested_fix}"},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri}, "region": region}}],
        }
        if f.section:
            result["properties"] = {"section": f.section}
        if f.fix is not None:
            result["fixes"] = [
                {
                    "description": {"text": f.suggested_fix},
                    "artifactChanges": [
                        {
                            "artifactLocation": {"uri": uri},
                            "replacements": [
                                {
                                    "deletedRegion": {
                                        "startLine": f.fix.line,
                                        "startColumn": f.fix.column,
                                        "endColumn": f.fix.column + len(f.fix.expect),
                                    },
                                    "insertedContent": {"text": f.fix.insert},
                                }
                            ],
                        }
                    ],
                }
            ]
        results.append(result)
    doc = {
        "version": "2.1.0",
        "$schema": SARIF_SCHEMA,
        "runs": [
            {
                "tool": {"driver": {"name": "designloop", "version": __version__, "rules": driver_rules}},
                "results": results,
            }
        ],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False)
