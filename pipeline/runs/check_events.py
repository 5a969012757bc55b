"""The checks a run records (a ``check`` event, discriminated again on ``check``): the mechanical
checks, a round's dual-clean evaluation, the gates, an edit's scope, cold reads and merge, and
the verdict the finish is about to record. A check this designloop does not know is kept as it
is (``OtherCheck``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Discriminator, Field, Tag

from pipeline.formats.kinds import RunVerdict, Target
from pipeline.runs.event_fields import RAW, BaseEvent, Findings, field_of


class CheckEvent(BaseEvent):
    type: Literal["check"] = "check"
    round: int = 0

    def details(self) -> dict[str, Any]:
        """The check's own fields (what the live view and ``status --json`` show)."""
        return self.model_dump(mode="json", exclude={"time", "pid", "type"})


class MechanicalCheck(CheckEvent):
    check: Literal["mechanical"] = "mechanical"
    findings: int = 0
    blockers: int = 0
    target: Target | None = None
    scope: str | None = None
    found: Findings = Field(default_factory=list)


class DualCleanCheck(CheckEvent):
    """Step 6's evaluation of a round's per-round pair."""

    check: Literal["dual-clean"] = "dual-clean"
    clean: bool = False
    """The per-round pair came back clean (the loop's exit); the round's mechanical findings aside."""
    auditor: int = 0
    second: int = 0
    mechanical: int | None = None
    """The round's open mechanical findings (blockers and should-fix); None in runs recorded
    before they were counted here."""
    inconclusive: list[str] = Field(default_factory=list)
    prefix_share: float = 1.0
    found: Findings = Field(default_factory=list)


class ComprehensionCheck(CheckEvent):
    """The creation kinds' comprehension gate."""

    check: Literal["comprehension"] = "comprehension"
    verdict: str = ""
    findings: int = 0
    found: Findings = Field(default_factory=list)


class ColdReadCheck(CheckEvent):
    """An interactive kind's cold read, named by its role."""

    check: Literal["comprehension-review", "readability-auditor"]
    verdict: str = ""
    findings: int = 0


class GateCheck(CheckEvent):
    """The S3 gate found the research log's adversarial gate resolved."""

    check: Literal["s3-gate"] = "s3-gate"
    state: str = ""


class ScopeCheck(CheckEvent):
    """An interactive kind's cold-read scope (Step 2)."""

    check: Literal["scope"] = "scope"
    cold_read: str = ""
    sections: list[str] = Field(default_factory=list)
    escalated: bool = False
    target: Target | None = None


class MergedCheck(CheckEvent):
    """An interactive kind's round, merged (Step 5)."""

    check: Literal["merged"] = "merged"
    open: int = 0
    inconclusive: list[str] = Field(default_factory=list)
    findings: Findings = Field(default_factory=list)


class VerdictCheck(CheckEvent):
    """Step 6: the verdict the finish is about to record."""

    check: Literal["outcome"] = "outcome"
    outcome: RunVerdict
    remaining: int = 0
    declined: int = 0
    """Parts of the user's instruction the inline editor declined."""


class OtherCheck(CheckEvent):
    """A check this designloop does not know (a log written by another version), as it is."""

    model_config = ConfigDict(extra="allow", frozen=True)

    check: str


CHECKS: dict[str, str] = {
    "mechanical": "mechanical",
    "dual-clean": "dual-clean",
    "comprehension": "comprehension",
    "comprehension-review": "cold-read",
    "readability-auditor": "cold-read",
    "s3-gate": "s3-gate",
    "scope": "scope",
    "merged": "merged",
    "outcome": "outcome",
}


def _check_tag(value: object) -> str:
    return CHECKS.get(str(field_of(value, "check")), RAW)


AnyCheck = Annotated[
    Annotated[MechanicalCheck, Tag("mechanical")]
    | Annotated[DualCleanCheck, Tag("dual-clean")]
    | Annotated[ComprehensionCheck, Tag("comprehension")]
    | Annotated[ColdReadCheck, Tag("cold-read")]
    | Annotated[GateCheck, Tag("s3-gate")]
    | Annotated[ScopeCheck, Tag("scope")]
    | Annotated[MergedCheck, Tag("merged")]
    | Annotated[VerdictCheck, Tag("outcome")]
    | Annotated[OtherCheck, Tag(RAW)],
    Discriminator(_check_tag),
]
