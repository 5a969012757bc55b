from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import STAMP, body, design, write

from pipeline.checks.engine import CheckRequest, find_asides, run_checks
from pipeline.errors import InputError
from pipeline.formats.findings import Finding


def check(tmp_path: Path, text: str, **kw: object) -> list[Finding]:
    path = write(tmp_path / "_workflow" / "design.md", text)
    return run_checks(CheckRequest(design_path=path, **kw))  # type: ignore[arg-type]


def rules(findings: list[Finding]) -> list[str]:
    return [f.rule for f in findings]


def test_clean_design_has_no_findings(tmp_path: Path) -> None:
    assert check(tmp_path, design(body("Flow"), body("Storage"))) == []


# dsc-stamp-position


def test_stamp_not_on_line_one(tmp_path: Path) -> None:
    text = "# Title\n\n" + STAMP + "\n\n## Overview\n\nx\n"
    found = check(tmp_path, text)
    assert rules(found) == ["dsc-stamp-position"]
    assert found[0].line == 3 and found[0].severity == "blocker"


def test_second_stamp(tmp_path: Path) -> None:
    found = check(tmp_path, design(body("A")) + "\n" + STAMP + "\n")
    assert rules(found) == ["dsc-stamp-position"]
    assert "second" in found[0].message


def test_stamp_inside_fence_is_not_a_stamp(tmp_path: Path) -> None:
    text = design(body("A", "```\n" + STAMP + "\n```"))
    assert check(tmp_path, text) == []


def test_malformed_line_one_stamp(tmp_path: Path) -> None:
    text = design(body("A")).replace(STAMP, "<!-- workflow-sha: ABC -->")
    assert rules(check(tmp_path, text)) == ["dsc-stamp-position"]


def test_stamp_on_final_artifact(tmp_path: Path) -> None:
    path = write(tmp_path / "design-final.md", design(body("A")))
    found = run_checks(CheckRequest(design_path=path))
    assert rules(found) == ["dsc-stamp-position"]
    assert "never carry" in found[0].message
    write(path, design(body("A"), stamp=False))
    assert run_checks(CheckRequest(design_path=path)) == []


def test_unstamped_draft_is_not_a_finding(tmp_path: Path) -> None:
    assert check(tmp_path, design(body("A"), stamp=False)) == []


# dsc-section-shape


def test_body_section_without_tldr(tmp_path: Path) -> None:
    found = check(tmp_path, design("## Flow\n\nNo summary here.\n", body("B")))
    assert rules(found) == ["dsc-section-shape"]
    assert found[0].section == "Flow" and found[0].line == 8


def test_missing_overview_and_title(tmp_path: Path) -> None:
    found = check(tmp_path, design(body("A"), title="Just text", overview=False))
    assert rules(found) == ["dsc-section-shape", "dsc-section-shape"]
    assert {"design.md has no '## Overview' section"} <= {f.message for f in found}


def test_decision_records_and_anchors_need_no_tldr(tmp_path: Path) -> None:
    text = design("## Core Concepts\n\n- term\n", body("A"), "## Decision Records\n\n### D1: x\n")
    assert check(tmp_path, text) == []


def test_bounded_scope_limits_shape_to_changed_section(tmp_path: Path) -> None:
    text = design("## A\n\nno tldr\n", "## B\n\nno tldr\n")
    assert len(check(tmp_path, text)) == 2
    found = check(tmp_path, text, scope="bounded", changed_section="B")
    assert [f.section for f in found] == ["B"]


def test_bounded_scope_unknown_section_is_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="names no section"):
        check(tmp_path, design(body("A")), scope="bounded", changed_section="Nope")


def test_heading_inside_fence_is_not_a_section(tmp_path: Path) -> None:
    text = design(body("A", "```markdown\n## Not a section\n\nno tldr\n```"))
    assert check(tmp_path, text) == []


def test_unterminated_fence_hides_the_rest(tmp_path: Path) -> None:
    text = design(body("A", "~~~\n## Inside\nno tldr (per D3)"))
    assert check(tmp_path, text) == []


# dsc-mechanics-link


def mech_pair(tmp_path: Path, design_text: str, mech_text: str) -> list[Finding]:
    d = write(tmp_path / "design.md", design_text)
    m = write(tmp_path / "design-mechanics.md", mech_text)
    return run_checks(CheckRequest(design_path=d, mechanics_path=m, target="both"))


FOOT = '**Mechanics:** design-mechanics.md §"{}"'


def test_mechanics_links_resolve(tmp_path: Path) -> None:
    found = mech_pair(tmp_path, design(body("A", footer=FOOT.format("A"))), STAMP + "\n# M\n\n## A\n\nlong\n")
    assert found == []


def test_mechanics_footer_to_missing_section(tmp_path: Path) -> None:
    found = mech_pair(tmp_path, design(body("A", footer=FOOT.format("A"))), "# M\n\n## B\n\nlong\n")
    assert rules(found) == ["dsc-mechanics-link"]
    assert "not a section" in found[0].message


def test_body_section_missing_footer_when_companion_exists(tmp_path: Path) -> None:
    found = mech_pair(tmp_path, design(body("A")), "# M\n\n## A\n")
    assert rules(found) == ["dsc-mechanics-link"]
    assert "does not end with" in found[0].message


def test_footer_without_companion(tmp_path: Path) -> None:
    assert rules(check(tmp_path, design(body("A", footer=FOOT.format("A"))))) == ["dsc-mechanics-link"]


# dsc-full-design-link


def plan_check(tmp_path: Path, plan_text: str, track_text: str) -> list[Finding]:
    d = write(tmp_path / "design.md", design(body("Flow")))
    p = write(tmp_path / "implementation-plan.md", plan_text)
    write(tmp_path / "plan" / "track-1.md", track_text)
    return run_checks(CheckRequest(design_path=d, plan_path=p, plan_dir=tmp_path / "plan"))


def test_full_design_links_resolve(tmp_path: Path) -> None:
    ok = '# P\n\n**Full design:** design.md §"Flow"\n'
    assert plan_check(tmp_path, ok, "# T\n\n## Decision Log\n\n### x\n" + ok) == []


def test_full_design_link_to_missing_section_and_file(tmp_path: Path) -> None:
    found = plan_check(
        tmp_path, '# P\n\n**Full design:** design.md §"Flw"\n', '# T\n\n**Full design:** other.md §"Flow"\n'
    )
    assert rules(found) == ["dsc-full-design-link", "dsc-full-design-link"]
    assert 'did you mean §"Flow"' in found[0].suggested_fix
    assert "does not exist" in found[1].message


# dsc-reverse-ref


def test_reverse_reference_into_plan(tmp_path: Path) -> None:
    found = check(tmp_path, design(body("A", "See [the plan](plan/track-2.md) for steps.")))
    assert rules(found) == ["dsc-reverse-ref"] and found[0].severity == "should-fix"
    assert check(tmp_path, design(body("A", "The file `implementation-plan.md` is separate."))) == []


# dsc-parenthetical-aside


@pytest.mark.parametrize(
    "aside", ["(per D27)", "(D3, S5)", "(see §Gate)", '(§"Request flow")', "(D3 and D4)"]
)
def test_cross_reference_asides_found(aside: str) -> None:
    assert [t.strip() for _, t in find_asides(f"The cache is warm {aside}.")] == [aside]


@pytest.mark.parametrize(
    "line",
    [
        "Use a bucket (a counter of tokens).",
        "Call take(D3) now.",
        "[the record](D3)",
        "Code `(per D3)` here.",
        "A version (v2) ships.",
        "Phase (Phase 4) ends.",
    ],
)
def test_ordinary_parentheses_are_left_alone(line: str) -> None:
    assert list(find_asides(line)) == []


def test_fix_drops_asides_atomically_and_keeps_crlf_and_stamp(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    text = design(body("A", "Reads come from the log (per D27). Writes too (D3, S5)."))
    path = write(tmp_path / "design.md", text.replace("\n", "\r\n"))
    result = cli(["check", "--design-path", str(path)])
    assert result.code == 1
    found = json.loads(result.out)["findings"]
    assert [f["rule"] for f in found] == ["dsc-parenthetical-aside"] * 2
    assert all(f["auto_applicable"] for f in found)
    result = cli(["check", "--design-path", str(path), "--fix"])
    assert result.code == 0 and json.loads(result.out)["findings"] == []
    data = path.read_bytes()
    assert b"Reads come from the log. Writes too.\r\n" in data
    assert data.startswith(STAMP.encode() + b"\r\n") and b"\n" not in data.replace(b"\r\n", b"")


# dsc-section-length / dsc-top-level-cap / dsc-duplicate-section


def test_section_length_cap(tmp_path: Path) -> None:
    ok = body("A", "\n".join(["line"] * 146))  # heading + blank + tldr + blank + 146 = 150
    assert check(tmp_path, design(ok)) == []
    long = body("A", "\n".join(["line"] * 147))
    found = check(tmp_path, design(long))
    assert rules(found) == ["dsc-section-length"] and "151 lines" in found[0].message


def test_top_level_cap(tmp_path: Path) -> None:
    sections = [body(f"S{i}", "\n".join(["line"] * 100)) for i in range(20)]
    found = check(tmp_path, design(*sections))
    assert rules(found) == ["dsc-top-level-cap"]
    mech = write(tmp_path / "design-mechanics.md", "# M\n" + "".join(f"\n## S{i}\n" for i in range(20)))
    with_footers = [body(f"S{i}", "\n".join(["line"] * 100), FOOT.format(f"S{i}")) for i in range(20)]
    d = write(tmp_path / "d2" / "design.md", design(*with_footers))
    assert run_checks(CheckRequest(design_path=d, mechanics_path=mech)) == []


def test_duplicate_section(tmp_path: Path) -> None:
    found = check(tmp_path, design(body("A"), body("A")))
    assert rules(found) == ["dsc-duplicate-section"]


# parser edge cases


def test_crlf_gives_the_same_findings(tmp_path: Path) -> None:
    text = design("## A\n\nno tldr (per D1)\n", body("B"))
    lf = check(tmp_path / "lf", text)
    crlf = check(tmp_path / "crlf", text.replace("\n", "\r\n"))
    assert [(f.rule, f.line) for f in lf] == [(f.rule, f.line) for f in crlf] != []


def test_twenty_thousand_line_design(tmp_path: Path) -> None:
    sections = [body(f"S{i}", "\n".join(f"Sentence {j}." for j in range(95))) for i in range(200)]
    sections[150] = sections[150].replace("**TL;DR:** Short.", "No summary.")
    text = design(*sections)
    assert len(text.splitlines()) > 20_000
    found = check(tmp_path, text)
    assert sorted(set(rules(found))) == ["dsc-section-shape", "dsc-top-level-cap"]
    assert [f.section for f in found if f.rule == "dsc-section-shape"] == ["S150"]
