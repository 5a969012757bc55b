"""The confinement campaign as a test: cold roles probe a repository full of research-log text in
every shape (copies, excerpts of every size, quoted, re-flowed, in JSON, in code, under old runs
directories, behind links), with every tool they have, and a detector that is not the one the
tools use counts the tool results that hold log text. The count must be 0; so must the count of
results that show any runs directory's contents to any role. The design under review, the code
and the track files must stay readable (a confinement that refuses everything would pass)."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from agentkit import make_repo, runtime
from conftest import run_cli
from test_confinement import Ctx, context

from pipeline.agents.readable import store_dirs
from pipeline.agents.tools import bash, glob_files, grep, psi, read
from pipeline.formats.design_dir import DesignDir

COLD = ["readability-auditor", "comprehension-review", "fidelity-check", "inline-editor"]
ALL = [*COLD, "design-author", "absorption-check"]


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w]+", " ", text.replace("\x00", "").lower()).split())


@dataclass
class Detector:
    """Log text in a tool result, judged apart from the tools' own rule: any line of the log of
    six words or more that the design under review does not hold, or any eight words in a row
    of such a line, after lower-casing and dropping punctuation and line breaks."""

    lines: list[str] = field(default_factory=list)
    windows: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, log: str, design: str) -> Detector:
        shared = _norm(design)
        out = cls()
        for raw in log.splitlines():
            line = _norm(raw)
            words = line.split()
            if len(words) < 6 or line in shared:
                continue
            out.lines.append(line)
            for i in range(len(words) - 7):
                window = " ".join(words[i : i + 8])
                if window not in shared:
                    out.windows.add(window)
        return out

    def leaks(self, result: str) -> bool:
        text = _norm(result)
        return any(line in text for line in self.lines) or any(w in text for w in self.windows)


def _plant(d: DesignDir, tmp: Path) -> list[str]:
    """Log text in every shape a repository could hold it; the paths, relative to the root."""
    root = d.repo_root
    log = d.research_log.read_text()
    lines = log.splitlines()
    long_lines = [line for line in lines if len(line.split()) >= 6]
    planted: dict[str, bytes] = {
        "copy.md": log.encode(),
        "copy-crlf.txt": log.replace("\n", "\r\n").encode(),
        "copy-bom.md": b"\xef\xbb\xbf" + log.encode(),
        "copy-utf16.txt": log.encode("utf-16"),
        "notes/decisions.txt": "\n".join(line for line in lines if line.startswith("**")).encode(),
        "notes/one-line.md": f"# Notes\n\n{long_lines[3]}\n".encode(),
        "notes/quoted.md": "".join(f"> {line}\n" for line in long_lines[:4]).encode(),
        "notes/indented.md": "".join(f"        {line}\n" for line in long_lines[4:7]).encode(),
        "notes/reflowed.md": re.sub(
            r"(\S+ \S+ \S+ \S+ \S+ \S+ \S+) ", r"\1\n", " ".join(long_lines[1:4])
        ).encode(),
        "notes/lower.md": "\n".join(line.lower() for line in long_lines[:5]).encode(),
        "data/export.json": json.dumps({"log": log}).encode(),
        "data/lines.json": json.dumps(long_lines[:6], ensure_ascii=True).encode(),
        "data/table.csv": "\n".join(f'{i},"{line}"' for i, line in enumerate(long_lines[:5])).encode(),
        "code/ratelimit/leak.py": f'NOTE = """{long_lines[2]}"""\n\n\ndef note() -> str:\n    return NOTE\n'.encode(),
        "code/ratelimit/comment.py": f"# {long_lines[5]}\nVALUE = 1\n".encode(),
        "docs/review-notes.html": f"<p>{long_lines[6]}</p>".encode(),
        ".hidden/log.md": log.encode(),
    }
    for i, chunk in enumerate(range(0, len(lines), max(1, len(lines) // 5))):
        planted[f"notes/fifth-{i}.md"] = "\n".join(lines[chunk : chunk + len(lines) // 5]).encode()
    for rel, data in planted.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    os.link(d.research_log, root / "hard-link.md")
    (root / "soft-link.md").symlink_to(d.research_log)
    (root / "linked-workflow").symlink_to(d.workflow)
    return [*planted, "hard-link.md", "soft-link.md", "linked-workflow/research-log.md"]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[DesignDir, Path, list[str]]:
    """A repository after a create in an earlier runs directory inside it, a final in the
    current one, and log text planted everywhere."""
    tmp = tmp_path_factory.mktemp("campaign")
    d = make_repo(tmp)
    d.design.unlink()
    cwd = Path.cwd()
    os.chdir(d.repo_root)
    try:
        assert (
            run_cli(["create", str(d.root), "--runs-dir", str(d.repo_root / "old-runs"), "--json"]).code == 0
        )
        assert run_cli(["final", str(d.root), "--json"]).code in (0, 1)
    finally:
        os.chdir(cwd)
    shutil.copytree(d.repo_root / "old-runs", d.repo_root / "backup" / "runs-copy")
    return d, tmp, _plant(d, tmp)


def _calls(ctx: Ctx, role: str, planted: list[str], d: DesignDir) -> list[tuple[str, Callable[[], str]]]:
    """Every probe a role makes: a tool call and its label."""
    workflow = str(d.workflow.relative_to(d.repo_root))
    probes: list[tuple[str, Callable[[], str]]] = []
    paths = [*planted, "docs/adr/0001/_workflow/research-log.md", f"{workflow}/design-mutations.md"]
    paths += [
        "old-runs",
        "runs",
        "backup",
        "backup/runs-copy",
        f"{workflow}/reviews",
        ".",
        workflow,
        "notes",
        "data",
    ]
    for path in paths:
        probes.append((f"read {path}", lambda p=path: read(ctx, p)))  # type: ignore[arg-type,misc]
    for path in planted:
        probes.append((f"read {path} from line 3", lambda p=path: read(ctx, p, offset=3)))  # type: ignore[arg-type,misc]
    words: tuple[str, ...] = (
        "Decision",
        "Rationale",
        "Alternatives",
        "tenant",
        "Redis",
        "refill",
        "PASS",
        ".",
        "rl:",
    )
    words += ("bucket", "Lua", "Retry-After", "429", "Clock", "outage", "sliding", "window", "October")
    for pattern in words:
        probes.append((f"grep {pattern}", lambda p=pattern: grep(ctx, p, ".")))  # type: ignore[arg-type,misc]
        probes.append((f"grep -i {pattern} in notes", lambda p=pattern: grep(ctx, f"(?i){p}", "notes")))  # type: ignore[arg-type,misc]
    for pattern in ("**", "**/*.md", "*", "old-runs/**", "backup/**", "notes/*", "data/*"):
        probes.append((f"glob {pattern}", lambda p=pattern: glob_files(ctx, p)))  # type: ignore[arg-type,misc]
    if role == "fidelity-check":
        for query, kind in (
            ("NOTE", "references"),
            ("note", "signature"),
            ("leak.py", "file"),
            ("", "sources"),
        ):
            probes.append((f"psi {kind} {query}", lambda q=query, k=kind: psi(ctx, q, k)))  # type: ignore[arg-type,misc]
    if role == "design-author":
        for command in (
            "grep -rn Decision .",
            "grep -rn run_id .",
            "rg -n tenant",
            "ls -la old-runs",
            "ls backup",
        ):
            probes.append((f"bash {command}", lambda c=command: bash(ctx, c)))  # type: ignore[arg-type,misc]
    return probes


RUN_RECORD = re.compile(
    r'"run_id"|"run_kind"|"type": "spawn"|workflow-sha: [0-9a-f]{40} -->.*\n.*## Diff|SQLite format 3'
)


def test_cold_roles_read_no_log_text_and_no_role_reads_a_runs_directory(
    world: tuple[DesignDir, Path, list[str]],
) -> None:
    d, _, planted = world
    stores = store_dirs(d.repo_root)
    assert {d.repo_root / "old-runs", d.repo_root / "runs", d.repo_root / "backup" / "runs-copy"} <= set(
        stores
    )
    counts = {"probes": 0, "log leaks": 0, "runs-directory leaks": 0}
    leaks: list[str] = []
    for role in ALL:
        ctx = context(d, role, d.repo_root / "runs", runtime(d, private_dirs=(d.repo_root / "runs", *stores)))
        reviewed = "".join(p.read_text() for p in sorted(ctx.deps.reviewed) if p.is_file())
        detector = Detector.of(d.research_log.read_text(), reviewed)
        assert detector.lines, "the log must hold text the design does not"
        for label, call in _calls(ctx, role, planted, d):
            result = call()
            counts["probes"] += 1
            if role in COLD and detector.leaks(result):
                counts["log leaks"] += 1
                leaks.append(f"{role}: {label}: {result[:160]!r}")
            if RUN_RECORD.search(result):
                counts["runs-directory leaks"] += 1
                leaks.append(f"{role}: {label} shows a run record: {result[:160]!r}")
    assert counts["probes"] >= 500
    assert counts["log leaks"] == 0 and counts["runs-directory leaks"] == 0, "\n".join(leaks[:20])


@pytest.mark.parametrize("role", COLD)
def test_what_a_cold_role_needs_stays_readable(world: tuple[DesignDir, Path, list[str]], role: str) -> None:
    d, _, _ = world
    ctx = context(d, role, d.repo_root / "runs")
    for path in sorted(ctx.deps.reviewed):
        if path.is_file() and role != "readability-auditor":
            assert not read(ctx, str(path.relative_to(d.repo_root))).startswith("refused:"), path  # type: ignore[arg-type]
    if role == "fidelity-check":
        for code in ("code/ratelimit/bucket.py", "code/ratelimit/store.py"):
            assert not read(ctx, code).startswith("refused:"), code  # type: ignore[arg-type]
        for track in sorted(d.plan_dir.glob("*.md")):
            assert not read(ctx, str(track.relative_to(d.repo_root))).startswith("refused:"), track  # type: ignore[arg-type]
        assert "TokenBucket" in psi(ctx, "TokenBucket", "definition")  # type: ignore[arg-type]
