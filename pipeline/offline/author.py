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
from dataclasses import dataclass

from pipeline.formats.contracts import AuthorOutput
from pipeline.formats.findings import Finding
from pipeline.formats.prose import parse_prose
from pipeline.formats.research_log import Decision, ResearchLog
from pipeline.formats.spawn_params import SpawnParams
from pipeline.offline import companion, fixer, fixing, grounding, names, plan_names
from pipeline.offline.final import compile_phase4
from pipeline.offline.logtext import log_from_text
from pipeline.offline.observe import Observations, required
from pipeline.offline.pages import failed, read_whole
from pipeline.offline.text import (
    doc_from_text,
    keywords,
    known_acronyms,
    lexicon,
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


def _preface(log: ResearchLog) -> list[str]:
    """The log's text between its title and its first section."""
    heads = log.structure.headings
    title = next((h for h in heads if h.level == 1), None)
    first = next((h for h in heads if h.level == 2), None)
    start = title.line if title is not None else 0
    end = first.line - 1 if first is not None else len(log.structure.lines)
    return log.structure.lines[start:end]


def _overview(log: ResearchLog, has_findings: bool) -> list[str]:
    """The Overview's opening: the log's Problem, else the first of its other overview-like
    sections (Context, Background, Motivation ...: params/offline.toml ``overview_names``),
    else its preface (the text before its first section), in the log's words; with none of
    these and no Findings, one sentence naming what the design decides, so the Overview is
    never empty."""
    names = ["Problem", *(n for n in lexicon().overview_names if n.lower() != "problem")]
    for source in [*(_section_text(log, n) for n in names), _preface(log)]:
        paragraphs = [p for p in _paragraphs(source) if not p.startswith("#")]
        if paragraphs:
            return [line for para in paragraphs for line in (*_wrap(para), "")]
    if has_findings or not log.decisions:
        return []
    titles = "; ".join(_flat(d.title) for d in log.decisions)
    return [*_wrap(f"This design records {len(log.decisions)} decisions: {titles}."), ""]


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


def _flat(text: str) -> str:
    return " ".join(text.split())


WIDTH = 100
ATOM_RE = re.compile(r"`[^`]*`\S*|\"[^\"]*\"\S*|“[^”]*”\S*|\S+")
"""What a line is never broken inside: a word, a code span, a quotation."""


def _wrap(text: str, first: str = "", rest: str = "") -> list[str]:
    """``text`` as lines of at most WIDTH columns, broken only between words (never inside a
    code span or a quotation), the first line led by ``first``, the others by ``rest``."""
    lines: list[str] = []
    line = ""
    for atom in ATOM_RE.findall(_flat(text)):
        if not line:
            line = (rest if lines else first) + atom
        elif len(line) + 1 + len(atom) > WIDTH:
            lines.append(line)
            line = rest + atom
        else:
            line += " " + atom
    return [*lines, line] if line else lines


def record_lines(decision: Decision) -> list[str]:
    """A design decision record absorbing one research-log decision: every field the log
    carries, in the log's order and in the log's words, then its Source."""
    lines = [f"### D{decision.number}: {decision.title}"]
    lines += [f"**{name}:** {_flat(field.value)}" for name, field in decision.fields.items() if field.value]
    return [*lines, f"**Source:** research-log D{decision.number}", ""]


def _sentence(text: str) -> str:
    text = _flat(text)
    return text if text.endswith((".", "!", "?")) else text + "."


BODY_FIELDS = ("Decision", "Rationale", "Alternatives rejected")


def _other_fields(decision: Decision) -> list[tuple[str, str]]:
    """Fields beyond Decision, Rationale and Alternatives rejected (Consequences, Status ...)."""
    return [(n, f.value) for n, f in decision.fields.items() if n not in BODY_FIELDS and f.value]


def _body(decision: Decision, grounded: list[grounding.Grounded]) -> list[str]:
    out: list[str] = []
    rationale = decision.value("Rationale")
    if rationale:
        out += [*_wrap(_sentence(rationale)), ""]
    alternatives = decision.value("Alternatives rejected")
    if alternatives:
        out += [*_wrap(f"Rejected alternatives: {_sentence(alternatives)}"), ""]
    for name, value in _other_fields(decision):
        out += [*_wrap(f"{name}: {_sentence(value)}"), ""]
    named = [g for g in grounded if decision.number in g.decisions]
    if named:
        places = ", and ".join(f"`{g.name}` is defined in `{g.where.split(':')[0]}`" for g in named)
        out += [f"In the code, {places}.", ""]
    return out


def _convention(decision: Decision) -> list[str]:
    parts = [_sentence(decision.value("Decision") or decision.title)]
    why = decision.value("Rationale")
    if why:
        parts.append(_sentence(why))
    parts += [f"{name}: {_sentence(value)}" for name, value in _other_fields(decision)]
    return _wrap(f"**{_sentence(decision.title)}** " + " ".join(parts), "- ", "  ")


@dataclass(slots=True)
class Compiled:
    text: str
    notes: list[str]


def compile_design(log_text: str, obs: Observations, wanted: list[str] | None = None) -> Compiled:
    """Phase 1: the seed's shape from the research log, in the log's own words: Overview,
    Core Concepts, Class Design and Workflow (what PSI finds for the names the decisions use),
    one TL;DR'd section per load-bearing decision, Conventions, and a record per decision.
    The draft is then read with the comprehension reviewer's rules and what they would
    report of the author's own making (an acronym defined only after its first use, a TL;DR
    its body never discusses) is fixed before it is written."""
    log = log_from_text(log_text)
    title_line = next((h.text for h in log.structure.headings if h.level == 1), "Design")
    title = TITLE_PREFIX_RE.sub("", title_line).strip() or "Design"
    if fixing.PLAIN_WORD_RE.match(title):  # a plain first word takes a capital; a name never does
        title = title[:1].upper() + title[1:]
    out = [f"# {title}", "", "## Overview", ""]
    findings = _list_items(_section_text(log, "Findings"))
    out += _overview(log, bool(findings))
    if findings:
        out += ["The design rests on these findings:", ""]
        out += [line for f in findings for line in _wrap(f, "- ", "  ")] + [""]
    glossary = [m for line in _section_text(log, "Glossary") if (m := GLOSSARY_ITEM_RE.match(line))]
    if len(glossary) >= 3:
        out += ["## Core Concepts", ""]
        for m in glossary:
            out += _wrap(f"**{m.group('term').strip()}**: {m.group('text').strip()}", "- ", "  ")
        out += [""]
    notes: list[str] = []
    grounded = grounding.ground(log.decisions, obs)
    if grounded:
        out += grounding.class_design(grounded) + grounding.workflow(grounded)
    if not grounded:
        notes.append(
            "Left out Class Design and Workflow: PSI found none of the code names the decisions use."
        )
    elif not any(g.uses for g in grounded):
        notes.append("Left out Workflow: PSI found no use of the code names the decisions use.")
    bearing = log.load_bearing()
    names = plan_names.section_names(bearing, wanted or [])
    for decision in bearing:
        out += [
            f"## {names.get(decision.number, decision.title)}",
            "",
            f"**TL;DR:** {_sentence(decision.value('Decision') or decision.title)}",
            "",
            *_body(decision, grounded),
        ]
    others = [d for d in log.decisions if not d.load_bearing]
    if others:
        titles = "; ".join(_flat(d.title) for d in others)
        out += [
            "## Conventions",
            "",
            f"**TL;DR:** Smaller choices with no rejected alternative: {titles}.",
            "",
        ]
        out += [line for d in others for line in _convention(d)] + [""]
    if log.decisions:
        out += ["## Decision Records", ""]
        for decision in log.decisions:
            out += record_lines(decision)
    text = "\n".join(out).rstrip() + "\n"
    text = _self_review(text, obs.instructions)
    _check_names(log, text)
    return Compiled(text, notes)


def compile_phase1(log_text: str, obs: Observations, wanted: list[str] | None = None) -> str:
    return compile_design(log_text, obs, wanted).text


def _self_review(text: str, instructions: str) -> str:
    """Fix what the comprehension reviewer would report of the author's own making."""
    from pipeline.offline import comprehension

    doc = doc_from_text(text)
    view = parse_prose(text, doc.lines)
    found = comprehension.review(doc, view, known_acronyms(instructions), keywords(instructions))
    mine = [f for f in found if f.severity != "suggestion" and f.rule in SELF_FIXED]
    return fixer.apply(text, mine, instructions)[0] if mine else text


SELF_FIXED = frozenset({"cr-term-order", "cr-tldr-mismatch"})


class DamagedText(RuntimeError):
    """The author's output lost a name, an acronym, code or a quotation of its inputs."""


def _check_names(log: ResearchLog, text: str) -> None:
    """Every protected token of the log's decisions stands in the design byte for byte."""
    wanted = names.protected("\n".join(f.value for d in log.decisions for f in d.fields.values()))
    gone = names.missing(wanted, text)
    if gone:
        raise DamagedText(f"the design lost text of the log's decisions: {', '.join(gone[:10])}")


def _write(obs: Observations, path: str, text: str) -> None:
    result = obs.call("write", path=path, content=text)
    if failed(result):
        raise RuntimeError(result)


def _names(finding: Finding, path: str | None) -> bool:
    """Whether ``finding`` is about the file at ``path``; either may be repository-relative
    or absolute, and neither need be normalised."""
    where = finding.file
    if not where or not path:
        return False
    a, b = os.path.normpath(str(where)), os.path.normpath(str(path))
    return a == b or a.endswith(os.sep + b) or b.endswith(os.sep + a)


def _fix_companion(params: SpawnParams, obs: Observations, flagged: list[Finding]) -> tuple[int, int]:
    """Apply the fixes flagged in the companion (the author writes it at target=both)."""
    companion = params.design_mechanics_path
    if not flagged or params.target != "both" or not companion:
        return 0, len(flagged)
    current = read_whole(obs, companion)
    text, fixed, left = guarded_apply(current, flagged, obs.instructions)
    if text != current:
        _write(obs, companion, text)
    return fixed, left


def run(params: SpawnParams, obs: Observations) -> AuthorOutput:
    output = required(params.output_path, "output_path")
    flagged = params.flagged_passages or []
    if params.round > 1 and flagged:
        current = obs.call("read", path=output)
        if not failed(current):
            current = read_whole(obs, output)
            elsewhere = [f for f in flagged if _names(f, params.design_mechanics_path)]
            mine = [f for f in flagged if not _names(f, params.design_mechanics_path)]
            extra = [f for f in mine if f.rule == "abs-missing-record"]
            text, fixed, left = guarded_apply(current, mine, obs.instructions)
            if extra and params.research_log_path:
                text, added = seed_records(
                    text, read_whole(obs, required(params.research_log_path, "research_log_path")), extra
                )
                fixed, left = fixed + added, left - added
            fixed_there, left_there = _fix_companion(params, obs, elsewhere)
            fixed, left = fixed + fixed_there, left + left_there
            _write(obs, output, text)
            return AuthorOutput(
                summary=f"Round {params.round}: fixed {fixed} flagged passage(s), left {left} that "
                "need judgement.",
                output_path=output,
            )
    if params.kind == "phase4-creation":
        frozen = read_whole(obs, required(params.design_path, "design_path"))
        text = compile_phase4(frozen, obs, required(params.episodes_path, "episodes_path"))
        summary = "Compiled the final design from the frozen design, the track episodes and the code."
    else:
        log_text = read_whole(obs, required(params.research_log_path, "research_log_path"))
        compiled = compile_design(log_text, obs, plan_names.referenced_sections(params, obs))
        text = compiled.text
        summary = " ".join(
            ["Compiled the design from the research log's decisions, grounded in the code.", *compiled.notes]
        )
    text = companion.author_companion(params, obs, text)
    _write(obs, output, text)
    return AuthorOutput(summary=summary, output_path=output)


def guarded_apply(text: str, flagged: list[Finding], instructions: str) -> tuple[str, int, int]:
    """The fixer's edits, less any that would alter a name, an acronym, code or a quotation
    (names.lost): such a finding is left, counted with those that need judgement."""
    new, fixed, left = fixer.apply(text, flagged, instructions)
    if not names.lost(text, new):
        return new, fixed, left
    # The mechanical fixes delete what the contract forbids (a "(per D6)" aside, a stray
    # stamp, a link into the plan); every other fix is checked on its own.
    safe = [
        f
        for f in flagged
        if f.rule.startswith("dsc-") or not names.lost(text, fixer.apply(text, [f], instructions)[0])
    ]
    new, fixed, left = fixer.apply(text, safe, instructions)
    return new, fixed, left + len(flagged) - len(safe)


def seed_records(text: str, log_text: str, flagged: list[Finding]) -> tuple[str, int]:
    """Add a decision record for each load-bearing log decision the absorption check missed."""
    if failed(log_text):
        return text, 0
    log = log_from_text(log_text)
    wanted = []
    for finding in flagged:
        match = re.match(r"D(\d+)$", str(finding.section or ""))
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
