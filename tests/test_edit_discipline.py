"""The edit discipline: malformed edits change nothing, the two N=5 counters, staleness, and
the companion in the creation kinds."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from conftest import run_cli
from editkit import edit, entry_text, kinds_logged, stamped_repo, tree

from pipeline.formats.design_doc import load_design
from pipeline.formats.stamp import has_stamp

MALFORMED = [
    (["content-edit", "--old", "no such text anywhere", "--new", "x"], "not found"),
    (["content-edit", "--old", "the", "--new", "x"], "occurs"),
    (
        ["content-edit", "--section", "Buckets per tenant and route", "--old", "idle tenants", "--new", "x"],
        "outside",
    ),
    (
        ["section-rename", "--section", "Buckets per tenant and routes", "--to", "Flow"],
        'did you mean "Buckets per tenant and route"',
    ),
    (
        ["section-rename", "--section", "Buckets per tenant and route", "--to", "Bucket state in Redis"],
        "already has a section",
    ),
    (["section-add", "--section", "Buckets per tenant and route", "--content", "{body}"], "already exists"),
    (["section-move", "--section", "Buckets per tenant and route"], "needs one of"),
    (["section-remove", "--section", "Overview"], "may not be removed"),
    (["content-edit", "--new", "x"], "--new needs --old"),
    (["content-edit", "--old", "never less than one", "--new", "x", "--to", "y"], "does not take --to"),
    (["mechanics-edit", "--old", "x", "--new", "y"], "needs the companion"),
    (["design-sync"], "needs the companion"),
    (["content-edit", "--old", "<!-- workflow-sha", "--new", "<!-- x"], "line 1"),
    (["phase1-creation"], "not an interactive mutation kind"),
    (["content-edit", "--old", "never less than one", "--new", "x", "--stale-choice", "d"], "--stale-choice"),
]


@pytest.mark.parametrize(("args", "message"), MALFORMED)
def test_a_malformed_edit_exits_2_and_leaves_every_file_byte_identical(
    tmp_path: Path, args: list[str], message: str
) -> None:
    d = stamped_repo(tmp_path)
    body = tmp_path / "body.md"
    body.write_text("**TL;DR:** Short.\n\nText.\n")
    before = tree(d.repo_root)
    code, out, err = edit(d, tmp_path, args[0], *[a.replace("{body}", str(body)) for a in args[1:]])
    assert code == 2 and out == {}
    assert message in err
    assert tree(d.repo_root) == before
    assert not list((tmp_path / "runs").glob("*/run.json"))


EMPTY = [
    ["structural-rewrite"],
    ["content-edit", "--section", "Buckets per tenant and route"],
    ["section-add", "--section", "A new section"],
]


@pytest.mark.parametrize("args", EMPTY)
@pytest.mark.parametrize("text", ["", " \n\t\n\n"])
def test_empty_or_blank_content_is_bad_input(tmp_path: Path, args: list[str], text: str) -> None:
    """An empty or whitespace-only --content would wipe a section (or the whole design down to
    its stamp): it is a malformed edit, exit 2, and nothing is written."""
    d = stamped_repo(tmp_path)
    content = tmp_path / "content.md"
    content.write_text(text)
    before = tree(d.repo_root)
    code, out, err = edit(d, tmp_path, *args, "--content", str(content))
    assert (code, out) == (2, {}), err
    assert "--content" in err and "empty" in err and "what to do:" in err
    assert tree(d.repo_root) == before
    assert not list((tmp_path / "runs").glob("*/run.json"))


def test_the_periodic_counter_escalates_the_fifth_counted_mutation(tmp_path: Path) -> None:
    d = stamped_repo(tmp_path)
    scopes = []
    _, out, _ = edit(d, tmp_path, "length-trigger-crossing")  # counted: 1
    for word in ("alpha", "beta", "gamma"):  # mechanics-edits are not counted
        edit(d, tmp_path, "mechanics-edit", "--old", "no memory.", "--new", f"no memory ({word} note).")
        edit(d, tmp_path, "mechanics-edit", "--old", f" ({word} note)", "--new", "")
    for old, new in (
        ("twelve API", "12 API"),
        ("short bursts", "brief bursts"),
        ("two numbers", "2 numbers"),
    ):
        _, out, _ = edit(d, tmp_path, "content-edit", "--old", old, "--new", new)  # counted: 2, 3, 4
        scopes.append((out["scope"]["cold_read"], out["scope"]["escalated"], out["scope"]["periodic_count"]))
    _, out, _ = edit(d, tmp_path, "content-edit", "--old", "fixed capacity", "--new", "set capacity")  # 5
    scopes.append((out["scope"]["cold_read"], out["scope"]["escalated"], out["scope"]["periodic_count"]))
    assert scopes == [
        ("bounded", False, 2),
        ("bounded", False, 3),
        ("bounded", False, 4),
        ("whole-doc", True, 5),
    ]
    assert "periodic whole-doc: counted mutation 5" in entry_text(d, out["review_log_entry"])
    _, out, _ = edit(d, tmp_path, "content-edit", "--old", "steady rate", "--new", "constant rate")  # 6
    assert out["scope"]["cold_read"] == "bounded"


def test_the_sync_suggestion_comes_at_five_mechanics_edits_and_never_syncs(tmp_path: Path) -> None:
    d = stamped_repo(tmp_path)
    edit(d, tmp_path, "length-trigger-crossing")
    design = d.design.read_bytes()
    phrases = ["no memory.", "no memory at all.", "nothing at all.", "nothing.", "no space.", "no room."]
    suggestions = []
    for old, new in itertools.pairwise(phrases):
        _, out, _ = edit(d, tmp_path, "mechanics-edit", "--old", f"cost {old}", "--new", f"cost {new}")
        suggestions.append(out["sync_suggestion"] is not None)
    assert suggestions == [False, False, False, False, True]
    assert "want to run a design-sync now" in (out["sync_suggestion"] or "").lower()
    assert d.design.read_bytes() == design and "design-sync" not in kinds_logged(d)
    summary = (tmp_path / "runs" / out["run_id"] / "summary.md").read_text()
    assert "## Sync suggested" in summary
    _, synced, _ = edit(d, tmp_path, "design-sync")
    assert synced["outcome"] == "PASS"
    assert "cost no room." in d.design.read_text()
    _, after, _ = edit(d, tmp_path, "mechanics-edit", "--old", "cost no room.", "--new", "cost no memory.")
    assert after["sync_suggestion"] is None
    assert "**Working-mode counter**: 1 mechanics-edits since last sync" in entry_text(
        d, after["review_log_entry"]
    )


def _moved_on(tmp_path: Path):  # type: ignore[no-untyped-def]
    d = stamped_repo(tmp_path)
    edit(d, tmp_path, "length-trigger-crossing")
    edit(
        d,
        tmp_path,
        "mechanics-edit",
        "--old",
        "so idle tenants cost no memory",
        "--new",
        "so an idle tenant costs no memory",
    )
    return d


def test_a_stale_quote_without_a_terminal_or_a_choice_stops_naming_the_flag(tmp_path: Path) -> None:
    d = _moved_on(tmp_path)
    before = tree(d.repo_root)
    code, _, err = edit(
        d,
        tmp_path,
        "content-edit",
        "--old",
        "so idle tenants cost no memory",
        "--new",
        "so idle tenants cost nothing",
    )
    assert code == 2 and "--stale-choice a|b|c" in err
    assert "Mechanics has accumulated 1 edit(s) since the last sync" in err and "an idle tenant costs" in err
    assert tree(d.repo_root) == before


def test_stale_choice_b_applies_the_request_on_top_of_the_companion(tmp_path: Path) -> None:
    d = _moved_on(tmp_path)
    args = [
        "--old",
        "so idle tenants cost no memory",
        "--new",
        "so idle tenants cost nothing",
        "--stale-choice",
        "b",
    ]
    code, out, _ = edit(d, tmp_path, "content-edit", *args)
    assert code == 0 and out["kind"] == "content-edit"
    assert "so an idle tenant costs nothing" in " ".join(d.design.read_text().split())
    assert "so an idle tenant costs no memory" in " ".join(d.mechanics.read_text().split())


def test_stale_choice_a_reverts_the_companion_then_applies(tmp_path: Path) -> None:
    d = _moved_on(tmp_path)
    args = [
        "--old",
        "so idle tenants cost no memory",
        "--new",
        "so an idle tenant is free",
        "--stale-choice",
        "a",
    ]
    code, out, _ = edit(d, tmp_path, "mechanics-edit", *args)
    assert code == 0, out
    mechanics = " ".join(d.mechanics.read_text().split())
    assert "so an idle tenant is free" in mechanics and "costs no memory" not in mechanics


def test_stale_choice_c_syncs_first_and_leaves_the_request_for_later(tmp_path: Path) -> None:
    d = _moved_on(tmp_path)
    args = [
        "--old",
        "so idle tenants cost no memory",
        "--new",
        "so idle tenants cost nothing",
        "--stale-choice",
        "c",
    ]
    code, out, _ = edit(d, tmp_path, "content-edit", *args)
    assert code == 0 and out["kind"] == "design-sync" and out["outcome"] == "PASS"
    design = " ".join(d.design.read_text().split())
    assert "so an idle tenant costs no memory" in design and "nothing" not in design
    record = json.loads((tmp_path / "runs" / out["run_id"] / "run.json").read_text())
    assert record["edit"]["requested_kind"] == "content-edit"


def test_a_directory_with_a_companion_passes_create_and_final_writes_its_final_copy(tmp_path: Path) -> None:
    d = stamped_repo(tmp_path)
    edit(d, tmp_path, "length-trigger-crossing")
    runs = ["--runs-dir", str(tmp_path / "runs"), "--json"]
    # The split is an edit logged after the design was seeded: create refuses to overwrite it
    # unless told to (the overwritten files are kept under runs/).
    assert run_cli(["create", str(d.root), "--no-warmup", *runs]).code == 2
    created = run_cli(["create", str(d.root), "--no-warmup", "--force", *runs])
    out = json.loads(created.out)
    assert created.code == 0 and out["outcome"] == "PASS", out
    assert set(out["kept"]) == {d.rel(d.design), d.rel(d.mechanics)}
    assert has_stamp(d.design) and has_stamp(d.mechanics)
    body = [s.name for s in load_design(d.design).body_sections()]
    mechanics = {s.name for s in load_design(d.mechanics).level2()}
    assert body and set(body) <= mechanics
    assert "**Mechanical checks** (target=both): PASS" in entry_text(d, out["review_log_entry"])
    final = run_cli(["final", str(d.root), "--no-warmup", *runs])
    out = json.loads(final.out)
    assert final.code == 0 and out["outcome"] == "PASS", out
    companion = d.root / "design-mechanics-final.md"
    assert companion.is_file() and not has_stamp(companion) and not has_stamp(d.final)
    final_body = [s.name for s in load_design(d.final).body_sections()]
    for name in final_body:
        assert f'**Mechanics:** design-mechanics-final.md §"{name}"' in d.final.read_text()
    assert set(final_body) <= {s.name for s in load_design(companion).level2()}
    check = run_cli(
        [
            "check",
            "--design-path",
            str(d.final),
            "--design-mechanics-path",
            str(companion),
            "--target",
            "both",
        ]
    )
    assert check.code == 0, check.out


def test_a_companion_rename_leaves_later_mechanics_edits_workable(tmp_path: Path) -> None:
    """design.md is frozen between syncs: a footer the rename broke is the next design-sync's
    to follow, recorded as such, never a blocker of every mechanics-edit until then."""
    d = stamped_repo(tmp_path)
    assert edit(d, tmp_path, "length-trigger-crossing")[0] == 0
    renamed = edit(
        d, tmp_path, "mechanics-edit", "--old", "## Bucket state in Redis", "--new", "## Redis bucket state"
    )
    later = edit(
        d,
        tmp_path,
        "mechanics-edit",
        "--old",
        "so idle tenants cost no memory",
        "--new",
        "so an idle tenant costs no memory",
    )
    for code, out, err in (renamed, later):
        assert (code, out["outcome"]) == (0, "PASS"), err
        entry = entry_text(d, out["review_log_entry"])
        assert 'suggestion: dsc-mechanics-link §"Bucket state in Redis"' in entry
        assert "for the next design-sync" in entry and "**Iterations**: 1 of 3" in entry
    synced = edit(d, tmp_path, "design-sync")
    assert synced[0] == 0, synced[2]
    assert '**Mechanics:** design-mechanics.md §"Redis bucket state"' in d.design.read_text()
