"""The input fingerprint covers what a run can read, by the walk the tools and the code index
share: hidden files and directories included (a changed or deleted one is never a stale skip),
the whole repository when a model's tools can reach it; sockets and FIFOs are never opened;
designloop's own outputs (--sarif, report --out) never count; each model's server counts, as
its provider resolves it."""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest
from agentkit import make_repo
from batchkit import batch_repo, cli_json
from conftest import ROOT, run_cli

from pipeline.agents.session import SessionOptions, open_session, servers
from pipeline.agents.tools import ToolContext, glob_files
from pipeline.formats.kinds import PHASE1
from pipeline.grounding.psi import build_index
from pipeline.runs.fingerprint import Fingerprints, code_digest
from pipeline.runs.setup import plan_run

EPISODE = """
### Episode 3: A settings template landed
`ratelimit/.env.example` lists the Redis URL and the default capacity for operators.
"""


def example_repo(tmp_path: Path) -> Path:
    """The bundled example as a repository (its code root: ratelimit/ at the repository root)."""
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "examples", repo)
    (repo / ".git").mkdir()
    return repo


def rows(out: dict[str, Any]) -> list[tuple[str, str | None, list[str]]]:
    return [(d["action"], d["outcome"], [f["rule"] for f in d["findings"]]) for d in out["directories"]]


@pytest.mark.slow
def test_a_deleted_hidden_file_the_design_names_is_not_a_stale_skip(tmp_path: Path) -> None:
    repo = example_repo(tmp_path)
    directory = "docs/adr/0001-request-rate-limiter"
    track = repo / directory / "_workflow" / "plan" / "track-1.md"
    track.write_text(track.read_text() + EPISODE)
    hidden = repo / "ratelimit" / ".env.example"
    hidden.write_text("REDIS_URL=redis://localhost:6379/0\n")
    created = run_cli(["create", directory, "--json"], repo)
    assert created.code == 0, created.err
    code, first = cli_json(["batch", "final", "docs/adr/*", "--no-warmup"], repo)
    assert (code, rows(first)) == (0, [("new", "PASS", [])])
    hidden.unlink()  # the file the design names is gone
    _, second = cli_json(["batch", "final", "docs/adr/*", "--no-warmup"], repo)
    # the claim check names the missing path (the fidelity check's fid-missing-path restates it)
    assert rows(second)[0][0] == "new" and rows(second)[0][2] == ["clm-unresolved"]


def test_the_digest_covers_every_file_the_tools_and_the_code_index_walk(tmp_path: Path) -> None:
    design = make_repo(tmp_path)
    repo = design.repo_root
    for rel in (
        ".github/workflows/ci.yml",
        "code/.env.example",
        "code/ratelimit/.hidden.py",
        "notes/.x/y.md",
    ):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(f"{rel}\n")
    tools = ToolContext(role="design-author", repo_root=repo)
    walked = set(glob_files(_ctx(tools), "*").splitlines())
    indexed = set(build_index(repo, design.code_root).files)
    assert {".github/workflows/ci.yml", "code/.env.example", "code/ratelimit/.hidden.py"} <= walked
    assert "code/.env.example" in indexed and "code/ratelimit/.hidden.py" in indexed
    # Every design directory's own documents are left out on purpose (docs/scale.md): none here.
    documents = {"_workflow", "design-final.md", "design-mechanics-final.md"}
    for rel in sorted(r for r in walked | indexed if not documents & set(Path(r).parts)):
        before = code_digest(repo)
        (repo / rel).write_text((repo / rel).read_text() + "changed\n")
        assert code_digest(repo) != before, f"{rel} is read by the run but not fingerprinted"


class _Ctx:
    def __init__(self, deps: ToolContext) -> None:
        self.deps = deps


def _ctx(deps: ToolContext) -> Any:
    return _Ctx(deps)


def test_sockets_fifos_and_unreadable_files_never_stop_the_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "code"
    (root / "tmp" / "sockets").mkdir(parents=True)
    (root / "app.py").write_text("x = 1\n")
    os.mkfifo(root / "tmp" / "sockets" / "events.pipe")  # opening it would block for ever
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(root / "tmp" / "sockets" / "puma.sock"))
    (root / "dangling").symlink_to(root / "nowhere")
    try:
        plain = code_digest(root)
        assert code_digest(root) == plain
        (root / "app.py").write_text("x = 2\n")
        assert code_digest(root) != plain
        secret = root / "secret.txt"
        secret.write_text("k\n")
        readable = code_digest(root)
        real_open = os.open

        def refuse(path: Any, flags: int, *args: Any) -> int:
            if Path(path) == secret:
                raise PermissionError(13, "Permission denied", str(path))
            return real_open(path, flags, *args)

        monkeypatch.setattr("pipeline.runs.fingerprint.os.open", refuse)
        assert code_digest(root) != readable  # counted by its error, not a crash
    finally:
        server.close()


@pytest.mark.slow
def test_a_batch_over_sockets_and_fifos_runs_and_then_skips(tmp_path: Path) -> None:
    repo = batch_repo(tmp_path, ["a"])
    sockets = repo / "code" / "tmp" / "sockets"
    sockets.mkdir(parents=True)
    os.mkfifo(sockets / "events.pipe")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sockets / "puma.sock"))
    try:
        code, first = cli_json(["batch", "create", "docs/adr/*", "--no-warmup"], repo)
        assert (code, rows(first)) == (0, [("new", "PASS", [])])
        code, second = cli_json(["batch", "create", "docs/adr/*", "--no-warmup"], repo)
        assert (code, rows(second)) == (0, [("skipped", "PASS", [])])
    finally:
        server.close()


@pytest.mark.slow
def test_the_batchs_own_sarif_and_report_never_make_it_run_again(tmp_path: Path) -> None:
    repo = batch_repo(tmp_path, ["a"])
    (repo / "docs" / "adr" / "a" / "designloop.toml").unlink()  # the code root: the whole repository
    batch = ["batch", "create", "docs/adr/*", "--no-warmup"]
    code, first = cli_json([*batch, "--sarif", "designloop.sarif"], repo)
    assert (code, rows(first)) == (0, [("new", "PASS", [])])
    report = run_cli(["report", "--batch", "--out", "designloop-report"], repo)
    assert report.code == 0, report.err
    for args in ([*batch, "--sarif", "designloop.sarif"], batch):
        code, again = cli_json(args, repo)
        assert (code, rows(again)) == (0, [("skipped", "PASS", [])])
    private = open_session(repo, SessionOptions(runs_dir=repo / "runs")).runtime.private_dirs
    written = {
        repo / "designloop.sarif",
        *(repo / "designloop-report" / n for n in ("report.html", "report.md")),
    }
    assert written <= set(private)  # no role reads them
    assert repo / "designloop-report" not in private  # only the files designloop wrote
    assert json.loads((repo / "designloop.sarif").read_text())["version"] == "2.1.0"


def fingerprint(repo: Path, **options: Any) -> str:
    plan = plan_run(PHASE1, repo / "docs" / "adr" / "a", SessionOptions(**options), False)
    runtime = plan.session.runtime
    return Fingerprints(repo / "runs").inputs(plan.design, PHASE1, runtime.model_specs, servers(runtime))


def test_each_models_server_counts_and_a_model_reaches_the_whole_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = batch_repo(tmp_path, ["a"])
    outside = repo / "README.md"  # outside the code root (code/)
    outside.write_text("one\n")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    offline = fingerprint(repo)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8/v1")
    assert fingerprint(repo) == offline  # no role talks to OpenAI
    outside.write_text("two\n")
    assert fingerprint(repo) == offline  # the offline engine reads the code root only
    (repo / "code" / ".idea").mkdir()
    (repo / "code" / ".idea" / "workspace.xml").write_text("<project/>\n")
    assert fingerprint(repo) == offline  # nor hidden directories: the code index skips them
    (repo / "code" / ".env.example").write_text("REDIS_URL=\n")
    assert fingerprint(repo) != offline  # a hidden file it lists counts

    monkeypatch.setenv("OLLAMA_BASE_URL", "http://127.0.0.1:9/v1")
    ollama = fingerprint(repo, model="ollama:llama3")
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://127.0.0.1:7/v1")
    assert fingerprint(repo, model="ollama:llama3") != ollama  # another server behind the same name
    again = fingerprint(repo, model="ollama:llama3")
    outside.write_text("three\n")
    assert fingerprint(repo, model="ollama:llama3") != again  # a model's tools read the repository
    again = fingerprint(repo, model="ollama:llama3")
    (repo / "code" / ".idea" / "workspace.xml").write_text("<project version='5'/>\n")
    assert fingerprint(repo, model="ollama:llama3") != again  # hidden directories too


@pytest.mark.slow
def test_a_report_written_into_a_design_directory_takes_only_its_own_files_out_of_reach(
    tmp_path: Path,
) -> None:
    repo = example_repo(tmp_path)
    directory = repo / "docs" / "adr" / "0001-request-rate-limiter"
    created = run_cli(["create", str(directory), "--json"], repo)
    assert created.code == 0, created.err
    run_id = json.loads(created.out)["run_id"]
    report = run_cli(["report", run_id, "--out", str(directory)], repo)
    assert report.code == 0, report.err
    recorded = json.loads((repo / "runs" / "byproducts.json").read_text())["paths"]
    rel = "docs/adr/0001-request-rate-limiter"
    assert recorded == [f"{rel}/report.html", f"{rel}/report.md"]  # never the directory the user named
    for name in ("design.md", "design-mechanics.md"):
        (directory / "_workflow" / name).unlink(missing_ok=True)
    again = run_cli(["create", str(directory), "--json"], repo)
    assert again.code == 0, again.err  # its research log stays readable to the author
    assert json.loads(again.out)["outcome"] == "PASS"


@pytest.mark.slow
def test_a_report_written_into_a_nested_checkout_is_recorded_in_the_runs_repository(tmp_path: Path) -> None:
    repo = batch_repo(tmp_path, ["a"])
    (repo / "report.md").write_text("# The team's own report\n")
    pages = repo / "gh-pages"
    (pages / ".git").mkdir(parents=True)  # a second checkout inside the repository
    code, _ = cli_json(["batch", "create", "docs/adr/*", "--no-warmup"], repo)
    assert code == 0
    report = run_cli(["report", "--batch", "--out", "gh-pages"], repo)
    assert report.code == 0, report.err
    recorded = json.loads((repo / "runs" / "byproducts.json").read_text())["paths"]
    assert recorded == ["gh-pages/report.html", "gh-pages/report.md"]
    private = open_session(repo, SessionOptions(runs_dir=repo / "runs")).runtime.private_dirs
    assert repo / "gh-pages" / "report.html" in private and repo / "report.md" not in private
