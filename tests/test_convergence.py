"""Convergence: the offline author's fix for each of the comprehension reviewer's rules clears
that rule on the next round, and a generated research log with a resolved gate and no
contradictions ends PASS within the budget, every field and name intact."""

from __future__ import annotations

import shutil
from pathlib import Path

from graphkit import go, start
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pipeline.formats.design_dir import open_design_dir
from pipeline.formats.findings import Finding
from pipeline.formats.prose import parse_prose
from pipeline.formats.research_log import load_research_log
from pipeline.offline import comprehension
from pipeline.offline.author import guarded_apply
from pipeline.offline.text import doc_from_text, keywords, known_acronyms

ROOT = Path(__file__).parent.parent
KNOWN = (ROOT / "prompts" / "known-terms.md").read_text(encoding="utf-8")
STYLE = (ROOT / "prompts" / "house-style.md").read_text(encoding="utf-8") + "\n" + KNOWN


def blocking(text: str) -> list[Finding]:
    doc = doc_from_text(text)
    found = comprehension.review(doc, parse_prose(text, doc.lines), known_acronyms(KNOWN), keywords(KNOWN))
    return [f for f in found if f.blocking]


def next_round(text: str) -> str:
    """What the author does with the comprehension gate's findings on its next round."""
    return guarded_apply(text, blocking(text), STYLE)[0]


CASES = {
    "cr-term-order (acronym defined only later)": (
        "# Queue\n\n## Overview\n\nThe DLQ keeps failed jobs.\n\n"
        "## Dead letters\n\n**TL;DR:** Failed jobs wait in a queue.\n\n"
        "A dead letter queue (DLQ) holds each job that failed three times.\n"
    ),
    "cr-term-order (term used before its definition)": (
        "# Queue\n\n## Overview\n\nJobs run in the background.\n\n"
        "## Claiming\n\n**TL;DR:** A worker claims a job.\n\nThe worker holds a lease while it runs the job.\n\n"
        "## Leases\n\n**TL;DR:** Leases expire.\n\nA **lease** is a time-limited claim a worker holds on a job.\n"
    ),
    "cr-tldr-mismatch": (
        "# Cache\n\n## Overview\n\nReads go through a cache.\n\n"
        "## Managed cache\n\n**TL;DR:** Elasticache replaces the Redis instances we provision.\n\n"
        "Less Puppet code to manage, and no lock-in, because client-side behaviour does not change at all "
        "for anyone who calls the service.\n"
    ),
    "cr-dangling-ref (a section that is not there)": (
        "# Cache\n\n## Overview\n\nReads go through a cache.\n\n"
        "## Reads\n\n**TL;DR:** Reads hit the cache first.\n\n"
        "A miss falls through to Postgres, as described in the Eviction section. The row is then kept.\n"
    ),
    "cr-dangling-ref (a pointer to nothing below)": (
        "# Cache\n\n## Overview\n\nReads go through a cache.\n\n"
        "## Reads\n\n**TL;DR:** Reads hit the cache first.\n\n"
        "A miss falls through to Postgres. How quotas migrate between regions is explained below. "
        "The row is then kept.\n"
    ),
    "cr-no-overview": (
        "# Cache\n\n## Reads\n\n**TL;DR:** Reads hit the cache first.\n\nA miss falls through to Postgres.\n"
    ),
}


def test_the_author_clears_each_comprehension_rule_on_the_next_round() -> None:
    for name, text in CASES.items():
        rule = name.split(" ")[0]
        before = [f for f in blocking(text) if f.rule == rule]
        assert before, name  # the case shows the rule
        after = next_round(text)
        assert not [f for f in blocking(after) if f.rule == rule], (name, after)
        assert not blocking(after), (name, blocking(after))


# Generated research logs ----------------------------------------------------------------------

NOUNS = ["bucket", "tenant", "route", "worker", "lease", "queue", "export", "report", "region", "shard"]
OTHER = ["puppet", "budget", "latency", "operator", "invoice", "ledger", "pager", "runbook", "quota"]
VERBS = ["keeps", "holds", "sends", "reads", "writes", "moves", "stores", "checks"]
NAMES = ["GOV.UK", "`db_admin`", "eu-west-1", "api.example.com", "`RateLimit.take`", "gRPC", "Kubernetes"]


@st.composite
def sentence(draw: st.DrawFn, words: list[str], name: bool = False) -> str:
    picked = draw(st.lists(st.sampled_from(words), min_size=3, max_size=9))
    verb = draw(st.sampled_from(VERBS))
    extra = f" on {draw(st.sampled_from(NAMES))}" if name else ""
    text = f"The {picked[0]} {verb} the {' and the '.join(picked[1:])}{extra}"
    return text[0].upper() + text[1:] + "."


@st.composite
def research_log(draw: st.DrawFn) -> str:
    acronym = draw(st.sampled_from(["QEZ", "WVK", "JPT"]))
    where = draw(st.sampled_from(["first", "later", "never"]))
    long = {"QEZ": "Quorum Exchange Zone", "WVK": "Warm Vault Keeper", "JPT": "Journal Paging Table"}[acronym]
    use = f"{long} ({acronym})" if where == "first" else acronym
    out = ["# Research log: generated design", "", "## Problem", ""]
    out += [f"The {acronym if where != 'first' else use} path is slow. " + draw(sentence(NOUNS)), ""]
    out += ["## Findings", "", f"- {draw(sentence(NOUNS, True))}"]
    if where == "later":
        out.append(f"- The {long} ({acronym}) drops writes under load.")
    out += [f"- {draw(sentence(OTHER))}", ""]
    if draw(st.booleans()):
        out += [
            "## Glossary",
            "",
            "- **Lease**: a claim a worker holds on a job; it expires unless renewed.",
            "- **Shard**: a part of the table that one worker owns, with its own lease.",
            "- **Export**: one report request and the file it produces.",
            "",
        ]
    out += ["## Decision Log", ""]
    count = draw(st.integers(min_value=1, max_value=4))
    for number in range(1, count + 1):
        bearing = draw(st.booleans()) or number == 1
        out += [
            # A title and a rationale that share no word with the decision (its TL;DR).
            f"### D{number}: {draw(st.sampled_from(['Adopt', 'Prefer']))} the {draw(st.sampled_from(OTHER))} {number}",
            f"**Decision:** {draw(sentence(NOUNS, True))}",
            f"**Alternatives rejected:** {draw(sentence(OTHER)) if bearing else 'none'}",
            f"**Rationale:** {draw(sentence(OTHER))}",
        ]
        if draw(st.booleans()):
            out.append(f"**Consequences:** {draw(sentence(OTHER))}")
        if draw(st.booleans()):
            out.append("**Status:** Accepted.")
        out.append("")
    out += ["## Adversarial gate record", "", "### 2026-11-20 — PASS", ""]
    return "\n".join(out)


SHORT_LOG = """# Research log: generated design

## Problem

The Quorum Exchange Zone (QEZ) path is slow. The bucket keeps the bucket and the bucket.

## Findings

- The bucket keeps the bucket and the bucket on GOV.UK.
- The puppet keeps the puppet and the puppet.

## Glossary

- **Lease**: a claim a worker holds on a job; it expires unless renewed.
- **Shard**: a part of the table that one worker owns, with its own lease.
- **Export**: one report request and the file it produces.

## Decision Log

### D1: Adopt the puppet 1
**Decision:** The bucket keeps the bucket and the bucket on GOV.UK.
**Alternatives rejected:** The puppet keeps the puppet and the puppet.
**Rationale:** The puppet keeps the puppet and the puppet.

## Adversarial gate record

### 2026-11-20 — PASS
"""
"""A short log whose faithful draft repeats two thirds of it: the auditors still read the draft."""


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(research_log())
@example(log=SHORT_LOG)
def test_a_generated_log_with_a_resolved_gate_ends_pass_within_the_budget(tmp_path: Path, log: str) -> None:
    root = tmp_path / "repo"
    shutil.rmtree(root, ignore_errors=True)
    (root / ".git").mkdir(parents=True)
    workflow = root / "docs" / "adr" / "gen" / "_workflow"
    workflow.mkdir(parents=True)
    (workflow / "research-log.md").write_text(log, encoding="utf-8")
    d = open_design_dir(workflow.parent)
    result = go(start(d, tmp_path / str(abs(hash(log)))))
    assert result.state is not None and result.state.outcome is not None
    assert result.state.outcome.verdict == "PASS" and result.state.round <= 3, (result.state.outcome, log)
    design = d.design.read_text(encoding="utf-8")
    flat = " ".join(design.split())
    records = {r.source: r for r in doc_from_text(design).d_records()}
    for decision in load_research_log(d.research_log).decisions:
        for name, field in decision.fields.items():
            assert " ".join(field.value.split()) in flat, (decision.id, name)
        for token in (decision.value("Decision") or "").split():
            assert token in records[decision.number].fields["Decision"].value.split()
