"""Confinement: every escape refused, cold roles never read the research log, writes only to output_path."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from agentkit import make_repo

from pipeline.agents.confine import forbid
from pipeline.agents.tools import ToolContext, bash, edit, glob_files, grep, psi, read, write


class Ctx:
    def __init__(self, deps: ToolContext) -> None:
        self.deps = deps


@pytest.fixture
def repo(tmp_path: Path):  # type: ignore[no-untyped-def]
    return make_repo(tmp_path)


def cold(d, role: str = "readability-auditor") -> Ctx:  # type: ignore[no-untyped-def]
    item = forbid(d.research_log)
    assert item is not None
    reviewed = frozenset({d.design.resolve()})  # the design under review: its share of the log is its own
    return Ctx(
        ToolContext(
            role=role, repo_root=d.repo_root, forbidden=[item], code_root=d.code_root, reviewed=reviewed
        )
    )


def test_escapes_are_refused(repo) -> None:  # type: ignore[no-untyped-def]
    ctx = cold(repo)
    outside = repo.repo_root.parent / "secret.txt"
    outside.write_text("secret")
    assert read(ctx, "../secret.txt").startswith("refused:")  # type: ignore[arg-type]
    assert read(ctx, str(outside)).startswith("refused:")  # type: ignore[arg-type]
    (repo.repo_root / "link").symlink_to(outside)
    assert read(ctx, "link").startswith("refused:")  # type: ignore[arg-type]
    assert "secret" not in grep(ctx, "secret", ".")  # type: ignore[arg-type]
    assert glob_files(ctx, "../*").startswith("refused:")  # type: ignore[arg-type]
    assert len(ctx.deps.refusals) == 4


def test_cold_roles_never_read_the_research_log(repo) -> None:  # type: ignore[no-untyped-def]
    ctx = cold(repo)
    log = repo.research_log
    rel = str(log.relative_to(repo.repo_root))
    assert read(ctx, rel).startswith("refused:")  # type: ignore[arg-type]
    assert read(ctx, str(log)).startswith("refused:")  # type: ignore[arg-type]
    (repo.repo_root / "notes.md").symlink_to(log)
    assert read(ctx, "notes.md").startswith("refused:")  # type: ignore[arg-type]
    os.link(log, repo.repo_root / "hard.md")
    assert read(ctx, "hard.md").startswith("refused:")  # type: ignore[arg-type]
    shutil.copy(log, repo.repo_root / "copy-of-decisions.txt")
    assert read(ctx, "copy-of-decisions.txt").startswith("refused:")  # type: ignore[arg-type]
    assert read(ctx, "docs/adr/0001/_workflow/../_workflow/research-log.md").startswith("refused:")  # type: ignore[arg-type]
    hits = grep(ctx, "Adversarial gate record", ".")  # type: ignore[arg-type]
    assert "research-log" not in hits and "copy-of-decisions" not in hits and "hard.md" not in hits
    listing = read(ctx, "docs/adr/0001/_workflow")  # type: ignore[arg-type]
    assert "research-log.md" not in listing and "design.md" in listing
    assert "research-log.md" not in glob_files(ctx, "**/*.md")  # type: ignore[arg-type]
    # A role allowed to read the log reads it.
    warm = Ctx(ToolContext(role="absorption-check", repo_root=repo.repo_root))
    assert "## Decision Log" in read(warm, rel)  # type: ignore[arg-type]


def test_writes_only_to_output_path(repo) -> None:  # type: ignore[no-untyped-def]
    out = repo.workflow / "design.md"
    ctx = Ctx(ToolContext(role="design-author", repo_root=repo.repo_root, output_path=out))
    assert write(ctx, "docs/adr/0001/_workflow/other.md", "x").startswith("refused:")  # type: ignore[arg-type]
    assert write(ctx, str(repo.research_log), "x").startswith("refused:")  # type: ignore[arg-type]
    assert not (repo.workflow / "other.md").exists()
    assert write(ctx, str(out), "# T\n\nbody\n").startswith("wrote")  # type: ignore[arg-type]
    assert edit(ctx, str(out), "body", "new body").startswith("edited")  # type: ignore[arg-type]
    assert out.read_text() == "# T\n\nnew body\n"
    assert "exactly once" in edit(ctx, str(out), "missing", "x")  # type: ignore[arg-type]
    reader = Ctx(ToolContext(role="comprehension-review", repo_root=repo.repo_root))
    assert edit(reader, str(out), "new", "old").startswith("refused:")  # type: ignore[arg-type]


def test_bash_allow_list(repo) -> None:  # type: ignore[no-untyped-def]
    ctx = Ctx(ToolContext(role="design-author", repo_root=repo.repo_root, output_path=repo.design))
    assert "design.md" in bash(ctx, "ls docs/adr/0001/_workflow")  # type: ignore[arg-type]
    assert bash(ctx, "cat /etc/passwd").startswith("refused:")  # type: ignore[arg-type]
    assert bash(ctx, "ls | cat").startswith("refused:")  # type: ignore[arg-type]
    assert bash(ctx, "git push origin").startswith("refused:")  # type: ignore[arg-type]
    assert bash(ctx, "git diff --output=/tmp/x").startswith("refused:")  # type: ignore[arg-type]
    assert bash(ctx, "rg --pre sh x").startswith("refused:")  # type: ignore[arg-type]
    assert bash(ctx, "ls /").startswith("refused:")  # type: ignore[arg-type]
    assert "refill" in bash(ctx, "grep -rn refill code")  # type: ignore[arg-type]


def test_a_listed_command_that_is_not_installed_says_so(repo, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    tools = ("Read", "Grep", "Write", "Edit", "Bash", "PSI")
    ctx = Ctx(
        ToolContext(role="design-author", repo_root=repo.repo_root, output_path=repo.design, tools=tools)
    )
    monkeypatch.setenv("PATH", str(repo.repo_root / "no-such-bin"))
    out = bash(ctx, "rg -n refill code")  # type: ignore[arg-type]
    assert out.startswith("error: rg is not installed on this machine")
    assert "the grep tool" in out and "the read tool" in out, "the tools the role has"
    assert "Glob" not in out and "No such file" not in out


def test_grep_and_glob_skip_version_control(repo) -> None:  # type: ignore[no-untyped-def]
    git = repo.repo_root / ".git"
    (git / "objects").mkdir(parents=True, exist_ok=True)
    (git / "COMMIT_EDITMSG").write_text("refill the bucket\n")
    (git / "objects" / "refill.md").write_text("refill\n")
    ctx = Ctx(ToolContext(role="design-author", repo_root=repo.repo_root, output_path=repo.design))
    shell = bash(ctx, "grep -rn refill .")  # type: ignore[arg-type]
    assert "code/" in shell and ".git/" not in shell
    assert ".git/" not in bash(ctx, "grep -rln refill")  # type: ignore[arg-type]
    assert ".git" not in grep(ctx, "refill")  # type: ignore[arg-type]
    assert ".git" not in glob_files(ctx, "**/*.md") and ".git" not in glob_files(ctx, ".git/*")  # type: ignore[arg-type]


def test_psi_lookups(repo) -> None:  # type: ignore[no-untyped-def]
    ctx = Ctx(ToolContext(role="fidelity-check", repo_root=repo.repo_root, code_root=repo.code_root))
    assert psi(ctx, "TokenBucket.take") == "method TokenBucket.take at code/ratelimit/bucket.py:36"  # type: ignore[arg-type]
    assert "def bucket_key(tenant: str, route: str) -> str" in psi(ctx, "bucket_key", "signature")  # type: ignore[arg-type]
    assert "code/ratelimit/middleware.py" in psi(ctx, "bucket_key", "references")  # type: ignore[arg-type]
    assert psi(ctx, "NoSuchThing") == (  # type: ignore[arg-type]
        "no definition of NoSuchThing, and the name appears nowhere under the code root (python 5 files)"
    )
    assert psi(ctx, "self").startswith("no definition of self; the name appears on ")  # type: ignore[arg-type]
    assert psi(ctx, "ratelimit/store.py", "file") == "code/ratelimit/store.py"  # type: ignore[arg-type]


def test_the_auditor_sees_only_its_slice_the_headings_and_the_anchors(repo) -> None:  # type: ignore[no-untyped-def]
    from agentkit import runtime

    from pipeline.agents.roles import load_roles
    from pipeline.agents.spawn import prepare
    from pipeline.formats.spawn_params import SpawnParams

    text = repo.design.read_text()
    repo.design.write_text(text + "\n## Appendix\n\n**TL;DR:** More.\n\nSecret appendix sentence.\n")
    roles = load_roles(repo.repo_root)
    section = next(
        n
        for n, line in enumerate(repo.design.read_text().splitlines(), 1)
        if line == "## Buckets per tenant and route"
    )
    params = SpawnParams(
        role="readability-auditor",
        kind="phase1-creation",
        target="design",
        target_path=str(repo.design.relative_to(repo.repo_root)),
        slice=(section, section + 8),
        slice_count=2,
        total_lines=400,
    )
    spawn = prepare(roles["readability-auditor"], params, repo.reviews, repo.repo_root)
    rt = runtime(repo)
    ctx = Ctx(rt.tool_context(spawn, repo.research_log, repo.code_root))
    seen = read(ctx, params.target_path)  # type: ignore[arg-type]
    assert "## Appendix" in seen and "Secret appendix sentence" not in seen  # heading yes, body no
    assert "The API limits how fast" in seen  # the Overview anchor
    assert "RateLimitMiddleware" in seen  # its own slice
    assert len(seen.splitlines()) == len(repo.design.read_text().splitlines())  # line numbers kept
    numbered = seen.splitlines()
    assert numbered[section - 1] == f"{section}\t## Buckets per tenant and route"
    assert numbered[section + 20] == f"{section + 21}\t" or numbered[section + 20].startswith(
        f"{section + 21}\t#"
    )
    assert "Secret" not in grep(ctx, "Secret", params.target_path)  # type: ignore[arg-type]
    assert read(ctx, "code/ratelimit/store.py").startswith("refused:")  # type: ignore[arg-type]
    assert read(ctx, str(spawn.params_path)).startswith("1\t{")  # type: ignore[arg-type]


def test_the_built_in_grep_takes_what_a_model_asks_of_grep(repo) -> None:  # type: ignore[no-untyped-def]
    ctx = Ctx(ToolContext(role="fidelity-check", repo_root=repo.repo_root, code_root=repo.code_root))
    either = grep(ctx, "def (take|refill)", "code", "*.py")  # type: ignore[arg-type]
    assert "code/ratelimit/bucket.py:31:    def refill(" in either and "store.py" in either
    assert grep(ctx, "TOKENBUCKET", "code") == "no matches"  # type: ignore[arg-type]
    assert "class TokenBucket" in grep(ctx, "TOKENBUCKET", "code", ignore_case=True)  # type: ignore[arg-type]
    around = grep(ctx, "def refill", "code/ratelimit/bucket.py", context=1).splitlines()  # type: ignore[arg-type]
    assert [line[:28] for line in around] == [
        "code/ratelimit/bucket.py-30-",
        "code/ratelimit/bucket.py:31:",
        "code/ratelimit/bucket.py-32-",
    ]
    two = grep(ctx, "def (take|refill)", "code/ratelimit/bucket.py", context=1)  # type: ignore[arg-type]
    assert two.count("\n--\n") == 1, "two groups, one separator"
    # grep's basic syntax is a literal in a Python pattern: the answer says so.
    said = grep(ctx, "take\\|refill", "code")  # type: ignore[arg-type]
    assert said.startswith("no matches (the pattern is a Python regular expression")
    assert grep(ctx, "(", "code").startswith("error: bad pattern")  # type: ignore[arg-type]


def test_the_built_in_grep_stops_at_200_matches_and_says_how_to_narrow(repo) -> None:  # type: ignore[no-untyped-def]
    (repo.repo_root / "many.txt").write_text("".join(f"hit {n}\n" for n in range(250)))
    ctx = Ctx(ToolContext(role="fidelity-check", repo_root=repo.repo_root))
    out = grep(ctx, "^hit", "many.txt").splitlines()  # type: ignore[arg-type]
    assert len(out) == 201 and out[199] == "many.txt:200:hit 199"
    assert out[200] == "(truncated at 200 matches: narrow the path, the glob or the pattern)"


def test_a_pattern_that_backtracks_without_end_stops_at_the_time_limit(repo) -> None:  # type: ignore[no-untyped-def]
    """The pattern's match runs with a time limit and lets go of the GIL: the search answers
    with a named error, and another thread runs meanwhile."""
    import threading

    (repo.repo_root / "code" / "words.txt").write_text("a" * 60 + "b\n")
    ctx = Ctx(ToolContext(role="fidelity-check", repo_root=repo.repo_root, bash_timeout=0.5))
    ticks: list[int] = []
    stop = threading.Event()

    def tick() -> None:
        while not stop.is_set():
            ticks.append(1)
            stop.wait(0.01)

    ticking = threading.Thread(target=tick)
    ticking.start()
    try:
        out = grep(ctx, "(a|aa)+$", "code/words.txt")  # type: ignore[arg-type]
    finally:
        stop.set()
        ticking.join()
    assert out.startswith("error: the search stopped at its time limit (0.5s) in code/words.txt"), out
    assert "simplify it" in out
    assert len(ticks) > 5, "the search held the GIL"


def test_the_built_in_grep_tells_no_match_from_a_wrong_question(repo) -> None:  # type: ignore[no-untyped-def]
    ctx = Ctx(ToolContext(role="fidelity-check", repo_root=repo.repo_root))
    assert grep(ctx, "refill", "code/ratelimit/bukcet.py") == (  # type: ignore[arg-type]
        "error: code/ratelimit/bukcet.py: no such file or directory (did you mean code/ratelimit/bucket.py?)"
    )
    assert grep(ctx, "refill", "nowhere") == "error: nowhere: no such file or directory"  # type: ignore[arg-type]
    assert read(ctx, "code/ratelimit/bukcet.py").startswith("error: code/ratelimit/bukcet.py: no such file")  # type: ignore[arg-type]
    # grep's POSIX classes are read as grep reads them.
    posix = grep(ctx, "^[[:space:]]*def take", "code")  # type: ignore[arg-type]
    assert posix.startswith("code/ratelimit/bucket.py:36:    def take("), posix
    assert "BucketState" in grep(ctx, "[[:upper:]][[:lower:]]+State", "code/ratelimit/bucket.py")  # type: ignore[arg-type]
    # A glob's braces expand, in Grep and in Glob.
    braced = grep(ctx, "refill", "code", glob="*.{py,md}")  # type: ignore[arg-type]
    assert "code/ratelimit/bucket.py:" in braced
    both = glob_files(ctx, "code/ratelimit/{bucket,store}.py")  # type: ignore[arg-type]
    assert both == "code/ratelimit/bucket.py\ncode/ratelimit/store.py"
    # grep's word edges are literal characters in a Python pattern: the answer says so.
    assert "\\b for a word's edge" in grep(ctx, "\\<take\\>", "code")  # type: ignore[arg-type]
    # A glob given as the path, a FIFO, a pattern that is no regular expression: each says so.
    assert "give the directory as path and the pattern as glob" in grep(ctx, "x", "code/ratelimit/*.py")  # type: ignore[arg-type]
    os.mkfifo(repo.repo_root / "code" / "pipe.fifo")
    assert grep(ctx, "x", "code/pipe.fifo") == "error: code/pipe.fifo: not a regular file"  # type: ignore[arg-type]
    assert grep(ctx, "def take(", "code").endswith("takes a backslash before it: def take\\()")  # type: ignore[arg-type]


def test_a_line_match_is_found_whatever_its_anchors(repo) -> None:  # type: ignore[no-untyped-def]
    """Files are matched whole first; anchors and lookarounds that tell a line from the text
    still find each line as grep does."""
    (repo.repo_root / "lines.txt").write_text("first\nsecond line\nthird\n")
    ctx = Ctx(ToolContext(role="fidelity-check", repo_root=repo.repo_root))
    for pattern, line in [
        ("\\Asecond", 2),
        ("line\\Z", 2),
        ("(?<![\\s\\S])third", 3),
        ("^second", 2),
        ("line$", 2),
        ("d(?![\\s\\S])", 3),
    ]:
        assert grep(ctx, pattern, "lines.txt").splitlines()[0].startswith(f"lines.txt:{line}:"), pattern  # type: ignore[arg-type]
    assert grep(ctx, "first\\s+second", "lines.txt") == "no matches", "a line is searched alone"  # type: ignore[arg-type]


def test_a_search_answer_is_cut_to_size_and_says_so(repo) -> None:  # type: ignore[no-untyped-def]
    (repo.repo_root / "long.txt").write_text(("x" * 2_000 + "\n") * 50)
    (repo.repo_root / "longline.txt").write_text("y" * 100_000 + "\n")
    ctx = Ctx(ToolContext(role="fidelity-check", repo_root=repo.repo_root))
    out = grep(ctx, "x", "long.txt").splitlines()  # type: ignore[arg-type]
    assert all(line.endswith(":" + "x" * 2_000) for line in out[:-1]), "whole lines"
    assert len(out) - 1 < 50 and out[-1].startswith(
        f"(cut at 30,000 characters, after {len(out) - 1} matches"
    )
    one = grep(ctx, "y", "longline.txt").splitlines()  # type: ignore[arg-type]
    assert len(one[0]) == 30_000 and one[1].startswith("(cut at 30,000 characters, after 0 matches")


def test_the_time_limit_counts_matching_only(repo, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """A walk over a large tree (a cold role's content checks) is not the pattern's time: on a
    clock that jumps an hour per file walked, the search still answers."""
    from pipeline.agents import regex_search, tools

    now = [0.0]
    walked = tools._walk_files

    def slow_walk(deps: ToolContext, base: Path) -> list[Path]:
        found = walked(deps, base)
        now[0] += 3600.0 * len(found)
        return found

    class Clock:
        @staticmethod
        def monotonic() -> float:
            return now[0]

    monkeypatch.setattr(tools, "_walk_files", slow_walk)
    monkeypatch.setattr(regex_search, "time", Clock)
    ctx = Ctx(ToolContext(role="fidelity-check", repo_root=repo.repo_root, bash_timeout=1.0))
    assert grep(ctx, "def take", "code").startswith("code/ratelimit/bucket.py:36:")  # type: ignore[arg-type]
