"""The routes by which research-log text reached cold roles, each closed: the review log's quote
of the log, runs directories other than the current one, and excerpts of any size."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agentkit import make_repo, runtime
from conftest import run_cli
from graphkit import PASS, finding, go, returns, review, start
from test_confinement import Ctx, context, refused

from pipeline.agents.confine import LogWords, normalise
from pipeline.agents.readable import store_dirs
from pipeline.agents.tools import bash, glob_files, grep, psi, read
from pipeline.formats.contracts import ReviewOutput
from pipeline.formats.design_dir import DesignDir
from pipeline.formats.spawn_params import SpawnParams
from pipeline.graph.withhold import MARK

COLD = ["readability-auditor", "comprehension-review", "fidelity-check"]


def _log_lines(d: DesignDir) -> list[str]:
    return [line for line in d.research_log.read_text().splitlines() if len(line.split()) >= 6]


def _log_only(d: DesignDir) -> list[str]:
    """The log's lines whose words the design does not hold (what no cold role may see)."""
    words = LogWords.of(normalise(d.research_log.read_bytes()), [normalise(d.design.read_bytes())])
    return [line for line in _log_lines(d) if words.redact(line)[1]]


@pytest.fixture
def d(tmp_path: Path) -> DesignDir:
    return make_repo(tmp_path)


def test_the_review_log_keeps_no_quote_of_the_log_the_summary_does(d: DesignDir, tmp_path: Path) -> None:
    quoted: list[str] = []

    def absorption(params: SpawnParams) -> ReviewOutput:
        """Quotes a line of the log the draft does not hold, and names a decision by its title."""
        quoted[:] = [_log_only(d)[-1]]
        message = f"the draft drops what the log says: {quoted[0]}"
        return review(
            finding("abs-missing-record", section="Decision Records", quote=quoted[0], message=message)
        )

    run_dir = start(d, tmp_path)
    result = go(run_dir, {"absorption-check": returns(absorption), "comprehension-review": returns(PASS)})
    assert result.exit_code in (0, 1) and quoted
    entry = d.mutations.read_text()
    assert quoted[0] not in entry and MARK in entry and "**Withheld**" in entry
    assert not any(line in entry for line in _log_only(d))
    summary = (run_dir / "summary.md").read_text()
    assert quoted[0] in summary and "## Withheld from the review log" in summary
    # A cold role reads the review log, and sees no word of the log in it.
    ctx = context(d, "comprehension-review", tmp_path / "runs")
    text = read(ctx, str(d.mutations.relative_to(d.repo_root)))  # type: ignore[arg-type]
    assert not text.startswith("refused:") and "Mutation 1" in text
    assert not any(line in text for line in _log_only(d))


def test_every_runs_directory_ever_used_is_private(d: DesignDir) -> None:
    """An earlier --runs-dir inside the repository holds checkpoints, the cache and summaries
    that quote the log: no role reads it, by path, by Grep, by Glob or by Bash."""
    cli = ["create", str(d.root), "--json"]
    d.design.unlink()
    assert run_cli([*cli, "--runs-dir", str(d.repo_root / "old-runs")]).code == 0
    (d.repo_root / "notes").mkdir()
    assert run_cli(["final", str(d.root), "--json", "--runs-dir", str(d.repo_root / "notes")]).code in (0, 1)
    found = store_dirs(d.repo_root)
    assert d.repo_root / "old-runs" in found and d.repo_root / "notes" in found
    runs = d.repo_root / "runs"
    old = sorted(p for p in (d.repo_root / "old-runs").iterdir() if p.is_dir() and p.name[0].isdigit())[0]
    for role in [*COLD, "design-author", "absorption-check"]:
        ctx = context(d, role, runs, runtime(d, private_dirs=(runs, *found)))
        for path in ("old-runs", "old-runs/checkpoints.sqlite", f"old-runs/{old.name}/summary.md", "notes"):
            assert refused(ctx, path), (role, path)
        if role != "readability-auditor":
            assert "old-runs" not in grep(ctx, "Decision|decision", ".")  # type: ignore[arg-type]
            assert "old-runs" not in glob_files(ctx, "**")  # type: ignore[arg-type]
    author = context(d, "design-author", runs, runtime(d, private_dirs=(runs, *found)))
    out = bash(author, "grep -rn Mutation .")  # type: ignore[arg-type]
    assert "old-runs" not in out and "notes/" not in out


def test_a_runs_directory_is_private_by_its_markers_alone(d: DesignDir) -> None:
    """Even when no list names it (the runtime built without discovery): its markers decide."""
    stash = d.repo_root / "backup"
    (stash / "cache").mkdir(parents=True)
    (stash / "cache" / "cache.db").write_bytes(b"SQLite format 3\x00" + b"\x00" * 84)
    (stash / "notes.md").write_text("what a role must not read\n")
    ctx = context(d, "design-author", d.repo_root / "runs")
    assert refused(ctx, "backup/notes.md") and refused(ctx, "backup")
    assert "backup" not in glob_files(ctx, "**")  # type: ignore[arg-type]


def _chunks(lines: list[str], parts: int) -> list[list[str]]:
    size = max(1, len(lines) // parts)
    return [lines[i : i + size] for i in range(0, len(lines), size)]


@pytest.mark.parametrize("role", COLD)
def test_an_excerpt_of_the_log_is_refused_whatever_its_size(d: DesignDir, tmp_path: Path, role: str) -> None:
    only = _log_only(d)
    shapes: dict[str, str] = {}
    for i, chunk in enumerate(_chunks(d.research_log.read_text().splitlines(), 5)):
        shapes[f"fifth-{i}.md"] = "\n".join(chunk) + "\n"
    shapes["one-line.md"] = f"Meeting notes\n\n{only[0]}\n\nEverything else here is ours.\n"
    shapes["quoted.md"] = "".join(f"> {line}\n" for line in only[:2])
    shapes["reflowed.txt"] = " ".join(" ".join(only[1:3]).split()).replace(". ", ".\n")
    shapes["data.json"] = json.dumps({"notes": "\n".join(only[2:4])})
    shapes["comment.py"] = f"def f() -> None:\n    # {only[3]}\n    return None\n"
    shapes["shouting.md"] = only[4].upper() + "\n"
    for name, text in shapes.items():
        (d.repo_root / name).write_text(text)
    ctx = context(d, role, tmp_path / "runs")
    for name, text in shapes.items():
        if "fifth" in name and not any(line in text for line in only):
            continue  # a fifth that holds only what the design shares is no excerpt
        assert refused(ctx, name), name
    hits = grep(ctx, ".", ".")  # type: ignore[arg-type]
    assert not any(line in hits for line in only)
    # Precision: what the design under review and the code share with the log stays readable.
    assert not refused(ctx, str(d.design.relative_to(d.repo_root)))
    if role == "fidelity-check":
        assert not refused(ctx, "code/ratelimit/bucket.py")
        for track in sorted(d.plan_dir.glob("*.md")):
            assert not refused(ctx, str(track.relative_to(d.repo_root))), track


def test_psi_quotes_no_log_text_to_a_cold_role(d: DesignDir, tmp_path: Path) -> None:
    only = _log_only(d)
    (d.code_root / "ratelimit" / "notes.py").write_text(
        f'LEAK = "{only[0]}"\n\n\ndef leak() -> str:\n    return LEAK\n'
    )
    ctx = context(d, "fidelity-check", tmp_path / "runs")
    assert isinstance(ctx, Ctx)
    for query, kind in (
        ("LEAK", "references"),
        ("LEAK", "definition"),
        ("leak", "signature"),
        ("notes.py", "file"),
    ):
        out = psi(ctx, query, kind)  # type: ignore[arg-type]
        assert only[0] not in out and "ratelimit/notes.py" not in out, out
    warm = context(d, "design-author", tmp_path / "runs")
    assert "notes.py" in psi(warm, "notes.py", "file")  # type: ignore[arg-type]
