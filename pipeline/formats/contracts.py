"""Typed role outputs (docs/formats.md §9), validated with pydantic."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from pipeline.formats.findings import Finding

Verdict = Literal["PASS", "NEEDS REVISION"]


class ReviewOutput(BaseModel):
    """What every review role returns. PASS with a blocker or should-fix is malformed."""

    model_config = ConfigDict(extra="forbid")

    verdict: Verdict
    findings: list[Finding] = Field(default_factory=list)

    @model_validator(mode="after")
    def _verdict_matches_findings(self) -> ReviewOutput:
        blocking = [f for f in self.findings if f.blocking]
        if self.verdict == "PASS" and blocking:
            raise ValueError(f"verdict PASS with {len(blocking)} blocker/should-fix finding(s) is malformed")
        return self

    @classmethod
    def of(cls, findings: list[Finding]) -> ReviewOutput:
        blocking = any(f.blocking for f in findings)
        return cls(verdict="NEEDS REVISION" if blocking else "PASS", findings=findings)


class AuthorOutput(BaseModel):
    """The author's thin summary; the draft itself stays on disk at output_path."""

    model_config = ConfigDict(extra="forbid")

    summary: str = Field(min_length=1, max_length=4000)
    output_path: str = Field(min_length=1)


OUTPUT_TYPES: dict[str, type[BaseModel]] = {"review": ReviewOutput, "author": AuthorOutput}
