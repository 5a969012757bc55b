"""What a run returns to its caller: how it ended, its exit code, and the ``--json`` object."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipeline.agents.resolve import not_judged
from pipeline.agents.usage import Usage
from pipeline.errors import ExitCode
from pipeline.formats.kinds import Kind, RunVerdict
from pipeline.graph import story
from pipeline.graph.create.state import RunState
from pipeline.graph.diff import describe_diff
from pipeline.graph.edit.state import EditState
from pipeline.graph.state import BLOCKER_REMAINS, DECISION_NEEDED, INCONCLUSIVE, PASS, SHOULD_FIX_REMAINS
from pipeline.runs.records import FailOn

OUTCOME_EXIT: dict[RunVerdict, ExitCode] = {
    PASS: ExitCode.OK,
    BLOCKER_REMAINS: ExitCode.FINDINGS,
    SHOULD_FIX_REMAINS: ExitCode.OK,  # the seed's "completes with a warning"
    INCONCLUSIVE: ExitCode.INCONCLUSIVE,
    DECISION_NEEDED: ExitCode.FINDINGS,
}


def exit_code_for(verdict: RunVerdict, fail_on: FailOn) -> ExitCode:
    """The exit code of a finished run; ``--fail-on should-fix`` turns the warning into 1."""
    if verdict == SHOULD_FIX_REMAINS and fail_on == "should-fix":
        return ExitCode.FINDINGS
    return OUTCOME_EXIT[verdict]


@dataclass(slots=True)
class RunResult:
    run_id: str
    kind: Kind
    exit_code: ExitCode
    state: RunState | EditState | None
    paused: dict[str, Any] | None = None
    message: str | None = None
    spent: Usage | None = None
    """This process's own ledger, when it knows more than the checkpoint (a stop mid-node)."""
    flag: str | None = None
    """For a stopped run, the option that lets ``resume`` go on (--budget, --max-requests ...)."""
    models: dict[str, str] = field(default_factory=dict)
    """The model (or ``offline``) each role that ran played."""

    def usage(self) -> Usage:
        total = Usage()
        for item in self.state.usage if self.state else []:
            total.merge(item.usage)
        if self.spent is not None and self.spent.total_tokens > total.total_tokens:
            return self.spent
        return total

    def to_json(self) -> dict[str, Any]:
        state = self.state
        outcome = state.outcome if state else None
        return {
            "run_id": self.run_id,
            "kind": self.kind,
            "outcome": outcome.verdict if outcome else ("PAUSED" if self.paused else "STOPPED"),
            "declined": outcome.declined if outcome else [],
            "exit_code": int(self.exit_code),
            "rounds": state.round if state else None,
            "findings": story.findings_json(state, outcome.remaining) if state and outcome else [],
            "blocking": sum(1 for f in outcome.remaining if f.blocking) if outcome else 0,
            "usage": self.usage().to_json(),
            "models": self.models,
            "not_judged": not_judged(self.models),
            "review_log_entry": state.review_entry if state else None,
            "draft": state.draft if state else None,
            "history": [h.model_dump() for h in state.history] if state else [],
            "notes": state.notes if state else [],
            "diff": {
                "summary": describe_diff(state.diff if state else []),
                "files": [d.to_json() for d in state.diff] if state else [],
            },
            "paused": self.paused,
            "message": self.message,
        } | (edit_json(state) if isinstance(state, EditState) else {})


def edit_json(state: EditState) -> dict[str, Any]:
    """What an interactive edit adds to --json: its scope, files, sync suggestion."""
    scope = state.scope
    applied = state.applied
    return {
        "scope": scope.model_dump(mode="json") if scope else {"cold_read": "skipped"},
        "files": applied.files if applied else [],
        "changed_section": applied.changed_section if applied else None,
        "sync": state.sync.model_dump(mode="json", exclude={"passages"}) if state.sync else None,
        "sync_suggestion": state.sync_suggestion,
    }
