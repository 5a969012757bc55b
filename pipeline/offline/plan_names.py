"""Section names the plan already points at: a phase-1 author keeps them.

When an implementation plan or track files exist, their ``**Full design:** design.md §"…"``
references must keep resolving. The offline author names the body section of the decision
each reference is about with the referenced name; a reference no decision matches is left
for the mechanical check to report.
"""

from __future__ import annotations

import re
from pathlib import Path

from pipeline.formats.plan import parse_plan_file
from pipeline.formats.research_log import Decision
from pipeline.formats.spawn_params import SpawnParams
from pipeline.formats.textio import decode
from pipeline.offline.observe import Observations, Unreadable, required
from pipeline.offline.pages import failed, read_whole
from pipeline.offline.text import containment, content_words

MATCH = 0.6
TRACK_RE = re.compile(r"track-[\w-]+\.md$")


def referenced_sections(params: SpawnParams, obs: Observations, design_name: str = "design.md") -> list[str]:
    """The design sections the plan and the track files reference, in order, once each."""
    paths: list[str] = [required(params.plan_path, "plan_path")] if params.plan_path else []
    if params.plan_dir:
        base = required(params.plan_dir, "plan_dir").rstrip("/")
        listing = obs.call("read", path=base)
        names = sorted(n for n in listing.splitlines() if TRACK_RE.match(n)) if not failed(listing) else []
        paths += [f"{base}/{n}" for n in names]
    obs.call_many([("read", {"path": p}) for p in paths])  # every first page in one turn
    texts: list[tuple[str, str]] = []
    for path in paths:
        try:  # read whole, page by page: a reference past the first page still counts
            texts.append((Path(path).name, read_whole(obs, path)))
        except Unreadable:
            continue  # a plan it cannot read names no section; the mechanical check reports it
    found: list[str] = []
    for name, text in texts:
        plan = parse_plan_file(decode(text.encode("utf-8"), Path(name)))
        for ref in plan.refs:
            if ref.file and Path(ref.file).name == design_name and ref.section and ref.section not in found:
                found.append(ref.section)
    return found


def section_names(decisions: list[Decision], wanted: list[str]) -> dict[int, str]:
    """Decision number -> the referenced name its section takes (each name used once)."""
    chosen: dict[int, str] = {}
    for name in wanted:
        words = content_words(name)
        if not words:
            continue
        scored = [
            (containment(words, content_words(f"{d.title} {d.value('Decision') or ''}")), d.number)
            for d in decisions
            if d.number not in chosen
        ]
        best = max(scored, default=(0.0, 0))
        if best[0] >= MATCH:
            chosen[best[1]] = name
    return chosen
