"""The event log as typed records: every line is read back through one TypeAdapter; a type this
designloop does not know is kept as it is; a known type without its fields is damage."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from pipeline.errors import InputError
from pipeline.formats.findings import Finding
from pipeline.runs.check_events import ColdReadCheck, DualCleanCheck, OtherCheck
from pipeline.runs.event_log import EVENTS, EventLog, events_of, read_events
from pipeline.runs.events import Finished, RawEvent, RoundStarted, Spawned, Started, Stopped
from pipeline.runs.replay import replay


def _lines(run_dir: Path, *events: dict[str, object]) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / EVENTS).write_text("".join(json.dumps(e) + "\n" for e in events))


def test_each_event_reads_back_as_the_model_it_was_written_from(tmp_path: Path) -> None:
    log = EventLog(tmp_path)
    found = Finding(severity="blocker", rule="x", message="m", line=3, quote="q")
    written = [
        log.emit(Started(type="resume", budget_tokens=10)),
        log.emit(RoundStarted(round=2, budget=3)),
        log.emit(
            Spawned(round=2, role="readability-auditor", status="ok", slice=(1, 40), cost_usd=Decimal("0.25"))
        ),
        log.emit(DualCleanCheck(round=2, clean=False, found=[found])),
        log.emit(ColdReadCheck(round=2, check="comprehension-review", verdict="PASS")),
        log.emit(Finished(outcome="PASS", line="PASS", findings=[found])),
    ]
    assert read_events(tmp_path) == written
    line = json.loads((tmp_path / EVENTS).read_text().splitlines()[2])
    assert line["type"] == "spawn" and line["cost_usd"] == "0.25" and line["slice"] == [1, 40]


def test_a_type_or_check_it_does_not_know_is_kept_as_it_is(tmp_path: Path) -> None:
    _lines(
        tmp_path,
        {"time": "t", "pid": 1, "type": "run_start", "run_kind": "phase1-creation", "directory": "d"},
        {"time": "t", "pid": 1, "type": "telemetry", "answer": 42},
        {"time": "t", "pid": 1, "type": "check", "round": 1, "check": "spelling", "misses": 3},
        {"time": "t", "pid": 1, "type": "round", "round": 1},
    )
    events = read_events(tmp_path)
    assert isinstance(events[1], RawEvent) and events[1].model_dump()["answer"] == 42
    assert isinstance(events[2], OtherCheck) and events[2].details()["misses"] == 3
    view = replay(tmp_path.name, events)
    assert view.kind == "phase1-creation" and view.round == 1 and view.checks[0]["check"] == "spelling"


def test_an_older_log_without_the_newer_fields_reads(tmp_path: Path) -> None:
    # A spawn line as an earlier designloop wrote it: no model, calls, reads, and a float cost.
    _lines(
        tmp_path,
        {
            "time": "t",
            "pid": 1,
            "type": "spawn",
            "round": 1,
            "role": "design-author",
            "status": "ok",
            "cost_usd": 0.5,
        },
        {
            "time": "t",
            "pid": 1,
            "type": "spawn",
            "round": 1,
            "role": "fidelity-check",
            "status": "ok",
            "cost_usd": None,
        },
        {
            "time": "t",
            "pid": 1,
            "type": "stopped",
            "message": "budget",
            "partial": {"total_tokens": 7, "cost_usd": "1"},
        },
    )
    spawns = events_of(tmp_path, Spawned)
    assert [s.cost_usd for s in spawns] == [Decimal("0.5"), Decimal(0)] and spawns[0].reads == []
    view = replay(tmp_path.name, read_events(tmp_path))
    assert (
        view.cost == Decimal("1.5")
        and view.tokens == 7
        and events_of(tmp_path, Stopped)[0].message == "budget"
    )
    assert view.to_json()["cost_usd"] == "1.5"


def test_a_known_type_without_its_fields_is_named_by_its_line(tmp_path: Path) -> None:
    _lines(
        tmp_path,
        {"time": "t", "pid": 1, "type": "round", "round": 1},
        {"time": "t", "pid": 1, "type": "spawn", "round": 1, "status": "ok"},
    )
    with pytest.raises(InputError) as caught:
        read_events(tmp_path)
    assert caught.value.line == 2 and "spawn event: role: Field required" in caught.value.message
