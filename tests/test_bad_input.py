"""The bad-input contract across every command: exit 2, no traceback, a message that says what
to do, and no file created or changed anywhere (the repository and the runs directory are
snapshotted before and after)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from agentkit import make_repo
from conftest import run_cli
from graphkit import go, start
from test_store import snapshot

from pipeline.errors import ExitCode
from pipeline.formats.design_dir import DesignDir
from pipeline.runs.lock import FileRunLock, holder_for

NON_UTF8 = b"# Title\n\n## Overview\n\ncaf\xe9\n"


@dataclass
class World:
    tmp: Path
    d: DesignDir

    @property
    def dir(self) -> str:
        return str(self.d.root)

    @property
    def runs(self) -> Path:
        return self.tmp / "runs"

    def rd(self) -> list[str]:
        return ["--runs-dir", str(self.runs)]

    def paused_run(self) -> Path:
        """A run that stopped at an open adversarial gate, with its checkpoints."""
        log = self.d.research_log.read_text().replace("— PASS", "— NEEDS REVISION\n- [ ] blocker: open")
        self.d.research_log.write_text(log)
        run_dir = start(self.d, self.tmp)
        assert go(run_dir).exit_code == ExitCode.GATE_PAUSED
        return run_dir


Case = Callable[[World], list[str]]


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _bad_review_log(w: World) -> None:
    _write(w.d.mutations, b"# Review log\n\n## Mutation one - yesterday\n")


def _reviews_file(w: World) -> None:
    _write(w.d.reviews, b"not a directory\n")


def _open_gate_log(w: World) -> None:
    _write(w.d.research_log, b"# L\n\n## Adversarial gate record\n\n### Nov 20 - PASS\n")


def _runs_file(w: World) -> list[str]:
    _write(w.tmp / "runs-file", b"x")
    return ["--runs-dir", str(w.tmp / "runs-file")]


def _held(w: World) -> None:
    lock = FileRunLock(w.d.root)
    lock.acquire(holder_for("20260101-000000-p1-dddddd"))
    HELD.append(lock)


HELD: list[FileRunLock] = []


def _resume(w: World, damage: Callable[[Path], None] | None = None, *extra: str) -> list[str]:
    run_dir = w.paused_run()
    if damage is not None:
        damage(run_dir)
    return ["resume", run_dir.name, *w.rd(), *extra]


def _status(w: World, damage: Callable[[Path], None]) -> list[str]:
    run_dir = w.paused_run()
    damage(run_dir)
    return ["status", run_dir.name, *w.rd()]


def _events_line(line: bytes) -> Callable[[Path], None]:
    def damage(run_dir: Path) -> None:
        with (run_dir / "events.jsonl").open("ab") as handle:
            handle.write(line + b"\n")

    return damage


def _record(data: bytes) -> Callable[[Path], None]:
    return lambda run_dir: _write(run_dir / "run.json", data) and None


def _store(data: bytes | None) -> Callable[[Path], None]:
    def damage(run_dir: Path) -> None:
        store = run_dir.parent / "checkpoints.sqlite"
        if data is None:
            store.unlink()
        else:
            store.write_bytes(data)

    return damage


CASES: dict[str, Case] = {
    # check
    "check: nothing to check": lambda w: ["check"],
    "check: missing directory": lambda w: ["check", str(w.tmp / "nope")],
    "check: missing design": lambda w: ["check", "--design-path", str(w.tmp / "nope.md")],
    "check: design is a directory": lambda w: ["check", "--design-path", str(w.tmp)],
    "check: non-UTF-8 design": lambda w: ["check", "--design-path", str(_write(w.tmp / "x.md", NON_UTF8))],
    "check: bad --target": lambda w: ["check", w.dir, "--target", "sideways"],
    "check: bounded without section": lambda w: ["check", w.dir, "--scope", "bounded"],
    "check: both without companion": lambda w: ["check", w.dir, "--target", "both"],
    "check: bad --format": lambda w: ["check", w.dir, "--format", "yaml"],
    "check: unknown option": lambda w: ["check", w.dir, "--frobnicate"],
    "check: --fix with unreadable companion": lambda w: [
        "check",
        "--design-path",
        str(w.d.design),
        "--design-mechanics-path",
        str(_write(w.tmp / "m.md", b"# M\n\xff\n")),
        "--fix",
    ],
    "check: bad repository params": lambda w: (
        _write(w.d.repo_root / "designloop.toml", b"[partition\n") and ["check", w.dir]
    ),
    # slices
    "slices: missing path": lambda w: ["slices", str(w.tmp / "nope.md")],
    "slices: --window 0": lambda w: ["slices", w.dir, "--window", "0"],
    "slices: --window not a number": lambda w: ["slices", w.dir, "--window", "abc"],
    "slices: --cap negative": lambda w: ["slices", w.dir, "--cap", "-3"],
    "slices: empty design": lambda w: ["slices", str(_write(w.tmp / "e.md", b""))],
    "slices: non-UTF-8 design": lambda w: ["slices", str(_write(w.tmp / "x.md", NON_UTF8))],
    "slices: no argument": lambda w: ["slices"],
    # gate
    "gate: missing log": lambda w: ["gate", str(w.tmp / "nope.md")],
    "gate: malformed heading": lambda w: _open_gate_log(w) or ["gate", w.dir],
    "gate: impossible date": lambda w: [
        "gate",
        str(_write(w.tmp / "l.md", b"# L\n\n## Adversarial gate record\n\n### 2026-02-30 - PASS\n")),
    ],
    "gate: duplicate decision": lambda w: [
        "gate",
        str(_write(w.tmp / "l.md", b"# L\n\n## Decision Log\n\n### D1: a\n\n### D1: b\n")),
    ],
    "gate: non-UTF-8 log": lambda w: ["gate", str(_write(w.tmp / "l.md", b"# L\n\xff\n"))],
    # roles
    "roles: unknown provider": lambda w: ["roles", "--model", "nosuch:model"],
    "roles: model without provider": lambda w: ["roles", "--model", "gpt-nothing"],
    "roles: unknown role": lambda w: ["roles", "--role-model", "nobody=offline"],
    "roles: role model not ROLE=MODEL": lambda w: ["roles", "--role-model", "design-author"],
    "roles: base URL not http": lambda w: ["roles", "--base-url", "ftp://host/v1"],
    "roles: broken role override": lambda w: (
        _write(w.d.repo_root / ".designloop" / "agents" / "design-author.md", b"no frontmatter\n")
        and ["roles"]
    ),
    # review
    "review: unknown role": lambda w: ["review", "nobody", w.dir],
    "review: another run holds the directory": lambda w: (
        _held(w) or ["review", "readability-auditor", w.dir, *w.rd()]
    ),
    "review: missing directory": lambda w: ["review", "readability-auditor", str(w.tmp / "nope")],
    "review: slice past the end": lambda w: ["review", "readability-auditor", w.dir, "--slice", "900-950"],
    "review: slice not START-END": lambda w: ["review", "readability-auditor", w.dir, "--slice", "abc"],
    "review: slice backwards": lambda w: ["review", "readability-auditor", w.dir, "--slice", "9-3"],
    "review: slice on another role": lambda w: ["review", "comprehension-review", w.dir, "--slice", "1-5"],
    "review: --budget 0": lambda w: ["review", "readability-auditor", w.dir, "--budget", "0"],
    "review: --max-cost NaN": lambda w: ["review", "readability-auditor", w.dir, "--max-cost", "NaN"],
    "review: --max-cost negative": lambda w: ["review", "readability-auditor", w.dir, "--max-cost", "-1"],
    "review: --max-cost words": lambda w: ["review", "readability-auditor", w.dir, "--max-cost", "lots"],
    "review: missing draft": lambda w: [
        "review",
        "comprehension-review",
        w.dir,
        "--draft",
        str(w.tmp / "no.md"),
    ],
    "review: unknown provider": lambda w: ["review", "comprehension-review", w.dir, "--model", "bogus:x"],
    "review: bad base URL": lambda w: ["review", "comprehension-review", w.dir, "--base-url", "localhost"],
    "review: reviews is a file": lambda w: _reviews_file(w) or ["review", "comprehension-review", w.dir],
    "review: malformed research log": lambda w: _open_gate_log(w) or ["review", "adversarial-review", w.dir],
    "review: --runs-dir is a file": lambda w: ["review", "comprehension-review", w.dir, *_runs_file(w)],
    "review: non-UTF-8 draft": lambda w: (
        _write(w.d.design, NON_UTF8) and ["review", "readability-auditor", w.dir]
    ),
    # create
    "create: missing directory": lambda w: ["create", str(w.tmp / "nope")],
    "create: no _workflow": lambda w: ["create", str(w.tmp)],
    "create: no directory argument": lambda w: ["create"],
    "create: unknown option": lambda w: ["create", w.dir, "--frobnicate"],
    "create: malformed research log": lambda w: _open_gate_log(w) or ["create", w.dir],
    "create: --budget 0": lambda w: ["create", w.dir, "--budget", "0"],
    "create: --budget negative": lambda w: ["create", w.dir, "--budget", "-5"],
    "create: --budget not a number": lambda w: ["create", w.dir, "--budget", "lots"],
    "create: --max-cost NaN": lambda w: ["create", w.dir, "--max-cost", "NaN"],
    "create: --max-cost Infinity": lambda w: ["create", w.dir, "--max-cost", "Infinity"],
    "create: --max-cost 0": lambda w: ["create", w.dir, "--max-cost", "0"],
    "create: unknown provider": lambda w: ["create", w.dir, "--model", "nosuch:model"],
    "create: provider without its key": lambda w: ["create", w.dir, "--model", "openai:gpt-5"],
    "create: bad role model": lambda w: ["create", w.dir, "--role-model", "comprehension-review=bogus:x"],
    "create: unknown role model role": lambda w: ["create", w.dir, "--role-model", "nobody=offline"],
    "create: base URL without scheme": lambda w: [
        "create",
        w.dir,
        "--model",
        "openai:x",
        "--base-url",
        "host:8000",
    ],
    "create: base URL ftp": lambda w: ["create", w.dir, "--base-url", "ftp://host/v1"],
    "create: base URL bad port": lambda w: ["create", w.dir, "--base-url", "http://host:port/v1"],
    "create: --runs-dir is a file": lambda w: ["create", w.dir, *_runs_file(w)],
    "create: --runs-dir under a file": lambda w: ["create", w.dir, "--runs-dir", str(w.d.design / "runs")],
    "create: non-UTF-8 design": lambda w: _write(w.d.design, NON_UTF8) and ["create", w.dir],
    "create: non-UTF-8 companion": lambda w: _write(w.d.mechanics, NON_UTF8) and ["create", w.dir],
    "create: malformed review log": lambda w: _bad_review_log(w) or ["create", w.dir],
    "create: non-UTF-8 review log": lambda w: _write(w.d.mutations, NON_UTF8) and ["create", w.dir],
    "create: reviews is a file": lambda w: _reviews_file(w) or ["create", w.dir],
    "create: damaged checkpoint store": lambda w: (
        _write(w.runs / "checkpoints.sqlite", b"junk" * 64) and ["create", w.dir, *w.rd()]
    ),
    "create: damaged cache": lambda w: (
        _write(w.runs / "cache" / "cache.db", b"junk" * 64) and ["create", w.dir, *w.rd()]
    ),
    "create: cache is a file": lambda w: _write(w.runs / "cache", b"x") and ["create", w.dir, *w.rd()],
    "create: code root outside the repository": lambda w: ["create", w.dir, "--code-root", "/"],
    "create: bad directory params": lambda w: (
        _write(w.d.root / "designloop.toml", b"code_root = [\n") and ["create", w.dir]
    ),
    "create: unknown repository setting": lambda w: (
        _write(w.d.repo_root / "designloop.toml", b"[run]\nspeed = 1\n") and ["create", w.dir]
    ),
    "create: a setting under both its names": lambda w: (
        _write(w.d.repo_root / "designloop.toml", b"[run]\nwarmup_delay = 5\nwarmup_cap = 5\n")
        and ["create", w.dir]
    ),
    "create: another run holds the directory": lambda w: _held(w) or ["create", w.dir, *w.rd()],
    # final
    "final: no frozen design": lambda w: w.d.design.unlink() or ["final", w.dir],
    "final: non-UTF-8 design": lambda w: _write(w.d.design, NON_UTF8) and ["final", w.dir],
    "final: unknown provider": lambda w: ["final", w.dir, "--model", "bogus:x"],
    "final: malformed review log": lambda w: _bad_review_log(w) or ["final", w.dir],
    # resume
    "resume: unknown run": lambda w: ["resume", "20260101-000000-p1-000000", *w.rd()],
    "resume: not a run id": lambda w: ["resume", "../etc", *w.rd()],
    "resume: run.json not JSON": lambda w: _resume(w, _record(b"{nope")),
    "resume: run.json not UTF-8": lambda w: _resume(w, _record(b"\xff\xfe")),
    "resume: run.json of an old format": lambda w: _resume(w, _record(b'{"run_id": "x"}')),
    "resume: checkpoint store deleted": lambda w: _resume(w, _store(None)),
    "resume: checkpoint store emptied": lambda w: _resume(w, _store(b"")),
    "resume: checkpoint store garbage": lambda w: _resume(w, _store(b"garbage" * 100)),
    "resume: --budget 0": lambda w: _resume(w, None, "--budget", "0"),
    "resume: --max-cost NaN": lambda w: _resume(w, None, "--max-cost", "NaN"),
    "resume: --runs-dir is a file": lambda w: ["resume", "x", *_runs_file(w)],
    "resume: directory held by another run": lambda w: _held(w) or _resume(w),
    # status and runs
    "status: unknown run": lambda w: ["status", "20260101-000000-p1-000000", *w.rd()],
    "status: no runs yet": lambda w: ["status", *w.rd()],
    "status: non-UTF-8 event line": lambda w: _status(w, _events_line(b'{"type": "round", "x": "\xff"}')),
    "status: event line not an object": lambda w: _status(w, _events_line(b"[1, 2]")),
    "status: event missing its fields": lambda w: _status(w, _events_line(b'{"type": "spawn"}')),
    "status: --runs-dir is a file": lambda w: ["status", *_runs_file(w)],
    "runs: --runs-dir is a file": lambda w: ["runs", *_runs_file(w)],
    "runs: unknown option": lambda w: ["runs", "--frobnicate"],
    # graph and the command itself
    "graph: extra argument": lambda w: ["graph", "extra"],
    "graph: unknown option": lambda w: ["graph", "--frobnicate"],
    "unknown command": lambda w: ["frobnicate"],
}


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    for name in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "DESIGNLOOP_MODEL",
        "OPENAI_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    d = make_repo(tmp_path)
    monkeypatch.chdir(d.repo_root)
    return World(tmp_path, d)


def test_the_campaign_is_at_least_sixty_cases_over_every_command() -> None:
    commands = {name.split(":")[0] for name in CASES}
    assert len(CASES) >= 60
    assert {
        "check",
        "slices",
        "gate",
        "roles",
        "review",
        "create",
        "final",
        "resume",
        "status",
        "runs",
    } <= commands
    assert any(name.startswith("graph") for name in CASES)


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_exits_2_with_what_to_do_and_writes_nothing(world: World, name: str) -> None:
    try:
        args = CASES[name](world)
        before = snapshot(world.tmp)
        result = run_cli(args)
        after = snapshot(world.tmp)
    finally:
        while HELD:
            HELD.pop().release()
    assert result.code == ExitCode.BAD_INPUT, (result.code, result.err, result.out[:300])
    assert "Traceback" not in result.err and "internal error" not in result.err
    assert "what to do:" in result.err, result.err
    assert after == before, sorted(set(after) ^ set(before)) or "a file changed"


@pytest.mark.skipif(os.geteuid() == 0, reason="the superuser writes into read-only directories")
@pytest.mark.parametrize("command", ["create", "final", "review"])
def test_a_read_only_design_directory_is_refused_up_front(world: World, command: str) -> None:
    args = [command, world.dir] if command != "review" else [command, "comprehension-review", world.dir]
    os.chmod(world.d.workflow, 0o555)
    try:
        before = snapshot(world.tmp)
        result = run_cli([*args, *world.rd()])
        assert result.code == ExitCode.BAD_INPUT and "what to do:" in result.err
        assert snapshot(world.tmp) == before
    finally:
        os.chmod(world.d.workflow, 0o755)


@pytest.mark.parametrize("command", ["create", "final", "review"])
def test_a_directory_the_process_may_not_write_is_refused_up_front(
    world: World, command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same check as above, for a process the permission bits do not stop (the superuser
    on a read-only mount): what os.access says decides, before anything is written."""
    workflow = world.d.workflow
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) == workflow else real_access(p, mode))
    args = [command, world.dir] if command != "review" else [command, "comprehension-review", world.dir]
    before = snapshot(world.tmp)
    result = run_cli([*args, *world.rd()])
    assert result.code == ExitCode.BAD_INPUT, result.err
    assert "is not writable" in result.err and "what to do:" in result.err
    assert snapshot(world.tmp) == before
