"""The one confinement rule (pipeline.confinement): every file any command or tool reads stays
inside the repository, whatever names it (a claims ledger, a walk of the tree, a role).

The first test enumerates every module of the package that opens a file and fails when one
reads around the guard; the rest are the reproductions: a ledger naming a file outside (by an
absolute path, by ``..``, through a link), PSI and Grep over a file linked out of the
repository, and the guard's own refusals.
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, write

from pipeline import confinement
from pipeline.grounding.psi import build_index

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "pipeline"
Cli = Callable[[list[str]], CliResult]

READS = frozenset({"read_bytes", "read_text"})
"""Path methods that open a file."""
MODULE_OPENS = frozenset(
    {("os", "open"), ("io", "open"), ("tomllib", "load"), ("json", "load"), ("sqlite3", "connect")}
)
"""Module functions that open a file."""

OWN_STATE: dict[tuple[str, str], str] = {
    ("pipeline.confinement", "open_fd"): "the guard itself",
    ("pipeline.formats.textio", "umask"): "/proc/self/status, the process's own umask",
    ("pipeline.formats.textio", "_fsync_dir"): "a directory opened to flush a rename designloop made",
    ("pipeline.formats.database", "check_database"): "the run store's SQLite file, checked by header",
    ("pipeline.formats.database", "integrity"): "the run store's SQLite file",
    ("pipeline.graph.runner", "_checkpointed"): "the run store's checkpoints",
    ("pipeline.runs.event_log", "EventLog.emit"): "a run's event log under the runs directory",
    ("pipeline.runs.event_log", "numbered_events"): "a run's event log under the runs directory",
    ("pipeline.runs.lock", "FileRunLock._open"): "the directory's lock file, opened without following a link",
    (
        "pipeline.runs.lock",
        "FileRunLock.holder",
    ): "the directory's lock file, opened without following a link",
    ("pipeline.runs.pg_store", "PgStore.register"): "a run's record under the runs directory",
    ("pipeline.runs.pg_store", "PgStore._put_files"): "a run's files under the runs directory",
    ("pipeline.runs.records", "read_record"): "a run's record under the runs directory",
    ("pipeline.runs.report", "load_report"): "a run's record and summary under the runs directory",
    ("pipeline.runs.revisions", "SqliteRevisions._db"): "the revision store under the runs directory",
    ("pipeline.runs.snapshot", "snapshot_reader.read"): "a before-snapshot copy under the runs directory",
    ("pipeline.runs.store", "load_batch_file"): "a batch's record under the runs directory",
    ("pipeline.runs.views", "_kept"): "a run's kept view under the runs directory",
    ("pipeline.runs.views", "_keep"): "a run's kept view under the runs directory, written",
    ("pipeline.runs.views", "_code"): "designloop's own modules, digested (the kept views' key)",
    ("pipeline.settings", "make_runs_dir"): "the runs directory's own .gitignore, created",
    ("pipeline.cli.runs", "present"): "a run's summary under the runs directory",
}
"""Where designloop opens its own state (the runs directory, its lock, its process) and not
the repository's files: every other open goes through pipeline.confinement."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _kind(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name) and func.id == "open":
        return "open"
    if not isinstance(func, ast.Attribute):
        return None
    base = func.value.id if isinstance(func.value, ast.Name) else None
    if (base, func.attr) in MODULE_OPENS:
        return f"{base}.{func.attr}"
    if func.attr in READS and base != "confinement":
        return func.attr
    moded = bool(call.args) and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str)
    if func.attr == "open" and (moded or any(k.arg == "mode" for k in call.keywords)):
        return "Path.open"
    return None


def opens(source: str) -> list[tuple[str, str, int]]:
    """Every call in ``source`` that opens a file: (the enclosing function, what, line)."""
    found: list[tuple[str, str, int]] = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = where
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                inner = f"{where}.{child.name}" if where else child.name
            if isinstance(child, ast.Call) and (kind := _kind(child)) is not None:
                found.append((where or "<module>", kind, child.lineno))
            visit(child, inner)

    visit(ast.parse(source), "")
    return found


def test_every_module_that_opens_a_file_goes_through_the_guard() -> None:
    seen: set[tuple[str, str]] = set()
    bypass: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        for where, kind, line in opens(path.read_text(encoding="utf-8")):
            seen.add((name, where))
            if (name, where) not in OWN_STATE:
                bypass.append(f"{path.relative_to(ROOT)}:{line}: {where} opens a file by {kind}")
    assert bypass == [], "read through pipeline.confinement instead:\n" + "\n".join(bypass)
    stale = sorted(set(OWN_STATE) - seen)
    assert stale == [], f"listed as opening designloop's own state, but opens nothing now: {stale}"


def test_the_enumeration_sees_a_bypass() -> None:
    """The test above can fail: each way of opening a file is seen, the guard's own read is not."""
    source = (
        "import json, os\n"
        "def a(p):\n    return p.read_bytes()\n"
        "def b(p):\n    with open(p) as h:\n        return h.read()\n"
        "class C:\n    def c(self, p):\n        with p.open('rb') as h:\n            return json.load(h)\n"
        "def d(p):\n    return os.open(p, os.O_RDONLY)\n"
        "def e(p):\n    return confinement.read_bytes(p)\n"
    )
    found = {(where, kind) for where, kind, _ in opens(source)}
    assert found == {
        ("a", "read_bytes"),
        ("b", "open"),
        ("C.c", "Path.open"),
        ("C.c", "json.load"),
        ("d", "os.open"),
    }


# The guard's rules


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    (repo / "src" / "ok.py").write_text("x = 1\n")
    secret = tmp_path / "outside-secret.txt"
    secret.write_text("[default]\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG\n")
    return repo, secret


def test_a_recorded_path_is_relative_and_stays_inside(world: tuple[Path, Path]) -> None:
    repo, secret = world
    (repo / "src" / "link.txt").symlink_to(secret)
    (repo / "out").symlink_to(secret.parent, target_is_directory=True)
    assert confinement.recorded(repo, "src/ok.py") == (repo / "src" / "ok.py").resolve()
    for name, why in [
        (str(secret), "absolute"),
        ("../outside-secret.txt", "climbs out"),
        ("src/../../outside-secret.txt", "climbs out"),
        ("src/link.txt", "resolves outside"),
        ("out/outside-secret.txt", "resolves outside"),
    ]:
        with pytest.raises(confinement.OutsideRepository) as caught:
            confinement.recorded(repo, name, what="code file")
        assert why in caught.value.message
        assert "AWS" not in caught.value.render()


def test_a_link_inside_the_repository_is_read(world: tuple[Path, Path]) -> None:
    repo, _ = world
    (repo / "alias.py").symlink_to(repo / "src" / "ok.py")
    assert confinement.read_bytes(repo / "alias.py") == b"x = 1\n"


def test_the_read_refuses_a_fifo_and_a_file_past_its_limit(world: tuple[Path, Path]) -> None:
    repo, secret = world
    os.mkfifo(repo / "pipe")
    with pytest.raises(confinement.NotRegularFile):
        confinement.read_bytes(repo / "pipe")
    with pytest.raises(confinement.TooLarge):
        confinement.read_bytes(repo / "src" / "ok.py", limit=3)
    (repo / "leak").symlink_to(secret)
    with pytest.raises(confinement.OutsideRepository):
        confinement.read_bytes(repo / "leak")
    assert confinement.read_bytes(secret).startswith(b"[default]")  # in no repository: read as named


def test_psi_neither_lists_nor_quotes_a_file_linked_out(world: tuple[Path, Path]) -> None:
    repo, secret = world
    outside = secret.parent / "secret.py"
    outside.write_text("AWS_SECRET_ACCESS_KEY = 'wJalrXUtnFEMI'\n\ndef leak():\n    return 1\n")
    (repo / "src" / "secret.py").symlink_to(outside)
    index = build_index(repo, repo / "src")
    assert "src/secret.py" not in index.files
    assert not index.definitions("leak")
    assert not index.definitions("AWS_SECRET_ACCESS_KEY")
    assert "src/ok.py" in index.files


# Reproductions through the commands


@pytest.fixture
def ledgered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Cli) -> tuple[Path, Path, Path]:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    write(repo / "src" / "limits.py", "def key_for(tenant, route):\n    return f'{tenant}:{route}'\n")
    write(
        repo / "docs" / "adr" / "one" / "design-final.md",
        "# Limits\n\n## Overview\n\nKeys come from `key_for`, defined at `src/limits.py:1`.\n",
    )
    (repo / "docs" / "adr" / "one" / "_workflow").mkdir()
    secret = tmp_path / "outside-secret.txt"
    secret.write_text("[default]\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG\n")
    monkeypatch.chdir(repo)
    result = cli(["claims", "docs/adr/*"])
    assert result.code == 0, result.err
    ledger = repo / "docs" / "adr" / "one" / "design-final.claims.json"
    assert json.loads(ledger.read_text())["claims"]
    return repo, ledger, secret


def _point(ledger: Path, file: str | None = None, code_root: str | None = None) -> None:
    data = json.loads(ledger.read_text())
    if code_root is not None:
        data["code_root"] = code_root
    for claim in data["claims"]:
        if file is not None:
            claim["file"] = file
            claim["first"] = claim["last"] = 2
    ledger.write_text(json.dumps(data, indent=2) + "\n")


@pytest.mark.parametrize("how", ["absolute", "climbs", "linked file", "linked directory", "code root"])
@pytest.mark.parametrize("command", ["drift", "ready", "status"])
def test_a_ledger_naming_a_file_outside_is_damaged(
    ledgered: tuple[Path, Path, Path], cli: Cli, how: str, command: str
) -> None:
    repo, ledger, secret = ledgered
    if how == "absolute":
        _point(ledger, file=str(secret))
    elif how == "climbs":
        _point(ledger, file="../outside-secret.txt")
    elif how == "linked file":
        (repo / "src" / "creds.txt").symlink_to(secret)
        _point(ledger, file="src/creds.txt")
    elif how == "linked directory":
        (repo / "vendor").symlink_to(secret.parent, target_is_directory=True)
        _point(ledger, file="vendor/outside-secret.txt")
    else:
        _point(ledger, code_root="..")
    target = "docs/adr/one" if command != "drift" else "docs/adr/*"
    for extra in ([], ["--json"]):
        result = cli([command, target, *extra])
        shown = result.out + result.err
        assert "AWS_SECRET" not in shown and "wJalr" not in shown
        assert result.code == 2, (command, how, shown)
        assert "claims ledger is damaged" in shown
        assert "design-final.claims.json" in shown


def test_drift_sarif_never_carries_a_line_from_outside(ledgered: tuple[Path, Path, Path], cli: Cli) -> None:
    repo, ledger, _ = ledgered
    _point(ledger, file="../outside-secret.txt")
    result = cli(["drift", "docs/adr/*", "--sarif", "drift.sarif"])
    assert result.code == 2
    sarif = repo / "drift.sarif"
    assert not sarif.exists() or "AWS_SECRET" not in sarif.read_text()
