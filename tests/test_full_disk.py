"""A full disk is bad input: exit 2 naming the path (and the space needed where known), nothing
half-written or left behind, and a store it filled is never taken for damaged.

Two ways in: a real small tmpfs (mounting one needs root; skipped with the reason otherwise),
and a fault-injecting write layer that runs anywhere."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import sqlite3
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from agentkit import make_repo
from conftest import STAMP, run_cli
from test_store import snapshot

import pipeline.runs.setup as setup
from pipeline.errors import ExitCode, InputError
from pipeline.formats.database import check_database
from pipeline.formats.design_dir import DesignDir

SIZE = 4 << 20


def _mount(point: Path) -> str | None:
    """Mount a small tmpfs at ``point``; the reason it cannot be, else None."""
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root"
    point.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(point)],
        capture_output=True,
        text=True,
        check=False,
    )
    return None if done.returncode == 0 else f"mount -t tmpfs failed: {done.stderr.strip()}"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    point = tmp_path / f"disk-{uuid.uuid4().hex[:6]}"
    reason = _mount(point)
    if reason is not None:
        pytest.skip(reason)
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], check=False)


def _fill(disk: Path, leave: int) -> Path:
    """Fill ``disk`` until ``leave`` bytes are free; the filler file, to free it again."""
    filler = disk / "filler"
    stat = os.statvfs(disk)
    size = max(0, stat.f_bavail * stat.f_frsize - leave)
    with filler.open("wb") as handle, contextlib.suppress(OSError):
        handle.write(b"\0" * size)
    return filler


def _repo(disk: Path) -> DesignDir:
    return make_repo(disk)


def _no_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    """The disk fills after the pre-flight measured it (another process wrote): no estimate."""
    monkeypatch.setattr(setup, "check_run_space", lambda *a, **k: None)


def _debris(root: Path) -> list[str]:
    """Locks, half-started runs and temporary files: what a failed run must never leave."""
    found = []
    for path in root.rglob("*"):
        name = path.name
        if name.endswith((".lock", ".tmp")) or (name.startswith(".") and name.endswith(".partial")):
            found.append(str(path.relative_to(root)))
    return sorted(found)


COMMANDS: dict[str, Callable[[DesignDir], list[str]]] = {
    "create": lambda d: ["create", str(d.root)],
    "final": lambda d: ["final", str(d.root)],
    "edit": lambda d: [
        "edit",
        str(d.root),
        "--kind",
        "content-edit",
        "--section",
        "Overview",
        "--instruction",
        "shorter",
    ],
    "review": lambda d: ["review", "comprehension-review", str(d.root)],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_full_disk_is_refused_before_anything_is_written(small_disk: Path, command: str) -> None:
    d = _repo(small_disk)
    runs = small_disk / "repo" / "runs"
    _fill(small_disk, 0)
    before = snapshot(small_disk)
    result = run_cli([*COMMANDS[command](d), "--runs-dir", str(runs)])
    assert result.code == ExitCode.BAD_INPUT, (result.code, result.err)
    assert "no space left on the device" in result.err and "what to do:" in result.err
    # The estimate names the space a run needs (an edit meets the full disk at its lock first).
    assert "needed" in result.err or command == "edit"
    assert "internal error" not in result.err and snapshot(small_disk) == before


def test_check_fix_on_a_full_disk_changes_nothing(small_disk: Path) -> None:
    design = small_disk / "design.md"
    design.write_text(f"{STAMP}\n# T\n\n## Overview\n\nIt works (per D27).\n")
    _fill(small_disk, 0)
    before = snapshot(small_disk)
    result = run_cli(["check", "--design-path", str(design), "--fix"])
    assert result.code == ExitCode.BAD_INPUT and "no space left on the device" in result.err, result.err
    assert snapshot(small_disk) == before


LEVELS = [0, 16 << 10, 64 << 10, 160 << 10, 256 << 10, 320 << 10, 400 << 10, 480 << 10]


@pytest.mark.parametrize("leave", LEVELS, ids=lambda n: f"{n >> 10}K")
@pytest.mark.parametrize("command", ["create", "final", "edit"])
def test_a_disk_that_fills_during_a_run_stops_it_cleanly_and_it_resumes(
    small_disk: Path, monkeypatch: pytest.MonkeyPatch, command: str, leave: int
) -> None:
    d = _repo(small_disk)
    runs = small_disk / "repo" / "runs"
    if command != "create":
        assert run_cli(["create", str(d.root), "--runs-dir", str(runs), "--json"]).code == 0
    entries = d.mutations.read_text().count("## Mutation") if d.mutations.exists() else 0
    earlier = _debris(small_disk)  # what the finished create left, if anything
    _no_estimate(monkeypatch)
    filler = _fill(small_disk, leave)
    result = run_cli([*COMMANDS[command](d), "--runs-dir", str(runs), "--json"])
    assert result.code != ExitCode.INTERNAL and "internal error" not in result.err, result.err
    assert _debris(small_disk) == earlier  # the failure left nothing of its own
    filler.unlink()
    if result.code == ExitCode.BAD_INPUT:
        assert "no space left on the device" in result.err and "what to do:" in result.err
        if "designloop resume" in result.err:
            run_id = result.err.split("designloop resume ", 1)[1].split()[0]
            result = run_cli(["resume", run_id, "--runs-dir", str(runs), "--json"])
        else:
            result = run_cli([*COMMANDS[command](d), "--runs-dir", str(runs), "--json"])
    # Once there is room, the run finishes: the store was never taken for damaged.
    assert result.code in (ExitCode.OK, ExitCode.FINDINGS), result.err
    assert json.loads(result.out)["outcome"] != "STOPPED"
    assert d.mutations.read_text().count("## Mutation") == entries + 1
    # What a finished run leaves is its own matter (the review log's append lock, in the runs
    # directory's locks/, never in the design directory); none of it comes from the failure.
    own = re.compile(r"repo/runs/locks/review-log-[0-9a-f]+\.lock")
    assert [p for p in _debris(small_disk) if not own.fullmatch(p)] == []
    assert all(own.fullmatch(p) for p in earlier)


class FullAfter:
    """A write layer that runs out of space after ``writes`` more writes of designloop's own."""

    def __init__(self, writes: int) -> None:
        self.left = writes

    def spend(self, path: object) -> None:
        self.left -= 1
        if self.left < 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


@pytest.fixture
def injected(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], FullAfter]:
    """Every designloop write site (atomic writes, event lines, the lock's holder) fails with
    ENOSPC once its count is spent: the fault-injecting wrapper, for machines without tmpfs."""
    import pipeline.formats.textio as textio
    import pipeline.runs.event_log as events
    import pipeline.runs.lock as lock

    def install(writes: int) -> FullAfter:
        fault = FullAfter(writes)
        real_replace, real_append, real_name = textio._replace, events._append, lock.FileRunLock._name

        def replace(path: Path, data: bytes) -> None:
            fault.spend(path)
            real_replace(path, data)

        def append(fd: int, line: bytes, path: Path) -> None:
            fault.spend(path)
            real_append(fd, line, path)

        def name(self: lock.FileRunLock, fd: int, holder: lock.Holder) -> None:
            fault.spend(self.path)
            real_name(self, fd, holder)

        monkeypatch.setattr(textio, "_replace", replace)
        monkeypatch.setattr(events, "_append", append)
        monkeypatch.setattr(lock.FileRunLock, "_name", name)
        return fault

    return install


@pytest.mark.parametrize("writes", [0, 1, 2, 3, 4, 6, 9, 14, 20])
def test_a_write_layer_out_of_space_is_bad_input_and_leaves_no_debris(
    tmp_path: Path, injected: Callable[[int], FullAfter], writes: int
) -> None:
    d = make_repo(tmp_path)
    d.design.unlink()
    runs = tmp_path / "runs"
    injected(writes)
    result = run_cli(["create", str(d.root), "--runs-dir", str(runs), "--json"])
    assert result.code == ExitCode.BAD_INPUT, (result.code, result.err)
    assert "no space left on the device" in result.err and "what to do:" in result.err
    assert _debris(tmp_path) == []
    if runs.exists():  # a run left behind is one that can go on, and says so
        left = [p for p in runs.iterdir() if p.is_dir() and p.name[0].isdigit()]
        assert not left or "designloop resume" in result.err


def test_a_store_whose_pages_are_in_its_write_ahead_log_is_not_damaged(tmp_path: Path) -> None:
    """The main file shorter than its header says and every page in the WAL, as a full disk can
    leave it: SQLite reads it whole, so the pre-flight takes it as whole; the same file without
    its WAL is damaged, and is named so."""
    path = tmp_path / "checkpoints.sqlite"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA wal_autocheckpoint=0")
    db.execute("CREATE TABLE t (x BLOB)")
    for _ in range(40):
        db.execute("INSERT INTO t VALUES (?)", (os.urandom(2000),))
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.execute("VACUUM")  # in WAL mode: every page of the new file goes to the WAL
    copy = tmp_path / "copy"
    copy.mkdir()
    for suffix in ("", "-wal"):
        (copy / f"checkpoints.sqlite{suffix}").write_bytes(Path(f"{path}{suffix}").read_bytes())
    db.close()
    main = copy / "checkpoints.sqlite"
    main.write_bytes(main.read_bytes()[:4096])  # the header says 22 pages; the file holds one
    check_database(main, "checkpoint store")
    with sqlite3.connect(f"file:{main}?mode=ro", uri=True) as reader:
        assert reader.execute("SELECT count(*) FROM t").fetchone() == (40,)
    (copy / "checkpoints.sqlite-wal").unlink()
    (copy / "checkpoints.sqlite-shm").unlink(missing_ok=True)
    with pytest.raises(InputError, match="cut short"):
        check_database(main, "checkpoint store")
