"""The Read tool pages long files and says so; the offline roles read every page."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from agentkit import make_repo, runtime

from pipeline.agents import tools
from pipeline.agents.review import review_once
from pipeline.agents.tools import ToolContext, read
from pipeline.formats.paging import NumberingError, parse_page
from pipeline.formats.research_log import load_research_log
from pipeline.settings import Limits


class Ctx:
    def __init__(self, deps: ToolContext) -> None:
        self.deps = deps


def ctx(root: Path) -> Ctx:
    return Ctx(ToolContext(role="design-author", repo_root=root))


def test_a_small_file_comes_back_whole_numbered_without_a_note(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("one\ntwo\n")
    assert read(ctx(tmp_path), "a.md") == "1\tone\n2\ttwo\n"  # type: ignore[arg-type]
    (tmp_path / "b.md").write_text("no final newline")
    assert read(ctx(tmp_path), "b.md") == "1\tno final newline"  # type: ignore[arg-type]


def test_numbers_are_the_files_own_stamp_included_and_split_only_at_newlines(tmp_path: Path) -> None:
    stamp = "<!-- workflow-sha: " + "a" * 40 + " -->\n"
    (tmp_path / "d.md").write_text(stamp + "# Title\r\n\nform\x0cfeed stays one line\n\tindented\n")
    out = read(ctx(tmp_path), "d.md")  # type: ignore[arg-type]
    assert out.splitlines()[0] == "1\t" + stamp.rstrip("\n")
    assert "2\t# Title\r\n3\t\n4\tform\x0cfeed stays one line\n5\t\tindented\n" in out
    assert parse_page(out).text == (tmp_path / "d.md").read_bytes().decode()
    grep_out = tools.grep(ctx(tmp_path), "feed|indented", "d.md")  # type: ignore[arg-type]
    assert grep_out == "d.md:4:form\x0cfeed stays one line\nd.md:5:\tindented"


def test_a_result_whose_numbers_are_wrong_is_refused_by_the_reader() -> None:
    with pytest.raises(NumberingError):
        parse_page("1\tone\n3\tthree\n")
    with pytest.raises(NumberingError):
        parse_page("one\ntwo\n")
    assert parse_page("5\tfive\n6\tsix\n[lines 5-6 of 9; call again with offset=7 to read on]", 5).text == (
        "five\nsix\n"
    )


def test_a_long_file_comes_back_in_whole_lines_with_a_note_and_reads_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tools, "MAX_READ_CHARS", 100)
    lines = [f"line {i:03d} of the file\n" for i in range(1, 41)]  # 21 characters each, 23 numbered
    (tmp_path / "long.md").write_text("".join(lines))
    c = ctx(tmp_path)
    first = read(c, "long.md")  # type: ignore[arg-type]
    assert first.endswith("[lines 1-4 of 40; call again with offset=5 to read on]")
    assert first.startswith("1\tline 001 of the file\n2\tline 002")
    page = parse_page(first)
    assert page.text == "".join(lines[:4]) and page.next_offset == 5
    text, offset = "", 1
    while True:
        page = parse_page(read(c, "long.md", offset=offset), offset)  # type: ignore[arg-type]
        text += page.text
        if page.next_offset is None:
            break
        offset = page.next_offset
    assert text == "".join(lines)
    part = read(c, "long.md", offset=10, limit=2)  # type: ignore[arg-type]
    assert part == (f"10\t{lines[9]}11\t{lines[10]}[lines 10-11 of 40; call again with offset=12 to read on]")


def test_a_line_longer_than_a_page_is_cut_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tools, "MAX_READ_CHARS", 50)
    (tmp_path / "wide.md").write_text("short\n" + "x" * 80 + "\n")
    out = read(ctx(tmp_path), "wide.md", offset=2)  # type: ignore[arg-type]
    assert out == "2\t" + "x" * 50 + "\n[line 2 of 2 is cut at 50 characters]" and parse_page(out, 2).cut


def test_the_offline_author_reads_a_log_longer_than_a_page_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = make_repo(tmp_path)
    log = d.research_log.read_text()
    monkeypatch.setattr(tools, "MAX_READ_CHARS", 1000)
    assert len(log) > 3 * 1000  # the log takes several pages
    d.design.unlink()
    result = asyncio.run(review_once(runtime(d), "design-author", d, Limits()))
    assert result.results[0].status == "ok"
    design = d.design.read_text()
    bearing = load_research_log(d.research_log).load_bearing()
    assert bearing and all(f"**Source:** research-log D{x.number}" in design for x in bearing)


def test_a_design_that_cannot_be_read_whole_is_a_blocker_not_a_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = make_repo(tmp_path)
    monkeypatch.setattr(tools, "MAX_READ_CHARS", 2000)
    d.design.write_text(d.design.read_text() + "\n" + "word " * 1000 + "\n")
    result = asyncio.run(review_once(runtime(d), "comprehension-review", d, Limits()))
    review = result.results[0].review
    assert result.results[0].status == "ok" and review is not None
    assert review.verdict == "NEEDS REVISION"
    assert [f.rule for f in review.findings if f.severity == "blocker"] == ["unreadable-input"]


def test_the_offline_engine_reads_through_the_numbers_and_refuses_wrong_ones() -> None:
    from pipeline.offline.observe import Observations, Unreadable, call_id
    from pipeline.offline.pages import read_whole

    def seen(result: str) -> Observations:
        cid = call_id("read", {"path": "d.md"})
        return Observations(results={cid: result}, instructions="", available=frozenset({"read"}))

    assert read_whole(seen("1\t# T\n2\t\n3\tbody\n"), "d.md") == "# T\n\nbody\n"
    with pytest.raises(Unreadable, match="line 2 of a Read result does not start with '2\\\\t'"):
        read_whole(seen("1\t# T\n3\tbody\n"), "d.md")
