"""Helpers for graph tests: scripted role engines, runs in a throwaway repository."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from pipeline.agents.session import SessionOptions
from pipeline.formats.contracts import AuthorOutput, ReviewOutput, Verdict
from pipeline.formats.design_dir import DesignDir
from pipeline.formats.findings import Finding, Severity
from pipeline.formats.kinds import CreationKind
from pipeline.formats.spawn_params import SpawnParams
from pipeline.graph.deps import RunDeps
from pipeline.graph.result import RunResult
from pipeline.graph.runner import execute
from pipeline.offline.driver import Engine, Output, engine_model
from pipeline.offline.observe import Observations, required
from pipeline.runs.setup import plan_run, start_run

PASS = ReviewOutput(verdict="PASS")


def finding(
    rule: str,
    severity: Severity = "should-fix",
    section: str | None = None,
    quote: str | None = None,
    message: str | None = None,
    decision_shaped: bool = False,
) -> Finding:
    return Finding(
        severity=severity,
        section=section,
        quote=quote,
        rule=rule,
        message=message or f"{rule} finding",
        suggested_fix="fix it",
        decision_shaped=decision_shaped,
    )


def review(*findings: Finding) -> ReviewOutput:
    """The verdict the findings call for."""
    return ReviewOutput.of(list(findings))


def malformed(verdict: Verdict, *findings: Finding) -> ReviewOutput:
    """An output that breaks the contract (PASS beside a blocking finding), as a model may return."""
    return ReviewOutput.model_construct(verdict=verdict, findings=list(findings))


def returns(output: Output | Callable[[SpawnParams], Output]) -> Engine:
    def run(params: SpawnParams, obs: Observations) -> Output:
        return output(params) if callable(output) else output

    return run


def writes(text: Callable[[int], str]) -> Engine:
    """An author that writes ``text(round)`` to its output path."""

    def run(params: SpawnParams, obs: Observations) -> AuthorOutput:
        path = required(params.output_path, "output_path")
        result = obs.call("write", path=path, content=text(params.round))
        assert result.startswith("wrote"), result
        return AuthorOutput(summary=f"wrote round {params.round}", output_path=path)

    return run


TRIP = (
    "and then checks the tenant, the route, the bucket, the refill rate, the time of the last refill and "
    "the number of tokens that remain, and it records the answer in the table, in the log and in the metrics "
    "so that an operator who looks at the dashboard later can see what the limiter decided for each request"
)
"""A clause that makes its sentence run past the house style's hard limit (a should-fix the fixer splits)."""


def long_design(flag_word: str | None = None, sections: int = 14) -> str:
    """A clean design of about 340 lines (two auditor slices); ``flag_word`` lands in the last section."""
    out = ["# Generated design", "", "## Overview", "", "A small service keeps counters for each tenant.", ""]
    for i in range(sections):
        out += [
            f"## Part of the service {i}",
            "",
            f"**TL;DR:** Component {i} keeps one counter per tenant.",
            "",
        ]
        for j in range(10):
            word = f" {flag_word}" if flag_word and i == sections - 1 and j == 3 else ""
            out += [f"Step {j} of component {i} stores one{word} value in its table.", ""]
    return "\n".join(out)


def start(d: DesignDir, tmp: Path, kind: CreationKind = "phase1-creation", warmup: bool = False) -> Path:
    return start_run(plan_run(kind, d.root, SessionOptions(runs_dir=tmp / "runs"), warmup)).run_dir


def go(
    run_dir: Path,
    models: dict[str, Engine] | None = None,
    resume: bool = False,
    tweak: Callable[[RunDeps], None] | None = None,
) -> RunResult:
    def configure(deps: RunDeps) -> None:
        for role, engine in (models or {}).items():
            deps.runtime.model_overrides[role] = engine_model(role, engine)
        if tweak is not None:
            tweak(deps)

    return asyncio.run(execute(run_dir, resume=resume, configure=configure))
