"""Findings as data: one record shape for mechanical checks and review roles alike."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["blocker", "should-fix", "suggestion"]
SEVERITY_ORDER: dict[str, int] = {"blocker": 0, "should-fix": 1, "suggestion": 2}
WIRING_ERROR = "wiring-error"


@dataclass(frozen=True, slots=True)
class Fix:
    """An exact replacement: on ``line``, at 1-based ``column``, ``expect`` becomes ``insert``."""

    line: int
    column: int
    expect: str
    insert: str

    def to_json(self) -> dict[str, object]:
        return {"line": self.line, "column": self.column, "delete": self.expect, "insert": self.insert}


@dataclass(frozen=True, slots=True)
class Finding:
    rule: str
    severity: Severity
    file: str
    line: int | None
    section: str | None
    message: str
    suggested_fix: str
    auto_applicable: bool = False
    fix: Fix | None = None

    @property
    def blocking(self) -> bool:
        return self.severity in ("blocker", "should-fix")

    def sort_key(self) -> tuple[int, str, int, str]:
        return (SEVERITY_ORDER[self.severity], self.file, self.line or 0, self.rule)

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "rule": self.rule,
            "severity": self.severity,
            "file": self.file,
            "line": self.line,
            "section": self.section,
            "message": self.message,
            "suggested_fix": self.suggested_fix,
            "auto_applicable": self.auto_applicable,
        }
        if self.fix is not None:
            data["fix"] = self.fix.to_json()
        return data


def has_blocker(findings: list[Finding]) -> bool:
    return any(f.severity == "blocker" for f in findings)


def sort_findings(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=Finding.sort_key)
