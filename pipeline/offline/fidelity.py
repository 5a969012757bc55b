"""The offline fidelity check (phase 4): the final design against the episodes and the code.

Never reads the research log: its inputs are the draft, the track files' Episodes, the
frozen phase-1 design (for what an episode supersedes) and the code through PSI.
"""

from __future__ import annotations

import re
from typing import Any

from pipeline.formats.plan import Entry, parse_plan_file
from pipeline.formats.textio import decode
from pipeline.offline import supersede
from pipeline.offline.driver import Observations
from pipeline.offline.logtext import records
from pipeline.offline.text import (
    antonym_conflict,
    clean,
    code_spans,
    content_words,
    doc_from_text,
    jaccard,
    numbers,
    paragraphs,
    review_finding,
    sentences,
    verdict_of,
)

IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\(\))?$")
PATH_RE = re.compile(r"^[\w.\-]+(?:/[\w.\-]+)*/?$")
SOURCE_EXT = (".py", ".md", ".toml", ".json", ".yaml", ".yml", ".txt", ".cfg", ".ini", ".sql", ".lua", ".sh")


def _finding(
    rule: str,
    section: str | None,
    quote: str | None,
    message: str,
    fix: str,
    severity: str = "should-fix",
    line: int | None = None,
) -> dict[str, Any]:
    finding = review_finding(rule, message, fix, severity=severity, section=section, quote=quote)
    if line is not None:
        finding["line"] = line
    return finding


def looks_like_symbol(span: str) -> bool:
    if not IDENT_RE.match(span):
        return False
    bare = span.removesuffix("()")
    return (
        "." in bare
        or "_" in bare.strip("_")
        or span.endswith("()")
        or (any(c.isupper() for c in bare[1:]) and any(c.islower() for c in bare))
    )


def looks_like_path(span: str) -> bool:
    return (
        bool(PATH_RE.match(span)) and ("/" in span or span.endswith(SOURCE_EXT)) and not span.startswith("/")
    )


def _episodes(obs: Observations, episodes_path: str) -> list[tuple[str, Entry]]:
    listing = obs.call("read", path=episodes_path)
    if listing.startswith(("refused:", "error:")):
        return []
    names = sorted(n for n in listing.splitlines() if re.match(r"track-[\w-]+\.md$", n))
    base = episodes_path.rstrip("/")
    texts = obs.call_many([("read", {"path": f"{base}/{n}"}) for n in names])
    out: list[tuple[str, Entry]] = []
    for name, text in zip(names, texts, strict=True):
        if text.startswith(("refused:", "error:")):
            continue
        from pathlib import Path

        plan = parse_plan_file(decode(text.encode("utf-8"), Path(name)))
        out.extend((name, e) for e in plan.episodes)
    return out


def run(params: dict[str, Any], obs: Observations) -> dict[str, Any]:
    draft_text = obs.call("read", path=params["draft_path"])
    if draft_text.startswith(("refused:", "error:")):
        raise RuntimeError(draft_text)
    draft = doc_from_text(draft_text, "design-final.md")
    findings: list[dict[str, Any]] = []
    # 1-2. Every named symbol and path exists in the code.
    symbols: dict[str, tuple[int, str | None]] = {}
    paths: dict[str, tuple[int, str | None]] = {}
    for number, line in draft.prose_lines():
        for span in code_spans(line):
            if looks_like_path(span) and not looks_like_symbol(span):
                paths.setdefault(span, (number, draft.section_name_at(number)))
            elif looks_like_symbol(span):
                symbols.setdefault(span, (number, draft.section_name_at(number)))
    sources = obs.call("psi", query="", kind="sources")
    if sources.startswith("no source file"):
        # Without code PSI can read, every symbol would look missing: say what was not checked.
        if symbols or paths:
            first, (at, section) = min([*symbols.items(), *paths.items()], key=lambda item: item[1][0])
            findings.append(
                _finding(
                    "fid-code-unchecked",
                    section,
                    first,
                    f"{len(symbols)} symbol(s) and {len(paths)} path(s) the design names could not be "
                    f"checked against the code: PSI found {sources}",
                    "point the run at the code: --code-root DIR, or code_root in the design "
                    "directory's designloop.toml",
                    severity="suggestion",
                    line=at,
                )
            )
    else:
        findings += _code_findings(obs, symbols, paths)
    # 3-4. Episodes win over the frozen design.
    episodes = _episodes(obs, params["episodes_path"])
    frozen_text = obs.call("read", path=params["design_path"])
    frozen = doc_from_text(frozen_text) if not frozen_text.startswith(("refused:", "error:")) else None
    findings += superseded(draft_text, frozen_text if frozen else "", episodes)
    findings += contradicted(draft_text, episodes)
    return verdict_of(findings)


def _code_findings(
    obs: Observations,
    symbols: dict[str, tuple[int, str | None]],
    paths: dict[str, tuple[int, str | None]],
) -> list[dict[str, Any]]:
    """Every named symbol and path exists in the code."""
    findings: list[dict[str, Any]] = []
    sym_names = sorted(symbols)
    answers = obs.call_many([("psi", {"query": s, "kind": "definition"}) for s in sym_names])
    missing = [s for s, a in zip(sym_names, answers, strict=True) if a.startswith("no definition")]
    as_files = obs.call_many(
        [("psi", {"query": s.removesuffix("()").replace(".", "/") + ".py", "kind": "file"}) for s in missing]
    )
    for span, answer in zip(missing, as_files, strict=True):
        if not answer.startswith("no file"):
            continue
        at, section = symbols[span]
        findings.append(
            _finding(
                "fid-missing-symbol",
                section,
                span,
                f"`{span}` (line {at}) is not defined anywhere in the code",
                "name the symbol the code actually has, or drop the claim",
                line=at,
            )
        )
    path_names = sorted(paths)
    path_answers = obs.call_many([("psi", {"query": p, "kind": "file"}) for p in path_names])
    for span, answer in zip(path_names, path_answers, strict=True):
        if answer.startswith("no file"):
            at, section = paths[span]
            findings.append(
                _finding(
                    "fid-missing-path",
                    section,
                    span,
                    f"`{span}` (line {at}) does not exist",
                    "name the file as it is in the repository",
                    line=at,
                )
            )
    return findings


def superseded(draft_text: str, frozen_text: str, episodes: list[tuple[str, Entry]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if not frozen_text:
        return out
    draft = doc_from_text(draft_text)
    for item in supersede.find(doc_from_text(frozen_text), episodes):
        where = f"{item.track} '{item.episode.title}'"
        for rec in records(draft):
            if item.reasserts(f"{rec.title}. {rec.decision}"):
                out.append(
                    _finding(
                        "fid-superseded",
                        "Decision Records",
                        f"D{rec.number}: {rec.title}",
                        f"D{rec.number} re-asserts D{item.number}, which {where} supersedes",
                        "describe what the episode says replaced it",
                    )
                )
        for section in draft.body_sections():
            body = " ".join(clean(t) for _, t in draft.prose_lines(section.start + 1, section.end))
            if item.reasserts(f"{section.name}. {body}"):
                out.append(
                    _finding(
                        "fid-superseded",
                        section.name,
                        body[:100],
                        f'section "{section.name}" still states D{item.number}, which {where} supersedes',
                        "rewrite the section to describe what the episode says replaced it",
                    )
                )
    return out


def contradicted(draft_text: str, episodes: list[tuple[str, Entry]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    draft = doc_from_text(draft_text)
    episode_sentences = [(track, e, s) for track, e in episodes for s in sentences(clean(e.body))]
    for para in paragraphs(draft):
        section = draft.section_name_at(para.start)
        for sentence in sentences(para.text):
            words = content_words(sentence)
            if len(words) < 4:
                continue
            for track, episode, other in episode_sentences:
                other_words = content_words(other)
                if jaccard(words, other_words) < 0.45:
                    continue
                conflict = antonym_conflict(sentence, other)
                nums_a, nums_b = numbers(sentence), numbers(other)
                if conflict:
                    reason = f"it says '{conflict[0]}' where the episode says '{conflict[1]}'"
                elif nums_a and nums_b and nums_a != nums_b and not (nums_a & nums_b):
                    said, recorded = ", ".join(sorted(nums_a)), ", ".join(sorted(nums_b))
                    reason = f"it says {said} where the episode says {recorded}"
                else:
                    continue
                out.append(
                    _finding(
                        "fid-contradicted",
                        section,
                        sentence[:100],
                        f"{track} '{episode.title}' contradicts this: {reason}",
                        "state what was built, as the episode records it",
                    )
                )
                break
    return out
