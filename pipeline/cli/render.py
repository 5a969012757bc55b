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


def repo_path(path: str | None, root: Path) -> str:
    """``path`` relative to the repository root (a path inside it given absolute, or relative
    to the current directory); one outside it stays as it is."""
    if not path:
        return ""
    given = Path(path)
    full = given if given.is_absolute() else (Path.cwd() / given)
    try:
        return Path(os.path.normpath(full)).relative_to(root).as_posix()
    except ValueError:
        return given.as_posix()


def fingerprint(f: Finding, uri: str) -> str:
    """What identifies a finding whatever line it moved to: its rule, file, section and quote
    (its message when it quotes nothing)."""
    import hashlib

    key = "\0".join((f.rule, uri, f.section or "", f.quote or f.message))
    return hashlib.sha256(key.encode()).hexdigest()[:32]


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


def _rule(rule_id: str, rule: Rule | None) -> dict[str, object]:
    summary = rule.summary if rule and rule.summary else rule_id
    fix = " It is fixed in place by designloop check --fix." if rule and rule.auto_applicable else ""
    return {
        "id": rule_id,
        "shortDescription": {"text": summary},
        "fullDescription": {"text": summary},
        "help": {
            "text": f"{summary}.{fix} Each result's message says what to do; docs/checks.md has the rule.",
        },
        "defaultConfiguration": {"level": SARIF_LEVEL[rule.severity] if rule else "error"},
    }


def _fixes(f: Finding, uri: str) -> list[dict[str, object]]:
    assert f.fix is not None
    return [
        {
            "description": {"text": f.suggested_fix},
            "artifactChanges": [
                {
                    "artifactLocation": {"uri": uri, "uriBaseId": SRCROOT},
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


SRCROOT = "%SRCROOT%"


def to_sarif(findings: list[Finding], rules: dict[str, Rule], root: Path | None = None) -> str:
    """SARIF 2.1.0: paths relative to the repository root (``%SRCROOT%``), no absolute path in
    a message, a fingerprint per result that does not move with its line, each rule's help."""
    from pipeline.settings import repo_root

    base = root or repo_root()
    prefix = str(base).rstrip("/") + "/"
    used = sorted({f.rule for f in findings} | set(rules))
    results = []
    for f in findings:
        uri = repo_path(f.file, base)
        region: dict[str, object] = {"startLine": f.line or 1}
        artifact = {"uri": uri, "uriBaseId": SRCROOT}
        if f.quote:
            region["snippet"] = {"text": f.quote}
        result: dict[str, object] = {
            "ruleId": f.rule,
            "level": SARIF_LEVEL[f.severity],
            "message": {"text": f"{f.message}. Fix: {f.suggested_fix}".replace(prefix, "")},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": artifact,
                        "region": region,
                    }
                }
            ],
            "partialFingerprints": {"designloop/v1": fingerprint(f, uri)},
        }
        if f.section:
            result["properties"] = {"section": f.section}
        if f.fix is not None:
            result["fixes"] = _fixes(f, uri)
        results.append(result)
    doc = {
        "version": "2.1.0",
        "$schema": SARIF_SCHEMA,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "designloop",
                        "version": __version__,
                        "rules": [_rule(rule_id, rules.get(rule_id)) for rule_id in used],
                    }
                },
                "results": results,
            }
        ],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False)
