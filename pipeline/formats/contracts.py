"""Typed role outputs (docs/formats.md §9), validated with pydantic."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from pipeline.formats.findings import Finding

Verdict = Literal["PASS", "NEEDS REVISION"]


class ReviewOutput(BaseModel):
    """Your review, the end of your work: the verdict and every finding. PASS only when no
    finding is a blocker or a should-fix."""

    model_config = ConfigDict(extra="forbid")

    verdict: Verdict = Field(
        description="PASS, or NEEDS REVISION when any finding is a blocker or should-fix"
    )
    findings: list[Finding] = Field(default_factory=list, description="every finding; empty when none")

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
    """The end of your work, once the file is written: a short summary and the path you
    wrote. Never the document itself: it stays on disk at output_path."""

    model_config = ConfigDict(extra="forbid")

    summary: str = Field(
        min_length=1,
        max_length=4000,
        description="two or three sentences: what you wrote or changed, and what you could not do",
    )
    output_path: str = Field(
        min_length=1, description="the path of the file you wrote, as your params name it"
    )


MAX_DECLINED = 20


def declined_words(count: int) -> str:
    """How many parts of an instruction were declined, as every outcome line says it."""
    return f"{count} {'part' if count == 1 else 'parts'} of the instruction declined"


DeclinedPart = Annotated[str, Field(min_length=1, max_length=600)]


class EditorOutput(AuthorOutput):
    """The end of your work, once the file is edited: a short summary, the path you edited,
    and each part of the user's instruction you did not carry out."""

    declined: list[DeclinedPart] = Field(
        default_factory=list,
        max_length=MAX_DECLINED,
        description="each part of the user's instruction you did not carry out, in one sentence with"
        " why (what the code shows instead); empty when you carried out all of it, or had no instruction",
    )


OUTPUT_TYPES: dict[str, type[BaseModel]] = {
    "review": ReviewOutput,
    "author": AuthorOutput,
    "editor": EditorOutput,
}
