"""A run's view is kept beside its event log by the run that writes it: read again, an unchanged
log is not replayed and the view is the one its replay gives; a log another writer added to, a
kept view that does not parse or was made by other code is replayed instead. Reading a view
never writes anything."""

from __future__ import annotations

import threading
from decimal import Decimal
from pathlib import Path

import pytest

import pipeline.runs.replay
import pipeline.runs.views
from pipeline.formats.findings import Finding
from pipeline.runs.check_events import DualCleanCheck
from pipeline.runs.event_fields import RevisionRef
from pipeline.runs.event_log import EventLog
from pipeline.runs.events import (
    Discarded,
    Finished,
    Paused,
    RevisionRecorded,
    RoundStarted,
    RunStarted,
    Spawned,
    Started,
    Wrote,
)
from pipeline.runs.views import VIEW, ViewKeeper, list_runs, read_view, replayed

FOUND = Finding(severity="should-fix", rule="ra-length", message="long", line=3, quote="q", section="S")


def kept_log(run_dir: Path) -> EventLog:
    log = EventLog(run_dir)
    log.subscribe(ViewKeeper(run_dir))
    return log


def finished_run(run_dir: Path) -> None:
    """A run whose log holds every kind of event a view takes something from; its first line
    written before the keeper listens (as a run's start is)."""
    EventLog(run_dir).emit(
        RunStarted(run_kind="phase1-creation", directory="docs/adr/a", models={"design-author": "offline"})
    )
    log = kept_log(run_dir)
    log.emit(Started(type="start", budget_tokens=1000))
    log.emit(RoundStarted(round=1, budget=3))
    log.emit(Spawned(round=1, role="design-author", status="ok", tokens=900, cost_usd=Decimal("0.0123")))
    log.emit(
        Spawned(round=1, role="readability-auditor", status="ok", slice=(1, 40), calls=2, model="openai:x")
    )
    log.emit(DualCleanCheck(round=1, clean=False, found=[FOUND]))
    log.emit(Wrote(files={"docs/adr/a/_workflow/design.md": "ab" * 32}))
    log.emit(
        RevisionRecorded(
            files={"design": RevisionRef(number=2, sha256="cd" * 32, path="_workflow/design.md")}
        )
    )
    log.emit(Finished(outcome="SHOULD-FIX REMAINS", line="SHOULD-FIX REMAINS", findings=[FOUND]))


def replays(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The run ids replayed from here on."""
    done: list[str] = []
    real = pipeline.runs.replay.replay

    def counted(run_id: str, events: list[object]) -> object:
        done.append(run_id)
        return real(run_id, events)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline.runs.replay, "replay", counted)
    return done


def test_the_run_keeps_its_view_and_reading_it_replays_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = tmp_path / "20261201-000000-p1-abcdef"
    finished_run(run_dir)
    done = replays(monkeypatch)
    view = read_view(run_dir)
    assert done == []  # read from the kept view
    assert view == replayed(run_dir) and view.to_json() == replayed(run_dir).to_json()
    assert view.findings == [FOUND] and view.revisions["design"].number == 2
    assert view.spawns["1:readability-auditor:[1, 40]"].slice == (1, 40) and view.cost == Decimal("0.0123")
    assert view.unpriced == ["openai:x"] and view.state == "finished"
    assert [p.name for p in run_dir.iterdir() if p.name.startswith(VIEW)] == [VIEW]  # no temporary left


def test_reading_a_view_writes_nothing(tmp_path: Path) -> None:
    run_dir = tmp_path / "20261201-000000-p1-abcdef"
    log = EventLog(run_dir)  # a writer that keeps no view
    log.emit(RunStarted(run_kind="phase1-creation", directory="docs/adr/a"))
    log.emit(Paused(message="the gate is open"))
    before = sorted(p.name for p in run_dir.iterdir())
    assert read_view(run_dir).state == "paused" and list_runs(tmp_path)[0].state == "paused"
    assert sorted(p.name for p in run_dir.iterdir()) == before


def test_another_writer_a_damaged_or_foreign_kept_view_is_replayed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = tmp_path / "20261201-000000-p1-abcdef"
    log = kept_log(run_dir)
    log.emit(RunStarted(run_kind="phase1-creation", directory="docs/adr/a"))
    log.emit(Paused(message="the gate is open"))
    done = replays(monkeypatch)
    assert read_view(run_dir).state == "paused" and done == []
    EventLog(run_dir).emit(Discarded(message="withdrawn"))  # a writer that keeps no view
    assert read_view(run_dir).state == "discarded" and len(done) == 1
    log.emit(Started(type="resume"))  # the keeper finds a line it was not told of: replays whole
    assert len(done) == 2
    assert read_view(run_dir).state == "discarded" and len(done) == 2
    (run_dir / VIEW).write_text("{not json")
    assert read_view(run_dir).state == "discarded" and len(done) == 3
    log.emit(RoundStarted(round=1))  # told of its own line only: applied, not replayed
    assert len(done) == 3
    kept = (run_dir / VIEW).read_text()
    (run_dir / VIEW).write_text(kept.replace(pipeline.runs.views._code(), "0" * 64))
    assert read_view(run_dir).round == 1 and len(done) == 4


def test_a_kept_view_of_another_run_is_not_taken(tmp_path: Path) -> None:
    one, other = tmp_path / "20261201-000000-p1-aaaaaa", tmp_path / "20261201-000001-p1-bbbbbb"
    finished_run(one)
    EventLog(other).emit(RunStarted(run_kind="phase4-creation", directory="docs/adr/b"))
    (other / VIEW).write_bytes((one / VIEW).read_bytes())  # copied by hand: not this log's
    assert read_view(other).kind == "phase4-creation"


def test_events_written_from_several_threads_keep_the_view_their_replay_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = tmp_path / "20261201-000000-p1-abcdef"
    log = kept_log(run_dir)
    log.emit(RunStarted(run_kind="phase1-creation", directory="docs/adr/a"))

    def spawns(role: str) -> None:
        for number in range(20):
            log.emit(Spawned(round=number, role=role, status="ok", tokens=number))  # type: ignore[arg-type]

    threads = [threading.Thread(target=spawns, args=(r,)) for r in ("design-author", "absorption-check")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    log.emit(Finished(outcome="PASS", line="PASS"))
    done = replays(monkeypatch)
    view = read_view(run_dir)
    assert done == [] and view == replayed(run_dir)
    assert view.tokens == 2 * sum(range(20)) and len(view.spawns) == 40


def test_the_listing_settles_a_kept_running_view(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    finished_run(runs / "20261201-000000-p1-aaaaaa")
    running = kept_log(runs / "20261201-000001-p1-bbbbbb")
    running.emit(RunStarted(run_kind="phase1-creation", directory="x"))
    running.emit(Started(type="start"))
    got = [(v.run_id, v.state) for v in list_runs(runs)]
    assert got == [("20261201-000000-p1-aaaaaa", "finished"), ("20261201-000001-p1-bbbbbb", "interrupted")]
