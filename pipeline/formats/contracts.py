"""Typed role outputs (formats.md §9), validated with pydantic."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Verdict = Literal["PASS", "NEEDS REVISION"]
ReviewSeverity = Literal["blocker", "should-fix", "suggestion"]


class ReviewFinding(BaseModel):
    model_config = ConfigDict(extra="forbid")

    severity: ReviewSeverity
    section: str | None = None
    quote: str | None = None
    rule: str = Field(min_length=1)
    message: str = Field(min_length=1)
    suggested_fix: str = ""
    decision_shaped: bool = False


class ReviewOutput(BaseModel):
    """What every review role returns. PASS with a blocker or should-fix is malformed."""

    model_config = ConfigDict(extra="forbid")

    verdict: Verdict
    findings: list[ReviewFinding] = Field(default_factory=list)

    @model_validator(mode="after")
    def _verdict_matches_findings(self) -> ReviewOutput:
        blocking = [f for f in self.findings if f.severity in ("blocker", "should-fix")]
        if self.verdict == "PASS" and blocking:
            raise ValueError(f"verdict PASS with {len(blocking)} blocker/should-fix finding(s) is malformed")
        return self

    @classmethod
    def of(cls, findings: list[ReviewFinding]) -> ReviewOutput:
        blocking = any(f.severity in ("blocker", "should-fix") for f in findings)
        return cls(verdict="NEEDS REVISION" if blocking else "PASS", findings=findings)


class AuthorOutput(BaseModel):
    """The author's thin summary; the draft itself stays on disk at output_path."""

    model_config = ConfigDict(extra="forbid")

    summary: str = Field(min_length=1, max_length=4000)
    output_path: str = Field(min_length=1)


OUTPUT_TYPES: dict[str, type[BaseModel]] = {"review": ReviewOutput, "author": AuthorOutput}
