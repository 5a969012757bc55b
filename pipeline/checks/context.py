"""What a mechanical check runs against, and the registry of one function per rule ID."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pipeline.checks.table import Rule
from pipeline.formats.design_doc import DesignDoc
from pipeline.formats.findings import MECHANICAL, Finding, Fix
from pipeline.formats.kinds import Target
from pipeline.formats.plan import PlanFile
from pipeline.settings import Limits

Scope = Literal["bounded", "whole-doc"]


@dataclass(frozen=True, slots=True)
class CheckRequest:
    design_path: Path
    mechanics_path: Path | None = None
    plan_path: Path | None = None
    plan_dir: Path | None = None
    changed_section: str | None = None
    target: Target = "design"
    scope: Scope = "whole-doc"
    design_bytes: bytes | None = None
    """The design's bytes when they come from elsewhere than ``design_path`` (``check -``)."""


@dataclass(slots=True)
class CheckContext:
    request: CheckRequest
    design: DesignDoc
    mechanics: DesignDoc | None
    plans: list[PlanFile]
    limits: Limits
    rules: dict[str, Rule]
    findings: list[Finding] = field(default_factory=list)

    def targets(self) -> list[DesignDoc]:
        docs: list[DesignDoc] = []
        if self.request.target in ("design", "both"):
            docs.append(self.design)
        if self.request.target in ("mechanics", "both") and self.mechanics is not None:
            docs.append(self.mechanics)
        return docs

    def design_targeted(self) -> bool:
        return self.request.target in ("design", "both")

    def _line_text(self, path: Path, line: int) -> str | None:
        files: list[tuple[Path, list[str]]] = [(self.design.path, self.design.lines)]
        if self.mechanics is not None:
            files.append((self.mechanics.path, self.mechanics.lines))
        files += [(plan.path, plan.structure.lines) for plan in self.plans]
        for candidate, lines in files:
            if candidate == path and 1 <= line <= len(lines):
                return lines[line - 1]
        return None

    def add(
        self,
        rule_id: str,
        path: Path,
        line: int | None,
        section: str | None,
        message: str,
        suggested_fix: str,
        fix: Fix | None = None,
        quote: str | None = None,
    ) -> None:
        """Record a finding; its quote defaults to the text of the line it names."""
        rule = self.rules[rule_id]
        if quote is None and line is not None:
            text = self._line_text(path, line)
            quote = text.strip() or None if text is not None else None
        self.findings.append(
            Finding(
                rule=rule.id,
                severity=rule.severity,
                file=str(path),
                line=line,
                section=section,
                quote=quote,
                message=message,
                suggested_fix=suggested_fix,
                auto_applicable=rule.auto_applicable and fix is not None,
                fix=fix,
                role=MECHANICAL,
            )
        )


Check = Callable[[CheckContext], None]
CHECKS: dict[str, Check] = {}


def rule(rule_id: str) -> Callable[[Check], Check]:
    def register(fn: Check) -> Check:
        CHECKS[rule_id] = fn
        return fn

    return register
