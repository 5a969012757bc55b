"""The spawn contract: one params file per spawn, and a prompt body byte-identical across a fan-out.

Per-spawn values live only in the params file under ``_workflow/reviews/``; the prompt
names nothing but that file's path, so a fan-out shares its whole prompt prefix.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pipeline.agents.roles import RoleDef, instructions_for, load_prompt
from pipeline.errors import WiringError
from pipeline.formats.spawn_params import SpawnParams
from pipeline.formats.textio import atomic_write
from pipeline.settings import data_dir, load_toml


@cache
def _schemas() -> dict[str, Any]:
    roles = load_toml(data_dir("params") / "spawn.toml").get("roles", {})
    assert isinstance(roles, dict)
    return roles


def validate_params(role: RoleDef, params: SpawnParams) -> None:
    """Refuse a params file that breaks the role's schema or the cold-read rule."""
    if params.role != role.name:
        raise WiringError(f"params for role {params.role} handed to {role.name}")
    schema = _schemas().get(role.name, {"required": [], "forbidden": []})
    present = params.present()
    missing = [k for k in schema.get("required", []) if k not in present]
    extra = [k for k in schema.get("forbidden", []) if k in present]
    if role.cold and "research_log_path" in present:
        extra.append("research_log_path")
    if missing or extra:
        raise WiringError(
            f"params for {role.name} break its schema: missing {missing}, forbidden {sorted(set(extra))}",
            hint="a cold role's params never name the research log (S1/S2)",
        )


@dataclass(frozen=True, slots=True)
class Spawn:
    role: RoleDef
    params: SpawnParams
    params_path: Path
    instructions: str
    prompt: str


PARAMS_TOKEN = "@params"
"""What the spawn prompt names as the params file: the Read tool hands each spawn its own, so
the prompt is byte-identical across every spawn and names nothing of the run."""


def params_path_for(reviews_dir: Path, params: SpawnParams, index: int | None = None) -> Path:
    """A params file is addressed by (folder, round, role, slice). A run's folder is its own
    (``_workflow/reviews/<run-id>/``); the file's content names nothing of the run, so the same
    inputs give the same requests. The prompt names the file only as ``@params``."""
    suffix = f"-s{index}" if index is not None else ""
    return reviews_dir / f"r{params.round}-{params.role}{suffix}.json"


def review_output_path(reviews_dir: Path, round_: int, role: str) -> Path:
    """Where a read-only role's review is written on its behalf (the phase-4 output_path): one
    folder per kind, so it names nothing of the run (its params, and so its requests, stay the
    same for the same inputs) and the latest phase-4 run's review is the one there."""
    return reviews_dir / "phase4-creation" / f"r{round_}-{role}.md"


def write_params(path: Path, params: SpawnParams) -> None:
    atomic_write(path, json.dumps(params.model_dump(exclude_none=True), indent=2, ensure_ascii=False) + "\n")


def prepare(
    role: RoleDef, params: SpawnParams, reviews_dir: Path, repo_root: Path, index: int | None = None
) -> Spawn:
    """Validate and write the params file; build the instructions and the spawn prompt."""
    validate_params(role, params)
    path = params_path_for(reviews_dir, params, index)
    write_params(path, params)
    prompt = load_prompt("spawn.md", repo_root).replace("{params_path}", PARAMS_TOKEN)
    return Spawn(role, params, path, instructions_for(role, repo_root), prompt)


def prefix_share(texts: list[str]) -> float:
    """The share of each fan-out prompt that is a byte-identical common prefix (1.0 = identical)."""
    if not texts:
        return 1.0
    encoded = [t.encode() for t in texts]
    first = encoded[0]
    common = len(first)
    for other in encoded[1:]:
        limit = min(common, len(other))
        i = 0
        while i < limit and first[i] == other[i]:
            i += 1
        common = i
    mean = sum(len(t) for t in encoded) / len(encoded)
    return common / mean if mean else 1.0
