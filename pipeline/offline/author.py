"""The offline design author: compiles the document, then fixes what rules can fix.

Phase 1 compiles design.md from the research log (grounding named code through PSI);
phase 4 compiles design-final.md from the frozen design, the track episodes and the code,
dropping what the episodes mark superseded. Later rounds apply the deterministic fixes of
``fixer`` to the flagged passages and leave the rest. The document is written through the
Write tool to output_path; the role returns only a thin summary.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from pipeline.formats.plan import Entry, parse_plan_file
from pipeline.formats.research_log import Decision, ResearchLog
from pipeline.formats.textio import decode
from pipeline.offline import companion, fixer, plan_names, supersede
from pipeline.offline.fidelity import looks_like_symbol
from pipeline.offline.logtext import log_from_text
from pipeline.offline.observe import Observations
from pipeline.offline.pages import failed, read_whole
from pipeline.offline.text import (
    clean,
    code_spans,
    defined_acronyms,
    doc_from_text,
    keywords,
    known_acronyms,
    sentences,
)

TITLE_PREFIX_RE = re.compile(r"^(?:research log|research)\s*[:—-]\s*", re.IGNORECASE)
GLOSSARY_ITEM_RE = re.compile(r"^\s*[-*]\s+\*\*(?P<term>[^*]+)\*\*\s*[:—-]\s*(?P<text>.+)$")


def _section_text(log: ResearchLog, name: str) -> list[str]:
    lines = log.structure.lines
    heads = log.structure.headings
    for index, head in enumerate(heads):
        if head.level == 2 and head.text.strip().lower() == name.lower():
            end = len(lines)
            for later in heads[index + 1 :]:
                if later.level <= 2:
                    end = later.line - 1
                    break
            return [line for line in lines[head.line : end]]
    return []


def _paragraphs(lines: list[str]) -> list[str]:
    out: list[str] = []
    current: list[str] = []
    for line in [*lines, ""]:
        if line.strip():
            current.append(line.strip())
        elif current:
            out.append(" ".join(current))
            current = []
    return out


def _list_items(lines: list[str]) -> list[str]:
    """Bullet items with their continuation lines joined, list markers removed."""
    items: list[str] = []
    for line in lines:
        stripped = line.strip()
        if stripped.startswith(("- ", "* ")):
            items.append(stripped[2:].strip())
        elif stripped and items and line.startswith((" ", "\t")):
            items[-1] += " " + stripped
    return items


def code_unknown_caps(text: str, known: frozenset[str]) -> str:
    """Put undefined all-capitals words (command and constant names) in code spans."""
    defined = defined_acronyms(text)

    def wrap(line: str) -> str:
        parts = re.split(r"(`[^`]*`)", line)
        for i in range(0, len(parts), 2):
            parts[i] = re.sub(
                r"(?<![\w`-])([A-Z][A-Z0-9_]*[A-Z0-9])(?![\w`-])",
                lambda m: m.group(0) if m.group(1) in known or m.group(1) in defined else f"`{m.group(1)}`",
                parts[i],
            )
        return "".join(parts)

    return "\n".join(line if line.startswith("#") else wrap(line) for line in text.split("\n"))


def record_lines(decision: Decision) -> list[str]:
    """A design decision record absorbing one research-log decision, with its Source."""
    lines = [f"### D{decision.number}: {decision.title}"]
    for name in ("Decision", "Alternatives rejected", "Rationale"):
        value = decision.value(name)
        if value:
            lines.append(f"**{name}:** {' '.join(value.split())}")
    return [*lines, f"**Source:** research-log D{decision.number}", ""]


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text if text.endswith((".", "!", "?")) else text + "."


def _grounding(decision: Decision, obs: Observations) -> list[str]:
    names: list[str] = []
    for field in ("Decision", "Rationale"):
        for span in code_spans(decision.value(field) or ""):
            if looks_like_symbol(span) or re.fullmatch(r"[A-Z][A-Za-z0-9]+", span):
                names.append(span)
    names = sorted(set(names))
    if not names or not obs.has_tool("psi"):
        return []
    answers = obs.call_many([("psi", {"query": n, "kind": "definition"}) for n in names])
    found = []
    for name, answer in zip(names, answers, strict=True):
        if answer.startswith("no definition"):
            continue
        where = answer.splitlines()[0].rsplit(" at ", 1)[-1].split(":")[0]
        found.append(f"`{name}` is defined in `{where}`")
    return [f"In the code, {', and '.join(found)}."] if found else []


def compile_phase1(log_text: str, obs: Observations, wanted: list[str] | None = None) -> str:
    log = log_from_text(log_text)
    title_line = next((h.text for h in log.structure.headings if h.level == 1), "Design")
    title = TITLE_PREFIX_RE.sub("", title_line).strip()
    title = title[:1].upper() + title[1:]
    out = [f"# {title}", "", "## Overview", ""]
    problem = _paragraphs(_section_text(log, "Problem"))
    out += [p for para in problem for p in (para, "")]
    findings = _list_items(_section_text(log, "Findings"))
    if findings:
        out += ["The design rests on these findings:", ""] + [f"- {f}" for f in findings] + [""]
    glossary = [m for line in _section_text(log, "Glossary") if (m := GLOSSARY_ITEM_RE.match(line))]
    if len(glossary) >= 3:
        out += ["## Core Concepts", ""]
        out += [f"- **{m.group('term').strip()}**: {m.group('text').strip()}" for m in glossary] + [""]
    bearing = log.load_bearing()
    names = plan_names.section_names(bearing, wanted or [])
    for decision in bearing:
        out += [
            f"## {names.get(decision.number, decision.title)}",
            "",
            f"**TL;DR:** {_sentence(decision.value('Decision') or decision.title)}",
            "",
        ]
        rationale = decision.value("Rationale")
        if rationale:
            out += [_sentence(rationale), ""]
        alternatives = decision.value("Alternatives rejected")
        if alternatives:
            out += [f"Rejected alternatives: {_sentence(alternatives)}", ""]
        grounding = _grounding(decision, obs)
        out += [g for line in grounding for g in (line, "")]
    others = [d for d in log.decisions if not d.load_bearing]
    if others:
        titles = "; ".join(d.title[:1].lower() + d.title[1:] for d in others)
        out += [
            "## Conventions",
            "",
            f"**TL;DR:** Smaller choices with no rejected alternative: {titles}.",
            "",
        ]
        for decision in others:
            text = _sentence(decision.value("Decision") or decision.title)
            why = decision.value("Rationale")
            out.append(f"- **{decision.title}.** {text}" + (f" {_sentence(why)}" if why else ""))
        out.append("")
    if bearing:
        out += ["## Decision Records", ""]
        for decision in bearing:
            out += record_lines(decision)
    text = "\n".join(out).rstrip() + "\n"
    return code_unknown_caps(text, known_acronyms(obs.instructions) | keywords(obs.instructions))


def _episodes(obs: Observations, episodes_path: str) -> list[tuple[str, str, Entry]]:
    listing = obs.call("read", path=episodes_path)
    if failed(listing):
        return []
    names = sorted(n for n in listing.splitlines() if re.match(r"track-[\w-]+\.md$", n))
    base = episodes_path.rstrip("/")
    out = []
    for name in names:
        text = read_whole(obs, f"{base}/{name}")
        plan = parse_plan_file(decode(text.encode("utf-8"), Path(name)))
        title = next((h.text for h in plan.structure.headings if h.level == 1), name)
        out += [(name, title, e) for e in plan.episodes]
    return out


def _flat(text: str) -> str:
    return " ".join(text.split())


def compile_phase4(frozen_text: str, obs: Observations, episodes_path: str) -> str:
    episodes = _episodes(obs, episodes_path)
    lines = [line for line in frozen_text.split("\n") if not line.startswith("<!-- workflow-sha:")]
    lines = [line for line in lines if not line.strip().startswith("**Mechanics:**")]
    found = supersede.find(doc_from_text("\n".join(lines)), [(title, e) for _, title, e in episodes])
    for item in found:
        # Body sections that still state the superseded decision take the episode's account.
        doc = doc_from_text("\n".join(lines))
        for section in doc.body_sections():
            body = " ".join(clean(t) for _, t in doc.prose_lines(section.start + 1, section.end))
            if item.reasserts(f"{section.name}. {body}"):
                lines[section.start - 1 : section.end] = [
                    f"## {section.name}",
                    "",
                    f"**TL;DR:** {item.now()}",
                    "",
                    " ".join(item.story),
                    "",
                ]
                break
        doc = doc_from_text("\n".join(lines))
        container = doc.find("Decision Records")
        recs = doc.d_records()
        for index, record in enumerate(recs):
            if record.number != item.number:
                continue
            stop = (
                recs[index + 1].line - 1
                if index + 1 < len(recs)
                else (container.end if container else len(lines))
            )
            label = item.episode.title.split(":", 1)
            lines[record.line - 1 : stop] = [
                f"### D{item.number}: {label[-1].strip()}",
                f"**Decision:** {item.now()}",
                f"**Alternatives rejected:** {item.old.title}, which {item.track} superseded.",
                f"**Rationale:** {item.why()}",
                f"**Source:** {item.track}, {label[0].strip()}",
                "",
            ]
            break
    built = ["## As built", "", "**TL;DR:** What the tracks delivered, as their episodes record it.", ""]
    for _name, title, episode in episodes:
        body = supersede.FULL_DESIGN_RE.sub("", episode.body)
        first = sentences(_flat(body))
        built.append(f"- **{title}, {episode.title}.** {first[0] if first else ''}".rstrip())
    doc = doc_from_text("\n".join(lines))
    container = doc.find("Decision Records")
    at = container.start - 1 if container else len(lines)
    if episodes:
        lines[at:at] = [*built, ""]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip() + "\n"


def _write(obs: Observations, path: str, text: str) -> None:
    result = obs.call("write", path=path, content=text)
    if failed(result):
        raise RuntimeError(result)


def _names(finding: dict[str, Any], path: str | None) -> bool:
    """Whether ``finding`` is about the file at ``path``; either may be repository-relative
    or absolute, and neither need be normalised."""
    where = finding.get("file")
    if not where or not path:
        return False
    a, b = os.path.normpath(str(where)), os.path.normpath(str(path))
    return a == b or a.endswith(os.sep + b) or b.endswith(os.sep + a)


def _fix_companion(
    params: dict[str, Any], obs: Observations, flagged: list[dict[str, Any]]
) -> tuple[int, int]:
    """Apply the fixes flagged in the companion (the author writes it at target=both)."""
    companion = params.get("design_mechanics_path")
    if not flagged or params.get("target") != "both" or not companion:
        return 0, len(flagged)
    current = read_whole(obs, companion)
    text, fixed, left = fixer.apply(current, flagged, obs.instructions)
    if text != current:
        _write(obs, companion, text)
    return fixed, left


def run(params: dict[str, Any], obs: Observations) -> dict[str, Any]:
    output = params["output_path"]
    flagged = params.get("flagged_passages") or []
    if int(params.get("round", 1)) > 1 and flagged:
        current = obs.call("read", path=output)
        if not failed(current):
            current = read_whole(obs, output)
            elsewhere = [f for f in flagged if _names(f, params.get("design_mechanics_path"))]
            mine = [f for f in flagged if not _names(f, params.get("design_mechanics_path"))]
            extra = [f for f in mine if f.get("rule") == "abs-missing-record"]
            text, fixed, left = fixer.apply(current, mine, obs.instructions)
            if extra and params.get("research_log_path"):
                text, added = seed_records(text, read_whole(obs, params["research_log_path"]), extra)
                fixed, left = fixed + added, left - added
            fixed_there, left_there = _fix_companion(params, obs, elsewhere)
            fixed, left = fixed + fixed_there, left + left_there
            _write(obs, output, text)
            return {
                "summary": f"Round {params.get('round')}: fixed {fixed} flagged passage(s), left {left} that "
                "need judgement.",
                "output_path": output,
            }
    if params.get("kind") == "phase4-creation":
        frozen = read_whole(obs, params["design_path"])
        text = compile_phase4(frozen, obs, params["episodes_path"])
        summary = "Compiled the final design from the frozen design, the track episodes and the code."
    else:
        log_text = read_whole(obs, params["research_log_path"])
        text = compile_phase1(log_text, obs, plan_names.referenced_sections(params, obs))
        summary = "Compiled the design from the research log's decisions, grounded in the code."
    text = companion.author_companion(params, obs, text)
    _write(obs, output, text)
    return {"summary": summary, "output_path": output}


def seed_records(text: str, log_text: str, flagged: list[dict[str, Any]]) -> tuple[str, int]:
    """Add a decision record for each load-bearing log decision the absorption check missed."""
    if failed(log_text):
        return text, 0
    log = log_from_text(log_text)
    wanted = []
    for finding in flagged:
        match = re.match(r"D(\d+)$", str(finding.get("section") or ""))
        decision = log.decision(int(match.group(1))) if match else None
        if decision is not None:
            wanted.append(decision)
    if not wanted:
        return text, 0
    block: list[str] = []
    for decision in wanted:
        block += record_lines(decision)
    lines = text.rstrip("\n").split("\n")
    if doc_from_text(text).find("Decision Records") is None:
        lines += ["", "## Decision Records"]
    lines += ["", *block]
    return "\n".join(lines).rstrip() + "\n", len(wanted)
