"""The offline distillation for design-sync: design.md follows the companion's changes.

For each section the companion changed since the last sync, the passages design.md shares
with it (the overview, its sentences in the TL;DR, the edge-case items) take the new wording:
a sentence or item replaced in the companion is replaced in design.md, a deleted one is
deleted, and a new one placed next to a shared neighbour is inserted there. A section added to
the companion gets a design.md section (TL;DR, overview, edge cases, footer); a removed one is
removed; a renamed one is renamed with its footer. A change only in long-form content leaves
design.md as it is. A passage design.md words differently is left for judgement.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

from pipeline.formats.contracts import AuthorOutput
from pipeline.formats.design_doc import OVERVIEW
from pipeline.formats.edits import add_section, find_section, join, parse, remove_section, rename_section
from pipeline.formats.findings import Finding
from pipeline.formats.refs import footer_line, rename_in_design
from pipeline.formats.spawn_params import SpawnParams
from pipeline.formats.sync_delta import SectionDelta, design_view, mechanics_sections, view_changed
from pipeline.offline.edit_io import read, write_edits
from pipeline.offline.observe import Observations, required
from pipeline.offline.text import sentences

DOC = Path("design.md")
ITEM_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


def units(lines: list[str]) -> list[str]:
    """Sentences of paragraphs and whole list items, whitespace collapsed."""
    out: list[str] = []
    paragraph: list[str] = []
    for line in [*lines, ""]:
        if ITEM_RE.match(line):
            if paragraph:
                out += sentences(" ".join(paragraph))
                paragraph = []
            out.append(" ".join(line.split()))
        elif line.strip():
            paragraph.append(line.strip())
        elif paragraph:
            out += sentences(" ".join(paragraph))
            paragraph = []
    return out


def _pattern(unit: str) -> re.Pattern[str]:
    words = ITEM_RE.sub("", unit).split()
    return re.compile(r"\s+".join(re.escape(w) for w in words))


def _section_span(text: str, name: str) -> tuple[int, int] | None:
    doc = parse(text, DOC)
    found = find_section(doc, name)
    if found is None:
        return None
    lines = doc.lines
    start = sum(len(line) + 1 for line in lines[: found.start])
    stop = sum(len(line) + 1 for line in lines[: found.end])
    return start, min(stop, len(text))


def _sub(text: str, name: str, old: str, new: str) -> tuple[str, bool]:
    span = _section_span(text, name)
    if span is None or not old.strip():
        return text, False
    body = text[span[0] : span[1]]
    match = _pattern(old).search(body)
    if match is None:
        return text, False
    replacement = ITEM_RE.sub("", new) if ITEM_RE.match(old) else new
    body = body[: match.start()] + replacement + body[match.end() :]
    if not replacement:
        body = re.sub(r"(?m)^[ \t]*(?:[-*+]|\d+[.)])[ \t]*\n", "", body)
        body = re.sub(r"(?<=\S)  +(?=\S)", " ", body)
    return text[: span[0]] + body + text[span[1] :], True


def follow(text: str, name: str, old_view: list[str], new_view: list[str]) -> tuple[str, bool]:
    """Carry the unit-level changes of one section's view into design.md's section."""
    a, b = units(old_view), units(new_view)
    changed = False
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    for tag, i1, i2, j1, j2 in reversed(ops):
        if tag == "equal":
            continue
        if tag in ("replace", "delete"):
            new = " ".join(b[j1:j2]) if tag == "replace" else ""
            text, done = _sub(text, name, " ".join(a[i1:i2]), new)
            if not done and tag == "replace" and i2 - i1 == j2 - j1:
                for k in range(i2 - i1):
                    text, one = _sub(text, name, a[i1 + k], b[j1 + k])
                    done = done or one
            changed = changed or done
        elif tag == "insert" and i1 > 0:
            anchor = a[i1 - 1]
            added = b[j1:j2]
            if ITEM_RE.match(anchor):
                joined = anchor + "".join("\n" + item for item in added)
            else:
                joined = " ".join([anchor, *added])
            text, done = _sub(text, name, anchor, joined)
            changed = changed or done
    return text, changed


def new_section(name: str, body: str) -> list[str]:
    view = design_view(name, body, DOC)
    first = units(view)[:1]
    tldr = ITEM_RE.sub("", first[0]) if first else name
    return [f"**TL;DR:** {tldr}", "", *view, "", footer_line("design-mechanics.md", name)]


def distill(
    design: str, mechanics: str, baseline: str, flagged: list[Finding]
) -> tuple[str, list[str], list[str]]:
    """design.md after following each flagged delta; (text, done, left for judgement)."""
    old, new = mechanics_sections(baseline, DOC), mechanics_sections(mechanics, DOC)
    order = list(new)
    done: list[str] = []
    left: list[str] = []
    for finding in flagged:
        rule, name = finding.rule, str(finding.section or "")
        before = design
        if rule == "sync-renamed":
            old_name = str(finding.quote or "")
            doc = parse(design, DOC)
            if find_section(doc, old_name) is not None and find_section(doc, name) is None:
                design = rename_section(design, DOC, old_name, name)
                design = rename_in_design(design, DOC, old_name, name)[0]
        elif rule == "sync-removed":
            if name != OVERVIEW and find_section(parse(design, DOC), name) is not None:
                design = remove_section(design, DOC, name)
        elif rule == "sync-added":
            if find_section(parse(design, DOC), name) is None:
                index = order.index(name) if name in order else -1
                after = next(
                    (p for p in reversed(order[:index]) if find_section(parse(design, DOC), p) is not None),
                    None,
                )
                design = add_section(design, DOC, name, new_section(name, new.get(name, "")), after)
        elif rule == "sync-changed":
            old_name = str(finding.quote or name)
            delta = SectionDelta("changed", name, None, old.get(old_name, ""), new.get(name, ""))
            if view_changed(delta, DOC):
                design, _ = follow(
                    design, name, design_view(name, delta.old, DOC), design_view(name, delta.new, DOC)
                )
            else:
                done.append(f'§"{name}": only long-form content changed; design.md needs no change')
                continue
        (done if design != before else left).append(f'{rule} §"{name}"')
    return join(design.split("\n")), done, left


def run(params: SpawnParams, obs: Observations) -> AuthorOutput:
    output = required(params.output_path, "output_path")
    flagged = [f for f in params.flagged_passages or [] if f.rule.startswith("sync-")]
    design = read(obs, output)
    mechanics = read(obs, required(params.design_mechanics_path, "design_mechanics_path"))
    baseline_path = next((f.suggested_fix for f in flagged if f.suggested_fix), None)
    baseline = read(obs, baseline_path) if baseline_path else ""
    text, done, left = distill(design, mechanics, baseline, flagged)
    write_edits(obs, output, design, text)
    summary = f"Distilled {len(done)} companion change(s) into design.md"
    if left:
        summary += f"; {len(left)} need judgement: " + "; ".join(left)
    return AuthorOutput(summary=summary + ".", output_path=output)
