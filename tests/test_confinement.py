"""Every confinement leak found so far, replayed: cold roles never read the research log by
any name, link, inode, line ending or earlier version; no role reads the run records, the
model-call cache or another spawn's params file; Bash options never read or write files."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from agentkit import make_repo, runtime
from conftest import run_cli
from graphkit import go, start

from pipeline.agents.cache import open_cache
from pipeline.agents.inputs import AuditSlice, RoundInputs, params_for
from pipeline.agents.roles import load_roles
from pipeline.agents.spawn import prepare
from pipeline.agents.tools import ToolContext, bash, glob_files, grep, read
from pipeline.formats.design_dir import DesignDir
from pipeline.formats.textio import atomic_write
from pipeline.settings import CACHE_DB, CACHE_DIR


class Ctx:
    def __init__(self, deps: ToolContext) -> None:
        self.deps = deps


def context(d: DesignDir, role: str, runs: Path, rt_: object | None = None) -> Ctx:
    """The tool context a spawn of ``role`` gets, built the way a run builds it."""
    rt = rt_ or runtime(d, private_dirs=(runs,))
    kind = "phase4-creation" if role == "fidelity-check" else "phase1-creation"
    inputs = RoundInputs(d, kind, 1, d.final if kind == "phase4-creation" else d.design)
    audit = AuditSlice((1, 10), 1, 10) if role == "readability-auditor" else None
    params = params_for(role, inputs, audit)
    spawn = prepare(load_roles(d.repo_root)[role], params, d.reviews, d.repo_root)
    return Ctx(rt.tool_context(spawn, d.research_log, d.code_root))  # type: ignore[attr-defined]


def refused(ctx: Ctx, path: str) -> bool:
    return read(ctx, path).startswith("refused:")  # type: ignore[arg-type]


@pytest.fixture
def ran(tmp_path: Path) -> tuple[DesignDir, Path]:
    """A repository after a whole run: runs/ under the root holds the cache and the run records."""
    d = make_repo(tmp_path)
    runs = d.repo_root / "runs"
    d.design.unlink()
    run_dir = start(d, d.repo_root)
    assert go(run_dir).exit_code == 0
    # The offline engine keeps no answers; a model run would: the cache a role must never read.
    cache = open_cache(runs / CACHE_DIR)
    cache.set("answered-request", b"refill secret of the request cache")
    cache.close()
    assert (runs / CACHE_DIR / CACHE_DB).is_file()
    return d, runs


def _variants(log: bytes) -> dict[str, bytes]:
    text = log.decode()
    decisions = text[text.index("## Decision Log") : text.index("## Adversarial gate record")]
    return {
        "crlf.txt": log.replace(b"\n", b"\r\n"),
        "bom.md": b"\xef\xbb\xbf" + log,
        "trailing.md": b"\n".join(line + b"   \t" for line in log.split(b"\n")),
        "cr-only.txt": log.replace(b"\n", b"\r"),
        "decisions-only.md": decisions.encode(),
        "padded.md": log
        + "".join(f"Unrelated prose about something else entirely, line {i}.\n" for i in range(300)).encode(),
        "reindented.md": b"\n".join(b"    " + line for line in log.split(b"\n")),
    }


@pytest.mark.parametrize("role", ["readability-auditor", "comprehension-review", "fidelity-check"])
def test_cold_roles_are_refused_every_copy_of_the_log(ran: tuple[DesignDir, Path], role: str) -> None:
    d, runs = ran
    log = d.research_log.read_bytes()
    for name, data in _variants(log).items():
        (d.repo_root / name).write_bytes(data)
    ctx = context(d, role, runs)
    for name in _variants(log):
        assert refused(ctx, name), name
    hits = grep(ctx, "Decision", ".")  # type: ignore[arg-type]
    assert not any(name in hits for name in _variants(log)) and "research-log" not in hits
    # Precision: the draft that absorbs the log's decisions stays readable, and so does the code
    # (the auditor reads nothing but its params file and its slice of the draft).
    assert not refused(ctx, str(d.design.relative_to(d.repo_root)))
    assert refused(ctx, "code/ratelimit/bucket.py") == (role == "readability-auditor")


def test_links_and_copies_made_before_the_log_was_rewritten(ran: tuple[DesignDir, Path]) -> None:
    d, runs = ran
    os.link(d.research_log, d.repo_root / "old-link.md")
    shutil.copy(d.research_log, d.repo_root / "old-copy.md")
    rt = runtime(d, private_dirs=(runs,))
    first = context(d, "comprehension-review", runs, rt)
    assert refused(first, "old-link.md") and refused(first, "old-copy.md")
    # The adversarial review rewrites the log: a new inode and new text (a new gate entry).
    text = (
        d.research_log.read_text()
        + "\n### 2026-12-01 — NEEDS REVISION\n- [ ] should-fix: D2 needs a number.\n"
    )
    atomic_write(d.research_log, text)
    assert os.stat(d.research_log).st_ino != os.stat(d.repo_root / "old-link.md").st_ino
    later = context(d, "comprehension-review", runs, rt)
    assert refused(later, "old-link.md") and refused(later, "old-copy.md")
    # A process that never saw the old version recognises it by its content.
    fresh = context(d, "fidelity-check", runs)
    assert refused(fresh, "old-link.md") and refused(fresh, "old-copy.md")


def test_a_file_that_reuses_an_old_version_s_inode_is_not_the_log(tmp_path: Path) -> None:
    """An earlier version of the research log is forgotten by the file system once the log is
    rewritten (atomically: a new inode), and the next file written may get its inode back. That
    file (here, the draft) is refused only for what it holds, never for the number alone."""
    from dataclasses import replace

    d = make_repo(tmp_path)
    ctx = context(d, "readability-auditor", tmp_path / "runs")
    draft = d.design.stat()
    ctx.deps.forbidden = [replace(item, inode=(draft.st_dev, draft.st_ino)) for item in ctx.deps.forbidden]
    assert ctx.deps.forbidden and not refused(ctx, d.rel(d.design))
    assert refused(ctx, d.rel(d.research_log))  # the log itself, by path and by content
    shutil.copy(d.research_log, d.repo_root / "copy.md")
    assert refused(ctx, "copy.md")


def _decision_log(count: int) -> str:
    lines = ["# Research log: many parts", "", "## Decision Log", ""]
    for i in range(1, count + 1):
        lines += [
            f"### D{i}: Keep the cache of part {i} beside its store",
            f"**Decision:** Part {i} keeps its cache next to the store it serves.",
            f"**Alternatives rejected:** One shared cache for part {i} and the rest (contention).",
            f"**Rationale:** Part {i} is read far more often than it is written.",
            "",
        ]
    return "\n".join([*lines, "## Adversarial gate record", "", "### 2026-11-20 — PASS", ""])


def test_a_draft_that_absorbs_a_log_of_decisions_stays_readable(tmp_path: Path) -> None:
    """A log that is nearly all decision records: a faithful draft repeats every record line,
    so it holds nearly all of the log. It stays readable as the draft under review; the same
    text anywhere else, and the log itself given as the draft, are refused."""
    d = make_repo(tmp_path)
    log = _decision_log(40)
    d.research_log.write_text(log)
    records = log[log.index("### D1") : log.index("## Adversarial")]
    draft = ["# Many parts", "", "## Overview", "", "**TL;DR:** Each part keeps its own cache.", ""]
    for i in range(1, 41):
        draft += [
            f"## Part {i}",
            "",
            f"**TL;DR:** Part {i} keeps its cache next to the store it serves.",
            "",
            f"Part {i} is read far more often than it is written, so a local cache pays for itself.",
            "",
            f"Rejected alternatives: one shared cache for part {i} and the rest, which contends.",
            "",
        ]
    d.design.write_text("\n".join(draft) + "\n## Decision Records\n\n" + records)
    runs = d.repo_root / "runs"
    ctx = context(d, "comprehension-review", runs)
    assert not refused(ctx, str(d.design.relative_to(d.repo_root)))
    shutil.copy(d.design, d.repo_root / "notes.md")
    assert refused(ctx, "notes.md")
    d.design.write_text(log.replace("# Research log: many parts", "# Many parts"))
    assert refused(context(d, "comprehension-review", runs), str(d.design.relative_to(d.repo_root)))


def test_the_cold_editor_edits_a_design_that_absorbs_a_log_of_decisions(tmp_path: Path) -> None:
    """The inline editor never reads the log, but the design it edits is its own to read."""
    d = make_repo(tmp_path)
    d.research_log.write_text(_decision_log(40))
    d.design.unlink()
    runs = ["--runs-dir", str(tmp_path / "runs")]
    assert run_cli(["create", str(d.root), *runs, "--json"]).code == 0
    edit = [
        "edit",
        str(d.root),
        "--kind",
        "content-edit",
        "--section",
        "Keep the cache of part 1 beside its store",
    ]
    edit += ["--instruction", "replace 'next to' with 'beside'", *runs, "--json"]
    result = run_cli(edit)
    assert result.code == 0, result.out + result.err
    assert "refused" not in result.out


@pytest.mark.parametrize("role", ["readability-auditor", "design-author", "absorption-check"])
def test_no_role_reads_the_cache_the_run_records_or_other_params(
    ran: tuple[DesignDir, Path], role: str
) -> None:
    d, runs = ran
    run_dir = next(p for p in runs.iterdir() if (p / "run.json").is_file())
    other_params = next(d.reviews.rglob("*.json"))
    os.link(runs / "cache" / "cache.db", d.repo_root / "innocent.db")
    (d.repo_root / "cache-link").symlink_to(runs / "cache")
    ctx = context(d, role, runs)
    for path in (
        "runs/cache/cache.db",
        "runs/cache",
        "runs",
        f"runs/{run_dir.name}/events.jsonl",
        f"runs/{run_dir.name}/run.json",
        "runs/checkpoints.sqlite",
        "innocent.db",
        "cache-link/cache.db",
        str(other_params.relative_to(d.repo_root)),
        str(d.reviews.relative_to(d.repo_root)),
    ):
        assert refused(ctx, path), path
    own = ctx.deps.private.allowed
    assert len(own) == 1 and read(ctx, str(next(iter(own)))).startswith("1\t{")  # type: ignore[arg-type]
    assert "runs/" not in glob_files(ctx, "**")  # type: ignore[arg-type]
    assert "runs" not in read(ctx, ".").split("\n")  # type: ignore[arg-type]
    assert "reviews" not in read(ctx, str(d.workflow.relative_to(d.repo_root))).split("\n")  # type: ignore[arg-type]
    hits = grep(ctx, "comprehension|PASS", ".")  # type: ignore[arg-type]
    assert "runs/" not in hits and "reviews/" not in hits and "innocent.db" not in hits


ESCAPES = [
    "git blame --contents=/etc/passwd -- README.md",
    "git blame --contents /etc/passwd README.md",
    "git blame --cont=/etc/passwd README.md",
    "git blame -S /etc/passwd README.md",
    "git blame --ignore-revs-file=/etc/passwd README.md",
    "wc --files0-from=/etc/hostname",
    "wc --files0-from /etc/hostname",
    "wc --files0=/etc/hostname",
    "grep -f /etc/passwd README.md",
    "grep -rf /etc/passwd .",
    "grep --file=/etc/passwd README.md",
    "grep --exclude-from=/etc/passwd -r x .",
    "grep -R x .",
    "grep -d recurse x .",
    "rg --pre cat x",
    "rg --pre=cat x",
    "rg --pre-glob=* x",
    "rg -z x",
    "rg -L x",
    "rg --ignore-file=/etc/passwd x",
    "rg -f /etc/passwd",
    "git diff --output=/tmp/leak",
    "git diff --output /tmp/leak",
    "git diff --out=/tmp/leak",
    "git diff --no-index /etc/passwd README.md",
    "git diff --ext-diff",
    "git log -L1,2:/etc/passwd",
    "git log -p --textconv",
    "git -C / log",
    "git -c core.pager=cat log",
    "git --git-dir=/tmp log",
    "git show HEAD:../../../etc/passwd",
    "git log -- /etc/passwd",
    "git log --format=%H -- ../x",
    "ls -R .",
    "ls /etc",
    "ls --hide=x .",
    "cat README.md",
    "grep -A x y .",
    "git log -n abc",
]


def test_bash_refuses_every_option_that_reads_or_writes_a_file(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    (d.repo_root / "README.md").write_text("refill tokens\n")
    ctx = context(d, "design-author", d.repo_root / "runs")
    for command in ESCAPES:
        assert bash(ctx, command).startswith("refused:"), command  # type: ignore[arg-type]
    assert not Path("/tmp/leak").exists()
    assert len(ctx.deps.refusals) == len(ESCAPES)


ALLOWED = [
    ("grep -rn refill code", "bucket.py"),
    ("grep -rn -e refill -- code", "bucket.py"),
    ("grep -c -w refill README.md", "1"),
    ("grep -A1 -B 1 --context=2 refill README.md", "refill"),
    ("wc -l README.md", "1 README.md"),
    ("ls -la docs/adr", "0001"),
]


def test_bash_runs_what_the_allow_list_permits(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    (d.repo_root / "README.md").write_text("refill tokens\n")
    ctx = context(d, "design-author", d.repo_root / "runs")
    for command, expected in ALLOWED:
        out = bash(ctx, command)  # type: ignore[arg-type]
        assert expected in out and not out.startswith("refused"), (command, out)


def test_a_recursive_search_skips_the_private_directories(ran: tuple[DesignDir, Path]) -> None:
    d, runs = ran
    (runs / "marker.txt").write_text("needle in the runs directory\n")
    (d.reviews / "marker.txt").write_text("needle in a params directory\n")
    (d.repo_root / "code" / "marker.txt").write_text("needle in the code\n")
    ctx = context(d, "design-author", runs)
    out = bash(ctx, "grep -rn needle .")  # type: ignore[arg-type]
    assert "needle in the code" in out and "runs directory" not in out and "params directory" not in out
    if shutil.which("rg"):
        out = bash(ctx, "rg -n needle")  # type: ignore[arg-type]
        assert "needle in the code" in out and "runs directory" not in out and "params directory" not in out
    if shutil.which("git"):
        assert "runs/marker.txt" not in bash(ctx, "git diff --stat")  # type: ignore[arg-type]
