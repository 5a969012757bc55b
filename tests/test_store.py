"""A damaged run store is named, never silently restarted: exit 2, what to do, nothing changed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from agentkit import make_repo
from conftest import run_cli
from graphkit import go, start

from pipeline.errors import ExitCode
from pipeline.formats.database import check_database
from pipeline.runs.event_log import EventLog
from pipeline.runs.events import RoundStarted


def snapshot(root: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes())
        for p in sorted(root.rglob("*"))
        if not p.name.endswith(("-wal", "-shm"))
    }


def _run_to_the_gate(tmp_path: Path) -> Path:
    """A run that got as far as the adversarial gate (exit 3), so it has checkpoints to lose."""
    d = make_repo(tmp_path)
    log = d.research_log.read_text().replace("— PASS", "— NEEDS REVISION\n- [ ] blocker: open item")
    d.research_log.write_text(log)
    run_dir = start(d, tmp_path)
    assert go(run_dir).exit_code == ExitCode.GATE_PAUSED
    return run_dir


def _delete(store: Path) -> None:
    store.unlink()


def _empty(store: Path) -> None:
    store.write_bytes(b"")


def _garbage(store: Path) -> None:
    store.write_bytes(b"this is not a database\n" * 400)


def _truncate(store: Path) -> None:
    store.write_bytes(store.read_bytes()[:4096])


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        (_delete, "has no checkpoint"),
        (_empty, "has no checkpoint"),
        (_garbage, "not an SQLite database"),
        (_truncate, "cut short"),
    ],
)
def test_a_damaged_checkpoint_store_is_named_not_restarted(
    tmp_path: Path, damage: Callable[[Path], None], words: str
) -> None:
    run_dir = _run_to_the_gate(tmp_path)
    store = tmp_path / "runs" / "checkpoints.sqlite"
    for suffix in ("-wal", "-shm"):
        assert not Path(str(store) + suffix).exists()
    damage(store)
    before = snapshot(tmp_path)
    result = run_cli(["resume", run_dir.name, "--runs-dir", str(tmp_path / "runs")])
    assert result.code == ExitCode.BAD_INPUT, result.err
    assert words in result.err and "what to do:" in result.err and "Traceback" not in result.err
    assert snapshot(tmp_path) == before
    assert not any(e for e in run_dir.joinpath("events.jsonl").read_text().splitlines() if '"resume"' in e)


def test_a_damaged_cache_is_named_before_a_run_starts(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    cache = tmp_path / "runs" / "cache"
    cache.mkdir(parents=True)
    (cache / "cache.db").write_bytes(b"\x00garbage" * 100)
    before = snapshot(tmp_path)
    result = run_cli(["create", str(d.root), "--runs-dir", str(tmp_path / "runs")])
    assert result.code == ExitCode.BAD_INPUT
    assert "model-call cache is damaged" in result.err and "mv " in result.err
    assert snapshot(tmp_path) == before


def test_the_header_check_reads_a_whole_database_as_whole(tmp_path: Path) -> None:
    _run_to_the_gate(tmp_path)
    check_database(tmp_path / "runs" / "checkpoints.sqlite", "checkpoint store")  # no error
    check_database(tmp_path / "nothing.sqlite", "checkpoint store")  # a missing store is a new one


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"{not json", "the run record is damaged"),
        (b"\xff\xfe\x00", "the run record is damaged"),
        (b"[1, 2]", "not a JSON object"),
    ],
)
def test_a_damaged_run_record_is_named(tmp_path: Path, content: bytes, words: str) -> None:
    run_dir = _run_to_the_gate(tmp_path)
    (run_dir / "run.json").write_bytes(content)
    before = snapshot(tmp_path)
    result = run_cli(["resume", run_dir.name, "--runs-dir", str(tmp_path / "runs")])
    assert result.code == ExitCode.BAD_INPUT and words in result.err and "what to do:" in result.err
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    "line",
    [b'{"type": "round", "round": "x\xff"}\n', b"[1, 2]\n", b'{"type": "spawn"}\n', b"{broken\n"],
)
def test_a_damaged_event_line_is_named_and_runs_skips_the_run(tmp_path: Path, line: bytes) -> None:
    runs = tmp_path / "runs"
    healthy = _run_to_the_gate(tmp_path)
    other = start(make_repo(tmp_path / "second"), tmp_path)
    with (other / "events.jsonl").open("ab") as handle:
        handle.write(line)
    EventLog(other).emit(RoundStarted(round=1))
    before = snapshot(tmp_path)
    status = run_cli(["status", other.name, "--runs-dir", str(runs)])
    assert status.code == ExitCode.BAD_INPUT, status.err
    assert "events.jsonl:2: the run's event log is damaged" in status.err and "what to do:" in status.err
    listing = run_cli(["runs", "--runs-dir", str(runs), "--json"])
    assert listing.code == ExitCode.OK
    assert [v["run_id"] for v in json.loads(listing.out)["runs"]] == [healthy.name]
    assert "warning: skipped a damaged run" in listing.err and other.name in listing.err
    assert snapshot(tmp_path) == before


def test_a_line_cut_off_by_a_kill_is_not_damage(tmp_path: Path) -> None:
    run_dir = _run_to_the_gate(tmp_path)
    with (run_dir / "events.jsonl").open("ab") as handle:
        handle.write(b'{"type": "spawn", "rou')
    result = run_cli(["status", run_dir.name, "--runs-dir", str(tmp_path / "runs"), "--json"])
    assert result.code == ExitCode.OK and json.loads(result.out)["state"] == "paused"
