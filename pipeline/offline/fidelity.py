"""The offline fidelity check (phase 4): the final design against the episodes and the code.

Never reads the research log: its inputs are the draft, the track files' Episodes, the
frozen phase-1 design (for what an episode supersedes) and the code through PSI.
"""

from __future__ import annotations

import re
from pathlib import Path

from pipeline.formats.contracts import ReviewOutput
from pipeline.formats.design_doc import DECISION_RECORDS, DesignDoc
from pipeline.formats.findings import Finding, Severity
from pipeline.formats.plan import Entry, parse_plan_file
from pipeline.formats.prose import ProseView, parse_prose
from pipeline.formats.spawn_params import SpawnParams
from pipeline.formats.textio import decode
from pipeline.grounding.mentions import PATH_RE, SOURCE_EXT, looks_like_symbol
from pipeline.offline import supersede
from pipeline.offline.deadline import checkpoint
from pipeline.offline.logtext import records
from pipeline.offline.observe import Observations, required
from pipeline.offline.pages import failed, read_whole
from pipeline.offline.text import (
    antonym_conflict,
    clean,
    content_words,
    doc_from_text,
    jaccard,
    lexicon,
    numbers,
    review_finding,
    sentence_spans,
    sentences,
)

AS_BUILT = "As built"


def _finding(
    rule: str,
    section: str | None,
    at: tuple[int, str] | None,
    message: str,
    fix: str,
    severity: Severity = "should-fix",
) -> Finding:
    line, quote = at if at else (None, None)
    return review_finding(rule, message, fix, severity=severity, section=section, line=line, quote=quote)


def names_a_file(span: str) -> bool:
    """A name whose last dotted part is a file extension (``deploy.sh``, ``README.md``,
    ``terraform.tfvars``) names a file, not a member of a module or class."""
    stem, dot, ext = span.rpartition(".")
    return bool(dot and stem and ext.lower() in lexicon().file_extensions)


PATTERN_RE = re.compile(r"[*?<>{}\[\]]|(?<![A-Za-z])([A-Z])\1{2,}(?![a-z])")
"""A file pattern or a placeholder: a glob character, or one capital letter three times or more
(NNNN, YYYY)."""


def names_a_value(span: str) -> bool:
    """A pattern (``NNNN-adr-title.md``, ``*.tfvars``) or a host name (``govuk.digital``,
    ``gov.uk``): text the design quotes, not a name the code defines."""
    parts = span.lower().split(".")
    host = (
        len(parts) >= 2
        and parts[-1] in lexicon().host_suffixes
        and all(re.fullmatch(r"[a-z0-9-]+", p) for p in parts)
    )
    return host or bool(PATTERN_RE.search(span))


def looks_like_path(span: str) -> bool:
    return (
        bool(PATH_RE.match(span))
        and ("/" in span or span.endswith(SOURCE_EXT) or names_a_file(span))
        and not span.startswith("/")
    )


def _episodes(obs: Observations, episodes_path: str) -> list[tuple[str, Entry]]:
    listing = obs.call("read", path=episodes_path)
    if failed(listing):
        return []
    names = sorted(n for n in listing.splitlines() if re.match(r"track-[\w-]+\.md$", n))
    base = episodes_path.rstrip("/")
    out: list[tuple[str, Entry]] = []
    for name in names:
        text = read_whole(obs, f"{base}/{name}")
        plan = parse_plan_file(decode(text.encode("utf-8"), Path(name)))
        out.extend((name, e) for e in plan.episodes)
    return out


def run(params: SpawnParams, obs: Observations) -> ReviewOutput:
    draft_text = read_whole(obs, required(params.draft_path, "draft_path"))
    draft = doc_from_text(draft_text, "design-final.md")
    view = parse_prose(draft_text, draft.lines)
    findings: list[Finding] = []
    # 1-2. Every named symbol and path exists in the code.
    symbols: dict[str, tuple[int, str | None]] = {}
    paths: dict[str, tuple[int, str | None]] = {}
    for block in view.blocks:
        checkpoint()
        for start, end in block.code:
            span = block.text[start:end].strip()
            line = block.line_at(start)
            if names_a_value(span):
                continue
            if looks_like_path(span) and (names_a_file(span) or not looks_like_symbol(span)):
                paths.setdefault(span, (line, view.section_at(line)))
            elif looks_like_symbol(span):
                symbols.setdefault(span, (line, view.section_at(line)))
    sources = obs.call("psi", query="", kind="sources")
    if sources.startswith("no source file"):
        # Without code PSI can read, every symbol would look missing: say what was not checked.
        if symbols or paths:
            first, (at, section) = min([*symbols.items(), *paths.items()], key=lambda item: item[1][0])
            findings.append(
                _finding(
                    "fid-code-unchecked",
                    section,
                    (at, first),
                    f"{len(symbols)} symbol(s) and {len(paths)} path(s) the design names could not be "
                    f"checked against the code: PSI found {sources}",
                    "point the run at the code: --code-root DIR, or code_root in the design "
                    "directory's designloop.toml",
                    severity="suggestion",
                )
            )
    else:
        findings += _code_findings(obs, symbols, paths)
    # 3-4. Episodes win over the frozen design.
    episodes = _episodes(obs, required(params.episodes_path, "episodes_path"))
    frozen_text = obs.call("read", path=required(params.design_path, "design_path"))
    frozen = (
        ""
        if frozen_text.startswith(("refused:", "error:"))
        else read_whole(obs, required(params.design_path, "design_path"))
    )
    findings += superseded(draft, view, frozen, episodes)
    findings += contradicted(view, episodes)
    return ReviewOutput.of(findings)


def _code_findings(
    obs: Observations,
    symbols: dict[str, tuple[int, str | None]],
    paths: dict[str, tuple[int, str | None]],
) -> list[Finding]:
    """Every named symbol and path exists in the code."""
    findings: list[Finding] = []
    sym_names = sorted(symbols)
    answers = obs.call_many([("psi", {"query": s, "kind": "definition"}) for s in sym_names])
    undefined = [s for s, a in zip(sym_names, answers, strict=True) if a.startswith("no definition")]
    # A name the code uses without defining it (a value in a string literal, a key of a
    # configuration file) is in the code too: only a name it never mentions is missing.
    used = obs.call_many([("psi", {"query": s, "kind": "references"}) for s in undefined])
    missing = [s for s, a in zip(undefined, used, strict=True) if a.startswith("no references")]
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
                (at, span),
                f"`{span}` is not defined anywhere in the code",
                "name the symbol the code actually has, or drop the claim",
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
                    (at, span),
                    f"`{span}` does not exist",
                    "name the file as it is in the repository",
                )
            )
    return findings


def superseded(
    draft: DesignDoc, view: ProseView, frozen_text: str, episodes: list[tuple[str, Entry]]
) -> list[Finding]:
    """Records, sections and paragraphs that still state what an episode supersedes, however
    the words are inflected or hyphenated (supersede.Supersession.reasserts)."""
    out: list[Finding] = []
    if not frozen_text:
        return out
    container = draft.find(DECISION_RECORDS)
    skip = {s.name for s in draft.sections if s.name in (DECISION_RECORDS, AS_BUILT)}
    for item in supersede.find(doc_from_text(frozen_text), episodes):
        where = f"{item.track} '{item.episode.title}'"
        for rec in records(draft):
            if item.reasserts(f"{rec.title}. {rec.decision}"):
                line = rec.line
                out.append(
                    _finding(
                        "fid-superseded",
                        DECISION_RECORDS,
                        (line, draft.lines[line - 1].lstrip("#").strip()),
                        f"D{rec.number} re-asserts D{item.number}, which {where} supersedes",
                        "describe what the episode says replaced it",
                    )
                )
        flagged: set[str] = set()
        for section in draft.level2():
            if section.name in skip:
                continue
            blocks = view.paragraphs(section.start + 1, section.end)
            body = " ".join(b.prose for b in blocks)
            if blocks and item.reasserts(f"{section.name}. {body}"):
                flagged.add(section.name)
                out.append(
                    _finding(
                        "fid-superseded",
                        section.name,
                        (section.start, draft.lines[section.start - 1].lstrip("#").strip()),
                        f'section "{section.name}" still states D{item.number}, which {where} supersedes',
                        "rewrite the section to describe what the episode says replaced it",
                    )
                )
        for block in view.paragraphs():
            name = view.section_at(block.start)
            if name in skip or name in flagged or (container and block.start >= container.start):
                continue
            if item.reasserts(block.prose):
                flagged.add(name or "")
                out.append(
                    _finding(
                        "fid-superseded",
                        name,
                        (block.start, block.quote(0, len(block.text))),
                        f"this still states D{item.number}, which {where} supersedes",
                        "rewrite it to describe what the episode says replaced it",
                    )
                )
    return out


def contradicted(view: ProseView, episodes: list[tuple[str, Entry]]) -> list[Finding]:
    out: list[Finding] = []
    episode_sentences = [
        (track, e, s, content_words(s)) for track, e in episodes for s in sentences(clean(e.body))
    ]
    index: dict[str, list[int]] = {}
    for number, (_, _, _, other_words) in enumerate(episode_sentences):
        for word in other_words:
            index.setdefault(word, []).append(number)
    for block in view.paragraphs():
        section = view.section_at(block.start)
        for start, end in sentence_spans(block.prose):
            sentence = block.prose[start:end]
            words = content_words(sentence)
            if len(words) < 4:
                continue
            candidates = sorted({n for w in words for n in index.get(w, ())})
            for track, episode, other, other_words in (episode_sentences[n] for n in candidates):
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
                        (block.line_at(start), block.quote(start, end)),
                        f"{track} '{episode.title}' contradicts this: {reason}",
                        "state what was built, as the episode records it",
                    )
                )
                break
    return out
