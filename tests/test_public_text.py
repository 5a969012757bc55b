"""The offline engine on public text nobody here wrote: each class of wrong finding seen on
documents and research logs from other projects, as a test.

The documents are byte-for-byte copies in tests/corpus/real (their licences are in
tests/corpus/real/LICENSES and README.md); the short excerpts quoted inline come from the
documents named beside them. The research logs under tests/corpus/real/logs are written
from public ADR sets and carry their sources' licences (manifest.toml).
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from agentkit import runtime

from pipeline.agents.review import review_once
from pipeline.formats.design_dir import DesignDir, open_design_dir
from pipeline.formats.findings import Finding, merge
from pipeline.formats.prose import parse_prose
from pipeline.formats.research_log import load_research_log
from pipeline.formats.slices import partition
from pipeline.offline import acronyms, comprehension
from pipeline.offline.text import doc_from_text, keywords, known_acronyms, sentence_spans
from pipeline.settings import Limits

REAL = Path(__file__).parent / "corpus" / "real"
ROOT = Path(__file__).parent.parent
INSTRUCTIONS = (ROOT / "prompts" / "known-terms.md").read_text(encoding="utf-8")


def repo(tmp: Path, doc: str | None = None, text: str | None = None, log: str | None = None) -> DesignDir:
    root = tmp / "repo"
    (root / ".git").mkdir(parents=True)
    target = root / "docs" / "adr" / "real" / "_workflow"
    target.mkdir(parents=True)
    if doc is not None:
        shutil.copy(REAL / doc, target / "design.md")
    if text is not None:
        (target / "design.md").write_text(text, encoding="utf-8")
    if log is not None:
        shutil.copy(REAL / "logs" / log / "research-log.md", target / "research-log.md")
    return open_design_dir(target.parent)


def review(d: DesignDir, role: str, limits: Limits | None = None) -> list[Finding]:
    run = asyncio.run(review_once(runtime(d), role, d, limits or Limits()))
    assert all(r.status == "ok" for r in run.results), [r.error for r in run.results]
    return [f for r in run.results if r.review for f in r.review.findings]


def comprehension_of(text: str) -> list[Finding]:
    doc = doc_from_text(text)
    view = parse_prose(text, doc.lines)
    return comprehension.review(doc, view, known_acronyms(INSTRUCTIONS), keywords(INSTRUCTIONS))


# 1. False acronym definitions ---------------------------------------------------------------


def test_a_run_of_capitalised_words_across_punctuation_defines_no_acronym() -> None:
    assert "DI" not in acronyms.definitions("Detailed Design: Interop")
    assert "OM" not in acronyms.definitions("the collector (Otel) More detail follows")
    assert "LSP" in acronyms.definitions("integration with the Language Server Protocol")
    # So an acronym used early and "spelled" by a later heading is never defined, not
    # "defined only later": a suggestion, not a should-fix.
    text = "# T\n\n## Overview\n\nThe DI layer loads first.\n\n## Detailed Design: Interop\n\nIt loads.\n"
    found = comprehension_of(text)
    assert [f.severity for f in found if f.rule == "cr-term-order"] == ["suggestion"]


# 2. Definitions missed ------------------------------------------------------------------------


def test_a_plain_definition_is_a_definition_and_a_later_bold_restatement_is_not(tmp_path: Path) -> None:
    # Electron's preload-realm RFC: "A preload realm is an isolated JavaScript context ..."
    # (line 41), restated in bold as "A **preload realm** is an isolated `v8::Context`" (179).
    d = repo(tmp_path, "electron-0008-preload-realm.md")
    assert not [f for f in review(d, "comprehension-review") if f.quote == "preload realm"]
    text = "# T\n\nIntro.\n\n## Use\n\nA cache is a store of rows kept near the reader.\n\n## Cache\n\nA **cache** is a store.\n"
    assert not [f for f in comprehension_of(text) if f.rule == "cr-term-order"]


def test_a_section_reference_lands_on_a_heading_with_a_subtitle() -> None:
    # Found on the held-out set (Swift's Observation proposal) after it was measured:
    # "see the SDK Impact section below" names "## SDK Impact (a preview of SwiftUI interaction)".
    text = (
        "# T\n\n## Overview\n\nIntro.\n\n## Design\n\n**TL;DR:** It works.\n\n"
        "For more detail, see the Cache Impact section below.\n\n"
        "## Cache Impact (a preview of the eviction)\n\n**TL;DR:** Rows leave.\n\nRows leave the cache.\n"
    )
    assert not [f for f in comprehension_of(text) if f.rule == "cr-dangling-ref"]
    assert [f for f in comprehension_of(text.replace("Cache Impact section", "Cache Budget section"))]


# 3. Sentence splitting ------------------------------------------------------------------------


def _sentences(text: str) -> list[str]:
    return [text[a:b] for a, b in sentence_spans(text)]


def test_sentence_ends_the_engine_used_to_miss() -> None:
    assert _sentences("apples, pears, etc. The next one is here.") == [
        "apples, pears, etc.",
        "The next one is here.",
    ]
    assert _sentences("such as logs, traces etc. and more.") == ["such as logs, traces etc. and more."]
    assert _sentences("It works![^1] Next it stops.") == ["It works!", "Next it stops."]
    # Electron's window-state RFC: a bold label on its own line, and a sentence whose full
    # stop is missing before "There are some tricks".
    assert _sentences(
        "**Calculate new bounds:**\nThis step checks with overflow\nThere are some tricks."
    ) == [
        "**Calculate new bounds:**",
        "This step checks with overflow",
        "There are some tricks.",
    ]
    assert len(_sentences("It stays with the\nThere value.")) == 1  # "the" leaves the line open


@pytest.mark.parametrize(
    ("doc", "line"),
    [
        ("go-25530-sumdb.md", 466),  # "... should be.\nA top-level module's ..."
        ("go-57001-gotoolchain.md", 103),  # "... the `go.mod`.\nIf we accidentally ..."
        ("electron-0016-save-restore-window-state.md", 175),  # "**Calculate new bounds:**"
    ],
)
def test_two_sentences_are_never_one_over_long_sentence(tmp_path: Path, doc: str, line: int) -> None:
    found = review(repo(tmp_path, doc), "readability-auditor")
    assert not [f for f in found if f.rule == "hs-sentence-length" and f.line == line and f.blocking]


# 4. Results that depend on the slice ----------------------------------------------------------


def _comparable(found: list[Finding]) -> set[tuple[object, ...]]:
    return {
        (f.rule, f.severity, f.line, f.quote, re.sub(r" \(also on .*\)$", "", f.message))
        for f in merge(found)
    }


@pytest.mark.parametrize("doc", ["go-25530-sumdb.md", "grpc-a6-client-retries.md"])
def test_a_finding_never_depends_on_where_the_slice_boundary_fell(tmp_path: Path, doc: str) -> None:
    lines = (REAL / doc).read_text(encoding="utf-8").split("\n")
    windows = [200, 150, 110]
    assert len({tuple(partition(lines, w)) for w in windows}) == 3  # three different partitions
    results = [
        _comparable(review(repo(tmp_path / str(w), doc), "readability-auditor", Limits(window=w)))
        for w in windows
    ]
    assert results[0] and results[0] == results[1] == results[2]


def test_a_reference_link_is_a_link_whatever_slice_holds_its_definition() -> None:
    text = "A sentence names [the first proposal][p1] and [the second one][p2] here.\n"
    block = parse_prose(text).blocks[0]
    assert len(block.links) == 2 and "p1" not in block.prose  # the labels are not words


# 5. Alerts, value names and the document's own subject ---------------------------------------


def test_alerts_value_names_and_the_subject_are_not_findings(tmp_path: Path) -> None:
    # "> [!NOTE]" (Electron window-state RFC), "an HTTP/2 PING frame" (gRPC channelz),
    # "transition to state READY" (gRPC health checking), "preload realm" as the subject of
    # Electron's preload-realm RFC (AI-tell "realm" in any other document).
    for doc, quote in [
        ("electron-0016-save-restore-window-state.md", "NOTE"),
        ("grpc-a14-channelz.md", "PING"),
        ("grpc-a17-client-side-health-checking.md", "READY"),
    ]:
        d = repo(tmp_path / quote, doc)
        found = review(d, "comprehension-review") + review(d, "readability-auditor")
        assert not [f for f in found if quote in (f.quote or "") or f"{quote} (" in f.message], (doc, quote)
    d = repo(tmp_path / "realm", "electron-0008-preload-realm.md")
    assert not [f for f in review(d, "readability-auditor") if f.rule == "hs-ai-tell"]


# 6-8. Research logs written from public ADR sets ---------------------------------------------


def _logs() -> list[str]:
    data = tomllib.loads((REAL / "manifest.toml").read_text(encoding="utf-8"))
    return [entry["name"] for entry in data["log"] if entry["set"] != "held-out"]


def create(d: DesignDir, runs: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "create", str(d.root), "--json", "--runs-dir", str(runs)],
        cwd=d.repo_root,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.stdout.strip().startswith("{"), done.stderr[-2000:]
    data: dict[str, object] = json.loads(done.stdout)
    return data


@pytest.mark.slow
@pytest.mark.parametrize("log", _logs())
def test_a_research_log_converges_with_every_field_and_name_intact(tmp_path: Path, log: str) -> None:
    d = repo(tmp_path, log=log)
    data = create(d, tmp_path / "runs")
    assert data["outcome"] == "PASS", data
    design = d.design.read_text(encoding="utf-8")
    flat = " ".join(design.split())
    records = {r.source: r for r in doc_from_text(design).d_records()}
    for decision in load_research_log(d.research_log).decisions:
        record = records[decision.number]  # every decision has its record
        for name, field in decision.fields.items():
            # Every field, Consequences and Status included, in the log's own words.
            assert " ".join(field.value.split()) in flat, (decision.id, name)
            assert " ".join(record.fields[name].value.split()) == " ".join(field.value.split())
        for token in (decision.value("Decision") or "").split():
            assert token in record.fields["Decision"].value.split(), (decision.id, token)
    assert "`GOV`" not in design and "`UK`" not in design


@pytest.mark.slow
def test_the_author_never_wraps_a_name_in_code(tmp_path: Path) -> None:
    # GOV.UK's AWS ADRs: "GOV.UK" stays whole (it was once written "`GOV`.`UK`"), and the run
    # says what of the seed's shape it left out, and why.
    d = repo(tmp_path, log="govuk-aws-architecture-decisions")
    data = create(d, tmp_path / "runs")
    assert data["outcome"] == "PASS" and data["rounds"] == 1
    design = d.design.read_text(encoding="utf-8")
    assert "GOV.UK runs on a hosting provider it wants to leave." in design
    assert "**Decision:** GOV.UK moves to AWS as its hosting provider" in design
    notes = data["notes"]
    assert isinstance(notes, list) and any("Left out Class Design and Workflow" in str(n) for n in notes)


# 9. Code larger than a slice ------------------------------------------------------------------


def test_an_appendix_fence_larger_than_a_slice_is_never_cut_or_read_as_prose(tmp_path: Path) -> None:
    head = (REAL / "grpc-a17-client-side-health-checking.md").read_text(encoding="utf-8").split("\n")[:120]
    fence = [
        "## API appendix",
        "",
        "```",
        *[f"The method {i} returns the STATUS of the RPC call." for i in range(420)],
        "```",
    ]
    lines = [*head, "", *fence, "", "The end of the appendix."]
    parts = partition(lines)
    first = lines.index("## API appendix") + 3  # the fence's opening line (1-based)
    assert lines[first - 1] == "```" and len(parts) == 3
    assert all(not first < start <= first + 421 for start, _ in parts)
    d = repo(tmp_path, text="\n".join(lines) + "\n")
    found = review(d, "readability-auditor") + review(d, "comprehension-review")
    assert not [f for f in found if f.line is not None and first <= f.line <= first + 421]
