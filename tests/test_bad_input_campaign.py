"""The hostile-input campaign as tests: every input a command reads, spoiled every way a file can
be (not UTF-8, a NUL byte, UTF-16, a directory in its place, a link out of the repository), every
setting and flag given a value it cannot take. Each case exits 2 with a `what to do:` line, no
traceback, and leaves the repository and the runs directory byte-identical (nothing is written
before an exit 2). With test_bad_input.py's cases, the campaign runs well over 250 cases."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run_cli
from test_bad_input import CASES as EARLIER
from test_bad_input import World, world  # noqa: F401  (the fixture)
from test_store import snapshot

from pipeline.errors import ExitCode
from pipeline.formats.design_dir import DesignDir

Spoil = Callable[[Path, World], None]


def _replace(path: Path, data: bytes) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _text(path: Path) -> bytes:
    return path.read_bytes() if path.is_file() else b"# A file\n\n## Overview\n\nSome text.\n"


def _directory(path: Path, w: World) -> None:
    if path.is_file():
        path.unlink()
    path.mkdir(parents=True, exist_ok=True)
    (path / "inside.md").write_text("a directory where a file belongs\n")


def _link_out(path: Path, w: World) -> None:
    outside = w.tmp / "outside" / path.name
    outside.parent.mkdir(exist_ok=True)
    outside.write_bytes(_text(path))
    if path.exists():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(outside)


SPOILS: dict[str, Spoil] = {
    "not UTF-8": lambda p, w: _replace(p, _text(p) + b"\ncaf\xe9 au lait\n"),
    "a NUL byte": lambda p, w: _replace(p, _text(p).replace(b"\n", b"\n\x00", 1)),
    "UTF-16": lambda p, w: _replace(p, _text(p).decode("utf-8", "replace").encode("utf-16")),
    "UTF-16 without a BOM": lambda p, w: _replace(p, _text(p).decode("utf-8", "replace").encode("utf-16-le")),
    "a directory": _directory,
    "a link out of the repository": _link_out,
}

FILES: dict[str, Callable[[DesignDir], Path]] = {
    "research log": lambda d: d.research_log,
    "design": lambda d: d.design,
    "companion": lambda d: d.mechanics,
    "final design": lambda d: d.final,
    "final companion": lambda d: d.final_mechanics,
    "review log": lambda d: d.mutations,
    "plan": lambda d: d.plan,
    "track file": lambda d: d.plan_dir / "track-1.md",
}


def _edit(w: World) -> list[str]:
    return [
        "edit",
        w.dir,
        "--kind",
        "content-edit",
        "--section",
        "Overview",
        "--instruction",
        "shorter",
        *w.rd(),
    ]


COMMANDS: dict[str, tuple[Callable[[World], list[str]], list[str]]] = {
    "create": (
        lambda w: ["create", w.dir, *w.rd()],
        ["research log", "design", "companion", "review log", "plan", "track file"],
    ),
    "final": (
        lambda w: ["final", w.dir, *w.rd()],
        ["design", "final design", "final companion", "review log", "plan", "track file"],
    ),
    "edit": (_edit, ["design", "companion", "review log", "plan", "track file"]),
    "estimate create": (
        lambda w: ["estimate", w.dir],
        ["research log", "design", "review log", "plan", "track file"],
    ),
    "estimate final": (
        lambda w: ["estimate", w.dir, "--kind", "final"],
        ["design", "final design", "review log", "plan", "track file"],
    ),
    "review absorption-check": (
        lambda w: ["review", "absorption-check", w.dir, *w.rd()],
        ["research log", "design"],
    ),
    "batch create": (lambda w: ["batch", "create", w.dir, *w.rd()], ["research log", "design", "track file"]),
}


def _file_case(command: str, name: str, spoil: str) -> Callable[[World], list[str]]:
    def case(w: World) -> list[str]:
        SPOILS[spoil](FILES[name](w.d), w)
        return COMMANDS[command][0](w)

    return case


CASES: dict[str, Callable[[World], list[str]]] = {}
for _command, (_, _names) in COMMANDS.items():
    for _name in _names:
        for _spoil in SPOILS:
            if _spoil == "a directory" and _name == "review log" and _command.startswith("estimate"):
                continue  # estimate reads the review log only to parse it: a directory is covered by create
            CASES[f"{_command}: {_name} is {_spoil}"] = _file_case(_command, _name, _spoil)


# --- the repository's own files: settings and overrides -------------------------------------


def _repo_file(rel: str, data: bytes) -> Callable[[World], None]:
    def put(w: World) -> None:
        _replace(w.d.repo_root / rel, data)

    return put


REPO_FILES = {
    "designloop.toml not UTF-8": _repo_file("designloop.toml", b"[run]\nspawn_timeout = 600 # caf\xe9\n"),
    "designloop.toml with a NUL byte": _repo_file("designloop.toml", b"[run]\nspawn_timeout = 600\x00\n"),
    "the design directory's designloop.toml with a NUL byte": lambda w: _replace(
        w.d.root / "designloop.toml", b'code_root = "../../../code"\x00\n'
    ),
    "an agent override not UTF-8": _repo_file(
        ".designloop/agents/readability-auditor.md", b"---\nname: x\xff\n---\n"
    ),
    "an agent override with a NUL byte": _repo_file(
        ".designloop/agents/readability-auditor.md", b"---\nname: readability-auditor\x00\n---\nbody\n"
    ),
    "a prompt override not UTF-8": _repo_file(
        ".designloop/prompts/house-style.md", b"# House style\n\ncaf\xe9\n"
    ),
    "a prompt override with a NUL byte": _repo_file(
        ".designloop/prompts/house-style.md", b"# House style\n\x00\n"
    ),
    "the spawn prompt override not UTF-8": _repo_file(".designloop/prompts/spawn.md", b"Params file: \xff\n"),
}
REPO_COMMANDS = {
    "create": lambda w: ["create", w.dir, *w.rd()],
    "final": lambda w: ["final", w.dir, *w.rd()],
    "edit": _edit,
    "estimate": lambda w: ["estimate", w.dir],
    "review": lambda w: ["review", "comprehension-review", w.dir, *w.rd()],
}
for _what, _put in REPO_FILES.items():
    for _command, _args in REPO_COMMANDS.items():
        if "design directory's" in _what and _command in ("edit",):
            continue

        def _case(
            w: World, put: Callable[[World], None] = _put, args: Callable[[World], list[str]] = _args
        ) -> list[str]:
            put(w)
            return args(w)

        CASES[f"{_command}: {_what}"] = _case


# --- settings that cannot hold -------------------------------------------------------------

SETTINGS = {
    "[run] spawn_timeout = nan": "[run]\nspawn_timeout = nan\n",
    "[run] spawn_timeout = inf": "[run]\nspawn_timeout = inf\n",
    "[run] spawn_timeout = -inf": "[run]\nspawn_timeout = -inf\n",
    "[run] spawn_timeout = 0": "[run]\nspawn_timeout = 0\n",
    "[run] first_turn_timeout = nan": "[run]\nfirst_turn_timeout = nan\n",
    "[run] first_turn_timeout = -1": "[run]\nfirst_turn_timeout = -1\n",
    "[run] bash_timeout = inf": "[run]\nbash_timeout = inf\n",
    "[run] warmup_cap = nan": "[run]\nwarmup_cap = nan\n",
    "[run] spawn_requests = 2.5": "[run]\nspawn_requests = 2.5\n",
    "[run] spawn_requests = 0": "[run]\nspawn_requests = 0\n",
    "[run] spawn_timeout a string": '[run]\nspawn_timeout = "ten minutes"\n',
    "[run] spawn_timeout true": "[run]\nspawn_timeout = true\n",
    "[models.tiers] strong = 5": "[models.tiers]\nstrong = 5\n",
    "[models.tiers] strong empty": '[models.tiers]\nstrong = ""\n',
    "[models.tiers] an unknown tier": '[models.tiers]\nhuge = "offline"\n',
    "[models.roles] an unknown role": '[models.roles]\nnobody = "offline"\n',
    "[models.roles] a role's model a list": '[models.roles]\ndesign-author = ["offline"]\n',
    "[models] not a table": "models = 5\n",
    "[partition] window = 0": "[partition]\nwindow = 0\n",
    "[partition] window = 1.5": "[partition]\nwindow = 1.5\n",
    "[loop] iteration_budget = -1": "[loop]\niteration_budget = -1\n",
    "[limits] an unknown setting": "[limits]\nspeed = 3\n",
    "[limits] a setting of another table": "[limits]\nwindow = 3\n",
    "[worker] heartbeat = 0": "[worker]\nheartbeat = 0\n",
    "[worker] dequeue = nan": "[worker]\ndequeue = nan\n",
    "[worker] an unknown setting": "[worker]\npoll = 1\n",
}
for _setting, _toml in SETTINGS.items():
    for _command, _args in {
        "create": REPO_COMMANDS["create"],
        "final": REPO_COMMANDS["final"],
        "edit": _edit,
        "estimate": REPO_COMMANDS["estimate"],
    }.items():

        def _case(w: World, toml: str = _toml, args: Callable[[World], list[str]] = _args) -> list[str]:
            _replace(w.d.repo_root / "designloop.toml", toml.encode())
            return args(w)

        CASES[f"{_command}: {_setting}"] = _case


# --- flags that cannot hold ----------------------------------------------------------------

FLAGS = {
    "--max-cost 1e400": ["--max-cost", "1e400"],
    "--max-cost 1e10": ["--max-cost", "1e10"],
    "--max-cost empty": ["--max-cost", ""],
    "--max-cost a dollar sign alone": ["--max-cost", "$"],
    "--max-cost -0": ["--max-cost", "-0"],
    "--budget beyond any budget": ["--budget", str(10**16)],
    "--model empty": ["--model", ""],
    "--model blank": ["--model", "   "],
    "--role-model with a blank model": ["--role-model", "design-author=  "],
    "--max-requests 0": ["--max-requests", "0"],
    "--max-requests negative": ["--max-requests", "-4"],
    "--max-requests beyond reason": ["--max-requests", str(10**16)],
    "--fail-on sideways": ["--fail-on", "sideways"],
}
FLAG_COMMANDS = {
    "create": REPO_COMMANDS["create"],
    "final": REPO_COMMANDS["final"],
    "edit": _edit,
    "batch create": lambda w: ["batch", "create", w.dir, *w.rd()],
}
for _flag, _values in FLAGS.items():
    for _command, _args in FLAG_COMMANDS.items():

        def _case(
            w: World, values: list[str] = _values, args: Callable[[World], list[str]] = _args
        ) -> list[str]:
            return [*args(w), *values]

        CASES[f"{_command}: {_flag}"] = _case
CASES["resume: --max-requests 0"] = lambda w: ["resume", w.paused_run().name, *w.rd(), "--max-requests", "0"]
CASES["resume: --max-cost 1e400"] = lambda w: ["resume", w.paused_run().name, *w.rd(), "--max-cost", "1e400"]
CASES["review: --model empty"] = lambda w: ["review", "comprehension-review", w.dir, "--model", ""]
CASES["roles: --model blank"] = lambda w: ["roles", "--model", "  "]
CASES["estimate: --model empty"] = lambda w: ["estimate", w.dir, "--model", ""]


# --- a research log or a frozen design with nothing to work from ---------------------------

LOGS = {
    "an empty research log": b"",
    "a research log of blank lines": b"\n\n   \n\t\n",
    "a research log of headings only": b"# Log\n\n## Decision Log\n\n## Adversarial gate record\n",
    "a research log with no decision": b"# Log\n\n## Problem\n\nA limit.\n\n## Adversarial gate record\n\n### 2026-11-22 \xe2\x80\x94 PASS\n",
    "a research log with a duplicated decision id": b"# Log\n\n## Decision Log\n\n### D1: a\n**Decision:** x\n\n### D1: b\n**Decision:** y\n",
}
for _what, _data in LOGS.items():
    for _command in ("create", "estimate create", "batch create"):

        def _case(w: World, data: bytes = _data, command: str = _command) -> list[str]:
            _replace(w.d.research_log, data)
            return COMMANDS[command][0](w)

        CASES[f"{_command}: {_what}"] = _case
for _command in ("final", "estimate final"):
    CASES[f"{_command}: an empty frozen design"] = lambda w, c=_command: (
        _replace(w.d.design, b"") or COMMANDS[c][0](w)
    )
    CASES[f"{_command}: a frozen design of blank lines"] = lambda w, c=_command: (
        _replace(w.d.design, b"\n \n") or COMMANDS[c][0](w)
    )
CASES["estimate final: no frozen design"] = lambda w: w.d.design.unlink() or COMMANDS["estimate final"][0](w)
CASES["edit: --content file with a NUL byte"] = lambda w: [
    "edit",
    w.dir,
    "--kind",
    "structural-rewrite",
    "--content",
    str(_write_content(w, b"# Title\n\n## Overview\n\nText.\x00\n")),
    *w.rd(),
]
CASES["edit: --content file in UTF-16"] = lambda w: [
    "edit",
    w.dir,
    "--kind",
    "structural-rewrite",
    "--content",
    str(_write_content(w, "# Title\n\n## Overview\n\nText.\n".encode("utf-16-le"))),
    *w.rd(),
]
CASES["check: design with a NUL byte"] = lambda w: _replace(w.d.design, b"# T\n\x00\n") or ["check", w.dir]
CASES["slices: design with a NUL byte"] = lambda w: _replace(w.d.design, b"# T\n\x00\n") or ["slices", w.dir]
CASES["gate: research log with a NUL byte"] = lambda w: (
    _replace(w.d.research_log, b"# L\n\x00\n") or ["gate", w.dir]
)


def _write_content(w: World, data: bytes) -> Path:
    path = w.tmp / "content.md"
    path.write_bytes(data)
    return path


def test_the_campaign_runs_at_least_250_cases() -> None:
    assert len(CASES) + len(EARLIER) >= 250, len(CASES) + len(EARLIER)
    assert len(CASES) >= 200


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_input_exits_2_says_what_to_do_and_writes_nothing(world: World, name: str) -> None:  # noqa: F811
    args = CASES[name](world)
    before = snapshot(world.tmp)
    result = run_cli(args)
    after = snapshot(world.tmp)
    assert result.code == ExitCode.BAD_INPUT, (result.code, result.err, result.out[-300:])
    assert "Traceback" not in result.err and "internal error" not in result.err
    assert "what to do:" in result.err, result.err
    assert after == before, sorted(set(after) ^ set(before)) or "a file changed"
