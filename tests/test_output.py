"""What a table looks like: on a narrow terminal an id or a path is never broken (free text is
ellipsised instead; --json has it all); in a pipe, pure TSV with the header on line 1."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from pipeline.cli.output import relative_text, rich_table, table

RUN = "20261202-144933-p1-b16046"
DIRECTORY = "docs/adr/0001-request-rate-limiter-with-a-long-name"


def test_on_an_80_column_terminal_ids_stay_whole_and_free_text_is_ellipsised() -> None:
    rows = [[RUN, "phase1-creation", "finished", "PASS", DIRECTORY, "a why that runs on " * 8]]
    out = io.StringIO()
    Console(file=out, width=80, force_terminal=True, color_system=None).print(
        rich_table(("run", "kind", "state", "outcome", "directory", "why"), rows, width=80)
    )
    shown = out.getvalue()
    assert any(RUN in line for line in shown.splitlines()), shown
    folded = "".join(line.split("│")[5].strip() for line in shown.splitlines()[3:-1])
    assert folded == DIRECTORY, shown  # a path folds onto more lines, never cut
    assert "…" in shown  # the free text gave way
    assert all(len(line) <= 80 for line in shown.splitlines())


def test_in_a_pipe_a_table_is_pure_tsv_and_its_title_goes_to_stderr(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    table(("run", "why"), [[RUN, "tab\there"]], title="batch 20261202")
    out, err = capsys.readouterr()
    assert out.splitlines() == ["run\twhy", f"{RUN}\ttab here"]
    assert err == "batch 20261202\n"


def test_messages_name_no_machines_folders() -> None:
    from pathlib import Path

    text = "/home/ci/work/repo/docs/adr/a/_workflow/research-log.md:3: no decision"
    assert (
        relative_text(text, Path("/home/ci/work/repo"))
        == "docs/adr/a/_workflow/research-log.md:3: no decision"
    )
