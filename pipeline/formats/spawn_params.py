"""The params file every spawn reads (docs/formats.md §1, docs/agents.md): one JSON object per
spawn, its keys chosen by the role's schema (params/spawn.toml)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from pipeline.formats.findings import Finding
from pipeline.formats.kinds import Kind, Role, Target


class ClaimRef(BaseModel):
    """A claim as a reviewer is handed it: the draft's line and sentence, and the code span
    (``file``, lines ``first`` to ``last``) the sentence rests on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    line: int
    quote: str
    mention: str
    symbol: str | None = None
    file: str
    first: int
    last: int


class SpawnParams(BaseModel):
    """Everything a spawn needs; each role's params schema picks its keys (params/spawn.toml).

    The orchestrator validates it against the role's schema and writes it to the spawn's params
    file (``_workflow/reviews/``); a model reads that file through its Read tool, and the
    offline engine reads it back through this model."""

    model_config = ConfigDict(extra="forbid")

    role: Role
    kind: Kind
    round: int = 1
    target: Target | None = None
    target_path: str | None = None
    draft_path: str | None = None
    design_path: str | None = None
    design_mechanics_path: str | None = None
    output_path: str | None = None
    research_log_path: str | None = None
    episodes_path: str | None = None
    plan_path: str | None = None
    plan_dir: str | None = None
    code_root: str | None = None
    slice: tuple[int, int] | None = None
    slice_count: int | None = None
    total_lines: int | None = None
    scope: str | None = None
    bounded_scope: list[str] | None = None
    mutation_kind: str | None = None
    changed_section: str | None = None
    note: str | None = None
    instruction: str | None = None
    """The user's request to the inline editor (for ``changed_section``, or the whole file)."""
    flagged_passages: list[Finding] | None = None
    claims: list[ClaimRef] | None = None
    """The draft's code claims with the spans they rest on (the fidelity check, with a model)."""

    def present(self) -> set[str]:
        return {k for k, v in self.model_dump().items() if v is not None}
