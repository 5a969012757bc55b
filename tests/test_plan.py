from __future__ import annotations

from pathlib import Path

import pytest
from conftest import EXAMPLE, write

from pipeline.errors import InputError
from pipeline.formats.design_doc import load_design
from pipeline.formats.plan import check_episodes, load_plan_file, load_tracks


def test_example_tracks_parse() -> None:
    tracks = load_tracks(EXAMPLE / "_workflow" / "plan")
    assert [t.path.name for t in tracks] == ["track-1.md", "track-2.md"]
    assert [e.title for e in tracks[0].decision_log] == ["Refill before every take", "Expire idle keys"]
    assert [e.title for e in tracks[1].episodes] == [
        "Episode 1: RateLimitMiddleware answers 429",
        "Episode 2: Local fallback replaces plain fail-open",
    ]
    from pipeline.formats.design_doc import load_design
    from pipeline.offline.supersede import find

    frozen = load_design(Path(__file__).parent / "corpus" / "base" / "design.md")
    found = find(frozen, [("track-2.md", e) for e in tracks[1].episodes])
    assert [(s.number, s.episode.title) for s in found] == [
        (3, "Episode 2: Local fallback replaces plain fail-open")
    ]
    refs = [(r.file, r.section) for r in tracks[1].refs]
    assert refs == [("design.md", "Buckets per tenant and route"), ("design.md", "When Redis is unreachable")]


def test_several_refs_on_one_line_and_fenced_refs_ignored(tmp_path: Path) -> None:
    plan = load_plan_file(
        write(
            tmp_path / "implementation-plan.md",
            '# P\n\n**Full design:** design.md §"A", design-mechanics.md §"B"\n\n'
            '```\n**Full design:** design.md §"C"\n```\n**Full design:** somewhere\n',
        )
    )
    assert [(r.line, r.file, r.section) for r in plan.refs] == [
        (3, "design.md", "A"),
        (3, "design-mechanics.md", "B"),
        (8, None, None),
    ]


def test_track_order_is_numeric(tmp_path: Path) -> None:
    for n in (10, 2, 1):
        write(tmp_path / f"track-{n}.md", f"# T{n}\n")
    assert [t.path.name for t in load_tracks(tmp_path)] == ["track-1.md", "track-2.md", "track-10.md"]


def test_design_structure_of_example() -> None:
    doc = load_design(Path(__file__).parent / "corpus" / "base" / "design.md")
    assert doc.title == (1, "Per-tenant request rate limiting")
    assert [s.name for s in doc.body_sections()] == [
        "Buckets per tenant and route",
        "Bucket state in Redis",
        "When Redis is unreachable",
    ]
    assert [(r.number, r.source) for r in doc.d_records()] == [(1, 1), (2, 2), (3, 3), (6, 6)]
    assert [a.name for a in doc.anchors()] == ["Overview", "Core Concepts"]


def test_parts_group_sections(tmp_path: Path) -> None:
    doc = load_design(
        write(tmp_path / "d.md", "# T\n\n## Overview\n\n# Part 1: Core\n\n## A\n\n# Part 2: Edge\n\n## B\n")
    )
    assert [(s.name, s.part) for s in doc.level2()] == [
        ("Overview", None),
        ("A", "Part 1: Core"),
        ("B", "Part 2: Edge"),
    ]


EPISODE_SHAPES = {
    "headings": "### Step 1: The bucket landed\nIt takes tokens.\n\n### Step 2: Redis\nA script runs.\n",
    "bullets": "- **The bucket landed:** it takes tokens.\n- Redis runs a Lua script\n  that returns the tokens.\n",
    "numbered": "1. The bucket landed. It takes tokens.\n2. Redis runs a Lua script.\n",
    "paragraphs": "The bucket landed; it takes tokens.\n\nRedis runs a Lua script:\nit returns the tokens.\n",
}


@pytest.mark.parametrize("shape", list(EPISODE_SHAPES))
def test_episodes_in_any_reasonable_shape(tmp_path: Path, shape: str) -> None:
    text = f"# Track 1\n\n## Decision Log\n\n## Episodes\n\n{EPISODE_SHAPES[shape]}\n## Notes\n\nNot an episode.\n"
    track = load_plan_file(write(tmp_path / "track-1.md", text))
    assert len(track.episodes) == 2
    second = track.episodes[1].title + " " + track.episodes[1].body
    assert "Redis" in second and "Not an episode" not in second
    assert all(e.title and e.line > 5 for e in track.episodes)
    if shape == "paragraphs":  # a paragraph's colon is a lead-in, not a title
        assert [e.title for e in track.episodes] == ["Episode 1", "Episode 2"]
    if shape == "bullets":
        assert [e.title for e in track.episodes] == ["The bucket landed", "Episode 2"]
    check_episodes(track)  # no error


def test_episodes_with_text_but_no_episode_are_bad_input(tmp_path: Path) -> None:
    text = "# Track 1\n\n## Episodes\n\n| when | what |\n| --- | --- |\n| May | the bucket |\n"
    track = load_plan_file(write(tmp_path / "track-1.md", text))
    with pytest.raises(InputError, match="no episode") as caught:
        check_episodes(track)
    assert caught.value.file == str(tmp_path / "track-1.md") and caught.value.line == 3
    empty = load_plan_file(write(tmp_path / "track-2.md", "# Track 2\n\n## Episodes\n\n<!-- none yet -->\n"))
    check_episodes(empty)  # nothing written there yet: no episode, and no error
    assert empty.episodes == []
