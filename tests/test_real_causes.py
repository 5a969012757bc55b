"""Each cause of wrong findings seen on real design documents, as a fixture from tests/corpus/real."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from agentkit import runtime

from pipeline.agents.review import review_once
from pipeline.formats.anchor import anchor_findings
from pipeline.formats.design_dir import DesignDir, open_design_dir
from pipeline.formats.findings import Finding, merge
from pipeline.formats.prose import parse_prose
from pipeline.offline import acronyms, fixer
from pipeline.offline.comprehension import definitions
from pipeline.settings import Limits

REAL = Path(__file__).parent / "corpus" / "real"


SEED_STAMP = "<!-- workflow-sha: " + "0" * 40 + " -->\n"


def repo(tmp: Path, doc: str, known_terms: str | None = None, stamped: bool = False) -> DesignDir:
    """A repository holding ``doc`` as its design; ``stamped`` opens it with designloop's
    stamp, so the reviewers hold it to the seed's rules as a design designloop wrote (its
    lines move down by one)."""
    root = tmp / "repo"
    (root / ".git").mkdir(parents=True)
    target = root / "docs" / "adr" / "real" / "_workflow"
    target.mkdir(parents=True)
    text = (REAL / doc).read_text(encoding="utf-8")
    (target / "design.md").write_text(SEED_STAMP + text if stamped else text, encoding="utf-8")
    if known_terms is not None:
        (root / ".designloop" / "prompts").mkdir(parents=True)
        (root / ".designloop" / "prompts" / "known-terms.md").write_text(known_terms)
    return open_design_dir(target.parent)


def review(d: DesignDir, role: str) -> list[Finding]:
    run = asyncio.run(review_once(runtime(d), role, d, Limits()))
    assert all(r.status == "ok" for r in run.results), [r.error for r in run.results]
    return [f for r in run.results if r.review for f in r.review.findings]


def both(d: DesignDir) -> list[Finding]:
    return review(d, "readability-auditor") + review(d, "comprehension-review")


def acronyms_reported(found: list[Finding]) -> set[str]:
    """Every acronym the findings name: one defined only later is its finding's quote; the
    ones never defined are listed in one finding per document ("2 acronyms are never
    defined: PTR (line 12), SOS (lines 3, 9)")."""
    out: set[str] = set()
    for f in found:
        if f.rule not in ("hs-acronym", "cr-term-order"):
            continue
        listed = re.findall(r"([A-Z][A-Za-z]+) \(lines? [\d, ]+\)", f.message.split("never defined:")[-1])
        out |= set(listed) if "never defined:" in f.message else {f.quote or ""}
    return out


def lines_of(d: DesignDir) -> list[str]:
    return d.design.read_text(encoding="utf-8").split("\n")


@pytest.mark.parametrize(
    "doc", ["kotlin-keep-0259-context-receivers.md", "k8s-kep-3716-admission-webhook-match-conditions.md"]
)
def test_code_comments_and_link_definitions_are_never_read_as_prose(tmp_path: Path, doc: str) -> None:
    # Kotlin's proposal has 69 fenced blocks with blank lines inside; the KEP carries 32 HTML
    # comments of template boilerplate.
    d = repo(tmp_path, doc)
    text = d.design.read_text(encoding="utf-8")
    outside = parse_prose(text).non_prose_lines()
    assert len(outside) > 150  # the code blocks and comments are there, and set aside
    found = both(d)
    assert not [f for f in found if f.line in outside]


def test_capitalised_words_that_are_not_acronyms(tmp_path: Path) -> None:
    # RFC 2119 keywords in bold (bazel remote downloads), HTTP's HEAD, "NOT authoritative"
    # and "a MAJOR change" (KEP-1880) are words in capitals, not acronyms.
    tokens = {
        token
        for doc in ("bazel-2020-01-14-remote-downloads.md", "k8s-kep-1880-multiple-service-cidrs.md")
        for token in acronyms_reported(both(repo(tmp_path / doc, doc, stamped=True)))
    }
    assert not tokens & {"MUST", "MAY", "SHOULD", "HEAD", "NOT", "MAJOR", "KEP"}
    # A real undefined acronym is still reported (PTR, a DNS record type, is known to every
    # reader: params/acronyms.toml).
    assert {"PVC"} <= tokens and "PTR" not in tokens


def test_an_acronym_spelled_out_beside_it_is_defined() -> None:
    assert {"SLO", "SLOs"} & acronyms.definitions("We keep three SLOs (Service Level Objectives) per team.")
    assert "URI" in acronyms.definitions("The Uniform Resource Identifier (URI): Generic Syntax")
    assert "LB" in acronyms.long_forms("resembles a traditional load balancer, where the client asks the LB")
    assert "CEL" in acronyms.definitions("match conditions written in the Common Expression Language (CEL)")


def test_one_vocabulary_for_both_roles_overridable_per_repository(tmp_path: Path) -> None:
    doc = "rust-3058-try-trait-v2.md"
    assert "HIR" in acronyms_reported(both(repo(tmp_path / "a", doc, stamped=True)))  # not in the vocabulary
    shipped = (Path(__file__).parent.parent / "prompts" / "known-terms.md").read_text()
    override = shipped + "\nKnown: ZST, HIR, IRLO\n"
    found = both(repo(tmp_path / "b", doc, known_terms=override, stamped=True))
    assert not acronyms_reported(found) & {"ZST", "HIR", "IRLO"}


def test_one_finding_per_subject_per_document(tmp_path: Path) -> None:
    d = repo(tmp_path, "rust-3058-try-trait-v2.md", stamped=True)
    found = review(d, "comprehension-review")
    never = [f for f in found if "never defined" in f.message]
    assert len(never) == 1 and "HIR (line 713), IRLO (line 1153)" in never[0].message
    # Two auditor slices reporting one acronym become one finding when the round is merged.
    a = Finding(severity="should-fix", rule="hs-acronym", quote="JEP", line=34, message="m", file="d.md")
    b = a.model_copy(update={"severity": "suggestion", "line": 265})
    merged = merge([b, a])
    assert len(merged) == 1 and merged[0].severity == "should-fix" and "265" in merged[0].message


def test_a_word_that_carries_meaning_is_not_filler_and_is_never_deleted(tmp_path: Path) -> None:
    # "not very secure", "not very ergonomic" (bazel credential helpers), "At the very least"
    # (KEP-3716): deleting "very" would change or break the sentence.
    for doc, lines in (
        ("bazel-2022-06-07-bazel-credential-helpers.md", (43, 48)),
        ("k8s-kep-3716-admission-webhook-match-conditions.md", (462, 584)),
    ):
        d = repo(tmp_path / doc, doc)
        assert not [f for f in review(d, "readability-auditor") if f.rule == "hs-filler" and f.line in lines]
        text = d.design.read_text(encoding="utf-8")
        flagged = [Finding(rule="hs-filler", quote="very", severity="should-fix", message="filler")]
        instructions = (Path(__file__).parent.parent / "prompts" / "house-style.md").read_text()
        new, _, _ = fixer.apply(text, flagged, instructions)
        for number in lines:
            assert new.split("\n")[number - 1] == text.split("\n")[number - 1]


def test_borrowed_typography_rules_do_not_run_on_design_documents(tmp_path: Path) -> None:
    # KEP-2227 writes "(R)" for Required; the Rust RFC uses straight quotes and two spaces
    # after a full stop throughout.
    for doc in ("k8s-kep-2227-kubectl-default-container.md", "rust-3058-try-trait-v2.md"):
        found = review(repo(tmp_path / doc, doc), "readability-auditor")
        assert not [f for f in found if f.rule.startswith("proselint/typography")]
        assert not [f for f in found if f.rule in ("proselint/misc.but", "proselint/misc.preferred_forms")]


def test_every_finding_has_its_line_and_an_exact_quote(tmp_path: Path) -> None:
    # A KEP with findings of both roles (a long sentence, a repeated word, an acronym), and
    # the same held to the seed (stamped, its lines one down).
    for stamped in (False, True):
        d = repo(tmp_path / str(stamped), "k8s-kep-1880-multiple-service-cidrs.md", stamped=stamped)
        lines = lines_of(d)
        found = both(d)
        assert len({f.role or f.rule for f in found}) >= 2, found
        assert all(f.line and f.quote and f.quote in lines[f.line - 1] for f in found), found


def test_a_quote_elsewhere_is_re_anchored_and_a_quote_nowhere_is_flagged_not_dropped() -> None:
    lines = ["# Title", "", "Alpha beta gamma.", "Delta epsilon", "zeta eta."]
    moved, spanning, lost, whole = anchor_findings(
        [
            Finding(severity="should-fix", rule="r", message="m", line=1, quote="beta gamma"),
            Finding(severity="should-fix", rule="r", message="m", quote="epsilon zeta"),
            Finding(severity="should-fix", rule="r", message="m", line=3, quote="<the sentence>"),
            Finding(severity="blocker", rule="wiring-error", message="m"),
        ],
        lines,
    )
    assert (moved.line, moved.quote) == (3, "beta gamma")
    assert (spanning.line, spanning.quote) == (4, "epsilon") and "epsilon" in lines[3]
    assert lost.line is None and lost.unlocated and "unlocated" in lost.describe()
    assert json.loads(json.dumps(lost.to_json()))["unlocated"] is True
    assert (whole.line, whole.quote) == (1, "# Title")


def test_link_text_and_labels_are_not_terms_or_sections(tmp_path: Path) -> None:
    # "as explained in the [Functional types](#functional-types) section" links an ### heading;
    # "* **Type**: Design proposal" and "**Rationale**" are labels, not definitions.
    d = repo(tmp_path, "kotlin-keep-0259-context-receivers.md")
    found = review(d, "comprehension-review")
    assert not [f for f in found if f.rule == "cr-dangling-ref"]
    for doc in ("kotlin-keep-0259-context-receivers.md", "nixos-0166-nix-formatting.md"):
        defined = definitions(parse_prose((REAL / doc).read_text(encoding="utf-8")))
        assert not {"type", "authors", "status", "rationale"} & set(defined)


def test_same_input_same_bytes(tmp_path: Path) -> None:
    outputs = []
    for name in ("a", "b"):
        d = repo(tmp_path / name, "nixos-0062-content-addressed-paths.md")
        outputs.append(json.dumps([f.model_dump(mode="json") for f in both(d)], sort_keys=True))
    assert outputs[0] == outputs[1] and len(outputs[0]) > 100


def test_every_should_fix_the_auditor_raises_on_long_prose_is_fixed_by_the_fixer(tmp_path: Path) -> None:
    # Real over-long prose from the corpus: a 77-word sentence (rust pub(restricted)), an
    # 84-word sentence (KEP-1880) and a 223-word paragraph (Kotlin Uuid), in one design.
    picks = [
        ("rust-1422-pub-restricted.md", 787, 796),
        ("k8s-kep-1880-multiple-service-cidrs.md", 630, 634),
        ("kotlin-keep-0382-uuid.md", 470, 486),
    ]
    body = []
    for doc, first, last in picks:
        lines = (REAL / doc).read_text(encoding="utf-8").split("\n")[first - 1 : last]
        body += ["## " + doc.split(".")[0], "", "\n".join(line.strip() for line in lines), ""]
    # A design designloop wrote (stamped), held to the house style's hard limits.
    text = SEED_STAMP + "# Long prose\n\n## Overview\n\nA design made of long passages.\n\n" + "\n".join(body)
    d = repo(tmp_path, "react-0002-new-version-of-context.md")
    d.design.write_text(text, encoding="utf-8")
    flagged = [f for f in review(d, "readability-auditor") if f.blocking]
    assert {"hs-sentence-length", "hs-wall-of-text"} <= {f.rule for f in flagged}
    instructions = (Path(__file__).parent.parent / "prompts" / "house-style.md").read_text()
    fixed, count, left = fixer.apply(text, flagged, instructions)
    assert count == len(flagged) and left == 0
    d.design.write_text(fixed, encoding="utf-8")
    assert not [f for f in review(d, "readability-auditor") if f.blocking]
