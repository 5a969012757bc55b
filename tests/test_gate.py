from __future__ import annotations

from pathlib import Path

from conftest import EXAMPLE, write

from pipeline.formats.research_log import load_research_log

HEAD = "# L\n\n## Adversarial gate record\n\n"


def gate(tmp_path: Path, body: str):  # type: ignore[no-untyped-def]
    return load_research_log(write(tmp_path / "research-log.md", HEAD + body)).gate()


def test_example_is_resolved_and_decisions_parse() -> None:
    log = load_research_log(EXAMPLE / "_workflow" / "research-log.md")
    assert log.gate().state == "resolved"
    assert [d.id for d in log.decisions] == [f"D{i}" for i in range(1, 8)]
    assert [d.id for d in log.load_bearing()] == ["D1", "D2", "D3", "D6"]


def test_open_entry(tmp_path: Path) -> None:
    state = gate(
        tmp_path,
        "### 2026-11-20 — NEEDS REVISION\n- [ ] blocker: torn pages.\n- [x] should-fix: x\n"
        "- [ ] suggestion: words\n",
    )
    assert state.state == "open"
    assert [(i.severity, i.text) for i in state.open_items] == [("blocker", "torn pages.")]
    assert state.to_json()["entry"] == {"date": "2026-11-20", "verdict": "NEEDS REVISION", "line": 5}


def test_suggestions_never_hold_it_open(tmp_path: Path) -> None:
    assert (
        gate(tmp_path, "### 2026-11-20 — NEEDS REVISION\n- [ ] suggestion: define tail\n").state == "resolved"
    )


def test_latest_date_decides_out_of_order(tmp_path: Path) -> None:
    text = "### 2026-11-22 — PASS\n\n### 2026-11-20 -- NEEDS REVISION\n- [ ] blocker: x\n"
    state = gate(tmp_path, text)
    assert state.state == "resolved" and state.entry is not None and state.entry.line == 5
    text = "### 2026-11-20 - PASS\n\n### 2026-11-22 — NEEDS REVISION\n- [ ] should-fix: y\n"
    assert gate(tmp_path, text).state == "open"


def test_same_date_later_in_file_wins(tmp_path: Path) -> None:
    assert gate(
        tmp_path, "### 2026-11-20 — NEEDS REVISION\n- [ ] blocker: x\n\n### 2026-11-20 — PASS\n"
    ).state == ("resolved")
    assert gate(
        tmp_path, "### 2026-11-20 — PASS\n\n### 2026-11-20 — NEEDS REVISION\n- [ ] blocker: x\n"
    ).state == ("open")


def test_not_run(tmp_path: Path) -> None:
    state = gate(tmp_path, "")
    assert state.state == "not-run" and "no entries" in state.message()
    bare = load_research_log(write(tmp_path / "r2.md", "# L\n\n## Decision Log\n")).gate()
    assert bare.state == "not-run" and "no '## Adversarial gate record'" in bare.message()


def test_gate_cli_exit_codes(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert cli(["gate", str(EXAMPLE)]).code == 0
    log = write(tmp_path / "research-log.md", HEAD + "### 2026-11-20 — NEEDS REVISION\n- [ ] blocker: x\n")
    result = cli(["gate", str(log)])
    assert result.code == 3 and '"state": "open"' in result.out
    assert cli(["gate", str(write(tmp_path / "r.md", "# L\n"))]).code == 3


def test_load_bearing_rule(tmp_path: Path) -> None:
    entries = "".join(
        f"### D{i}: t{i}\n**Decision:** d\n**Alternatives rejected:** {alt}\n\n"
        for i, alt in enumerate(["None.", "n/a", "-", "", "A cache (stale)", "N/A"], start=1)
    )
    log = load_research_log(write(tmp_path / "l.md", "# L\n\n## Decision Log\n\n" + entries))
    assert [d.id for d in log.load_bearing()] == ["D5"]


def test_insert_into_section_keeps_the_rest_and_ignores_fenced_headings() -> None:
    from pipeline.formats.research_log_edits import insert_into_section

    text = "# L\n\n## Decision Log\n\n### D1: a\n\n```\n## Adversarial gate record\n```\n\n## Notes\n\nkeep\n"
    out = insert_into_section(text, "Decision Log", "### D2: b")
    assert out == (
        "# L\n\n## Decision Log\n\n### D1: a\n\n```\n## Adversarial gate record\n```\n\n### D2: b\n\n"
        "## Notes\n\nkeep\n"
    )
    added = insert_into_section(out, "Adversarial gate record", "### 2026-11-29 — PASS\n")
    assert added.endswith("keep\n\n## Adversarial gate record\n\n### 2026-11-29 — PASS\n")
    assert insert_into_section(added, "Adversarial gate record", "### 2026-11-30 — PASS").endswith(
        "### 2026-11-29 — PASS\n\n### 2026-11-30 — PASS\n"
    )
