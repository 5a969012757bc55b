"""One role, once, on a design directory, with the params it would get in round 1."""

from __future__ import annotations

import asyncio
import datetime as dt
import shutil
from dataclasses import dataclass
from pathlib import Path

from pipeline.agents.inputs import round1_spawns
from pipeline.agents.runtime import RoleResult, Runtime
from pipeline.agents.spawn import prefix_share
from pipeline.errors import InputError
from pipeline.formats.anchor import anchor_in_file
from pipeline.formats.contracts import ReviewOutput
from pipeline.formats.design_dir import DesignDir
from pipeline.formats.research_log_edits import append_gate_entry
from pipeline.formats.review_file import write_review_file
from pipeline.formats.slices import Slice
from pipeline.formats.spawn_params import SpawnParams
from pipeline.settings import Limits

REVIEW_DIR = "review"


@dataclass(frozen=True, slots=True)
class ReviewRun:
    results: list[RoleResult]
    prefix_share: float
    gate_entry: str | None = None


async def review_once(
    runtime: Runtime,
    role: str,
    d: DesignDir,
    limits: Limits,
    draft: Path | None = None,
    slice_: Slice | None = None,
    keep_params: bool = True,
) -> ReviewRun:
    """Run ``role`` once. Without ``keep_params`` the params files (and a phase-4 review file)
    are removed afterwards, so the design directory is left as it was; the adversarial
    review's gate entry in the research log is its product and stays."""
    if role not in runtime.roles:
        raise InputError(f"unknown role {role!r}", hint=f"roles: {', '.join(sorted(runtime.roles))}")
    scratch = d.reviews / REVIEW_DIR  # a one-off review's params never overwrite a run's
    # What the review reads and writes around its spawns, it does in a thread, off the event loop.
    reviews_existed, params = await asyncio.to_thread(_params, runtime, role, d, limits, draft, slice_)
    try:
        results, texts = [], []
        for index, item in enumerate(params):
            result = await runtime.spawn(item, d, index if len(params) > 1 else None, scratch)
            reviewed = item.target_path or item.draft_path or item.design_path or item.research_log_path
            if result.review is not None and reviewed is not None:
                # Anchoring reads the reviewed file: in a thread, off the event loop.
                findings = await asyncio.to_thread(anchor_in_file, result.review.findings, d.abs(reviewed))
                result.output = result.review.model_copy(update={"findings": findings})
            results.append(result)
            texts.append(result.first_request)
        review, output = results[0].review, params[0].output_path
        entry = await asyncio.to_thread(_record, role, d, review, output, keep_params)
    finally:
        if not keep_params:
            await asyncio.to_thread(_clear, d, scratch, reviews_existed)
    return ReviewRun(results, prefix_share(texts), entry)


def _params(
    runtime: Runtime, role: str, d: DesignDir, limits: Limits, draft: Path | None, slice_: Slice | None
) -> tuple[bool, list[SpawnParams]]:
    """Whether the reviews folder existed, and the role's round-1 params."""
    existed = d.reviews.exists()
    scratch = d.reviews / REVIEW_DIR
    params = [
        # The review file written on a read-only role's behalf goes to the scratch folder too.
        p.model_copy(update={"output_path": d.rel(scratch / Path(p.output_path).name)})
        if p.output_path and not runtime.roles[role].writes
        else p
        for p in round1_spawns(role, d, limits, draft, slice_)
    ]
    return existed, params


def _record(
    role: str, d: DesignDir, review: ReviewOutput | None, output: str | None, keep: bool
) -> str | None:
    """What a review leaves: the adversarial review's gate entry in the research log (returned),
    the comprehension review's review file."""
    entry = None
    if role == "adversarial-review" and review is not None:
        entry = append_gate_entry(d.research_log, dt.date.today(), review)
    if role == "comprehension-review" and output and review is not None and keep:
        write_review_file(d.abs(output), review)
    return entry


def _clear(d: DesignDir, scratch: Path, reviews_existed: bool) -> None:
    """The one-off review's params files, and the reviews folder it made."""
    shutil.rmtree(scratch, ignore_errors=True)
    if not reviews_existed and d.reviews.is_dir() and not any(d.reviews.iterdir()):
        d.reviews.rmdir()
