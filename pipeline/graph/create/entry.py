"""What a creation run's review-log entry says: exactly what ran and what changed.

The diff summary names the sections added, removed and changed against the document as it
was before the run; phase 4 names the sources it actually had; the mechanical and cold-read
lines say SKIPPED or INCONCLUSIVE where a review did not happen, never PASS.
"""

from __future__ import annotations

from pipeline.formats.design_dir import DesignDir
from pipeline.formats.design_doc import DesignDoc, load_design, parse_design
from pipeline.formats.findings import blocking
from pipeline.formats.kinds import PHASE1
from pipeline.formats.plan import load_tracks
from pipeline.formats.research_log import load_research_log
from pipeline.formats.textio import TextFile, decode
from pipeline.graph.create.state import RunState
from pipeline.graph.deps import RunDeps
from pipeline.grounding.psi import build_index

MAX_SUGGESTIONS = 10


def _names(doc: DesignDoc) -> dict[str, str]:
    """Each ``#``/``##`` section's name and text (the stamp line is not content)."""
    return {s.name: doc.text_of(s) for s in doc.sections}


def _list(names: list[str]) -> str:
    return ", ".join(f'§"{n}"' for n in names)


def section_changes(before: TextFile | None, after: DesignDoc) -> str:
    """``added §"A"; removed §"B"; changed §"C"; 2 unchanged`` against the earlier text."""
    now = _names(after)
    if before is None:
        body = [s.name for s in after.sections if s.level == 2]
        return f"sections {_list(body)}" if body else "no sections"
    then = _names(parse_design(before))
    added = [n for n in now if n not in then]
    removed = [n for n in then if n not in now]
    changed = [n for n in now if n in then and now[n] != then[n]]
    unchanged = len(now) - len(added) - len(changed)
    parts = []
    if added:
        parts.append(f"added {_list(added)}")
    if removed:
        parts.append(f"removed {_list(removed)}")
    if changed:
        parts.append(f"changed {_list(changed)}")
    if not parts:
        return "no section changed"
    return "; ".join(parts) + (f"; {unchanged} unchanged" if unchanged else "")


def phase4_sources(d: DesignDir) -> str:
    """The sources phase 4 actually had: the frozen design, the track episodes, the code."""
    tracks = load_tracks(d.plan_dir) if d.plan_dir.is_dir() else []
    episodes = sum(len(t.episodes) for t in tracks)
    if episodes:
        with_episodes = sum(1 for t in tracks if t.episodes)
        track_text = f"{episodes} episode(s) in {with_episodes} track file(s)"
    else:
        track_text = "no track episodes"
    index = build_index(d.repo_root, d.code_root)
    where = d.rel(d.code_root) or "."
    code_text = f"the code under {where} ({index.describe_sources()})"
    return f"the frozen design, {track_text} and {code_text}"


def diff_summary(state: RunState, d: DesignDir, before: TextFile | None) -> str:
    path = d.abs(state.draft)
    if state.author is None or not state.author.draft_ok:
        left = "the earlier file was left as it was" if before is not None else "nothing was written"
        return f"The author wrote no {path.name} over {state.round} round(s); {left}."
    doc = load_design(path)
    verb = "Created" if before is None else "Rewrote"
    if state.kind == PHASE1:
        log = load_research_log(d.research_log)
        source = f"the research log ({len(log.decisions)} decisions, {len(log.load_bearing())} load-bearing)"
    else:
        source = phase4_sources(d)
    return (
        f"{verb} {path.name} from {source}: {section_changes(before, doc)}; "
        f"{len(doc.lines)} lines, {len(doc.d_records())} decision record(s), over {state.round} round(s)."
    )


def mechanical_line(state: RunState) -> str:
    if state.author is None or not state.author.draft_ok:
        return "SKIPPED — no draft to check"
    return "PASS" if not state.mechanical else f"{len(state.mechanical)} findings"


def cold_read_line(state: RunState) -> str:
    """The cold read (readability auditor and comprehension gate) on the final draft."""
    if state.author is None or not state.author.draft_ok:
        return "SKIPPED — no draft to read"
    evaluation = state.this_round_evaluation()
    if evaluation is None:
        return "SKIPPED — the final draft did not pass the mechanical checks"
    parts: list[str] = []
    readers = [n for n in evaluation.inconclusive if n.startswith("readability-auditor")]
    count = len(blocking(evaluation.auditor))
    if readers:
        parts.append("readability INCONCLUSIVE (" + ", ".join(readers) + ")")
    elif count:
        parts.append(f"readability {count} findings")
    comprehension = state.this_round_comprehension()
    if comprehension is None:
        parts.append("comprehension gate not reached")
    elif comprehension.status != "ok":
        parts.append("comprehension INCONCLUSIVE")
    elif blocking(comprehension.findings):
        parts.append(f"comprehension {len(blocking(comprehension.findings))} findings")
    if not parts:
        return "PASS"
    return "; ".join(parts)


def suggestions(state: RunState) -> list[str]:
    """The final round's suggestions: recorded, never retried (the seed's Step 6)."""
    found = []
    evaluation = state.this_round_evaluation()
    if evaluation is not None:
        found += [f for f in evaluation.auditor + evaluation.second if f.severity == "suggestion"]
    comprehension = state.this_round_comprehension()
    if comprehension is not None:
        found += [f for f in comprehension.findings if f.severity == "suggestion"]
    found += [f for f in state.mechanical if f.severity == "suggestion"]
    items = [f"suggestion: {f.describe()}" for f in found[:MAX_SUGGESTIONS]]
    if len(found) > MAX_SUGGESTIONS:
        items.append(f"suggestion: {len(found) - MAX_SUGGESTIONS} more in the run's summary")
    return items


def read_before(deps: RunDeps, draft: str) -> TextFile | None:
    """The draft as it was before the run (its before-snapshot), when there was one."""
    data = deps.before(deps.abs(draft))
    return decode(data, deps.abs(draft)) if data is not None else None
