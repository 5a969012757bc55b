"""The Bash tool on the command lines a model writes: split into words as a shell splits them,
operators refused only outside quotes, one command run with its arguments and no shell.

The table holds command lines of the kind models send when they read a code base (quoted
alternation, anchors, character classes, globs, sed ranges, find tests, git history), each with
what it must show or why it is refused."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from agentkit import make_repo

from pipeline.agents import run_command, shell
from pipeline.agents.command_line import ShellSyntax, split_command
from pipeline.agents.confine import Private
from pipeline.agents.tools import ToolContext, bash, bash_description

AUTHOR_TOOLS = ("Read", "Grep", "Write", "Edit", "Bash", "PSI")


class Ctx:
    def __init__(self, deps: ToolContext) -> None:
        self.deps = deps


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=Ada", "-c", "user.email=ada@example.org", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


@pytest.fixture(scope="module")
def author(tmp_path_factory: pytest.TempPathFactory) -> Ctx:
    """The author's tools on a repository with two commits, a table, a file name with a space
    and a runs directory (private)."""
    d = make_repo(tmp_path_factory.mktemp("bash"))
    root = d.repo_root
    shutil.rmtree(root / ".git")
    (root / "notes.md").write_text(
        "| key | value |\n| --- | --- |\n| rate | 10 |\nCost is $5 per <Bucket>.\nend of line;\n"
    )
    (root / "code" / "name with space.txt").write_text("spaced refill\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "Token bucket: first version")
    (root / "code" / "ratelimit" / "bucket.py").write_text(
        (root / "code" / "ratelimit" / "bucket.py").read_text() + "\n# refill jitter\n"
    )
    _git(root, "commit", "-qam", "Refill: add jitter note")
    runs = root / "runs"
    runs.mkdir()
    (runs / "checkpoints.sqlite").write_text("refill secret of the run store\n")
    private = Private((runs,), frozenset(), root)
    return Ctx(
        ToolContext(
            role="design-author", repo_root=root, output_path=d.design, tools=AUTHOR_TOOLS, private=private
        )
    )


RUNS = "run"
FAILS = "exit "
"""It ran, and the command itself failed (its exit status and message come back)."""
REFUSED = "refused"
TABLE: list[tuple[str, str, str]] = [
    # Quoted alternation, as grep's basic syntax and as the extended one.
    ('grep -n "refill\\|take" code/ratelimit/bucket.py', RUNS, "def take("),
    ("grep -nE 'refill|take' code/ratelimit/bucket.py", RUNS, "def refill("),
    ('grep -rnE "class (TokenBucket|BucketState)" code', RUNS, "class TokenBucket"),
    ("grep -rn -e refill -e retry_after code/ratelimit", RUNS, "retry_after"),
    # Anchors: $ at a pattern's end, ^ at its start, inside either kind of quote.
    ("grep -n 'Decision:$' code/ratelimit/bucket.py", RUNS, "Decision:"),
    ('grep -rn "^class " code/ratelimit', RUNS, "bucket.py"),
    ('grep -c "^$" code/ratelimit/bucket.py', RUNS, ""),
    ("grep -n 'tokens)$' code/ratelimit/store.py", RUNS, ""),
    # Shell metacharacters inside a quoted pattern are text.
    ("grep -n '<Bucket>' notes.md", RUNS, "4:Cost is $5 per <Bucket>."),
    ("grep -c '|' notes.md", RUNS, "3"),
    ("grep -n 'line;' notes.md", RUNS, "end of line;"),
    ("grep -nF '$5' notes.md", RUNS, "Cost is"),
    ('grep -n "a&b\\|rate" notes.md', RUNS, "rate"),
    # Character classes and repetition.
    ("grep -rnE 'def [a-z_]+\\(' code/ratelimit/bucket.py", RUNS, "def take("),
    ("grep -nE '[0-9]{2,}' notes.md", RUNS, "10"),
    ('grep -rnw "take" --include="*.py" code', RUNS, "store.py"),
    # Globs: unquoted ones name the files they match, quoted ones reach the command as written.
    ("grep -l refill code/ratelimit/*.py", RUNS, "code/ratelimit/bucket.py"),
    ("wc -l code/ratelimit/*.py", RUNS, "total"),
    ("grep -n refill 'code/name with space.txt'", RUNS, "spaced refill"),
    ("find code -name '*.py' -type f", RUNS, "code/ratelimit/store.py"),
    ('find . -type f \\( -name "*.py" -o -name "*.md" \\) -maxdepth 3', RUNS, "notes.md"),
    ("find code -maxdepth 1 -type d", RUNS, "code/ratelimit"),
    ("find . -name '*.sqlite'", RUNS, "no matches"),
    ("find code -name '*.nothing'", RUNS, "no matches"),
    # Braces expand as in bash, before the glob; a quoted brace is text.
    ("grep -rl refill --include=*.{py,txt} code", RUNS, "code/name with space.txt"),
    ("grep -n 'def take' code/ratelimit/{bucket,store}.py", RUNS, "code/ratelimit/bucket.py:36:"),
    ("grep -cE 'ref{1,2}ill' code/ratelimit/bucket.py", RUNS, ""),
    ("wc -l code/ratelimit/{clock,store}.py", RUNS, "code/ratelimit/clock.py"),
    ("sed -n '{1,3}p' code/ratelimit/bucket.py", REFUSED, "sed runs only scripts that print"),
    ("ls code/{1..2000}", REFUSED, "more than 1000 words"),
    # Reading parts of a file.
    ("sed -n '1,5p' code/ratelimit/bucket.py", RUNS, "The token bucket"),
    ("sed -n '/def take/,/return/p' code/ratelimit/bucket.py", RUNS, "def take("),
    ("sed -n 3p code/ratelimit/bucket.py", RUNS, "from __future__"),
    ("sed -n '$p' notes.md", RUNS, "end of line;"),
    ("head -n 3 code/ratelimit/bucket.py", RUNS, "The token bucket"),
    ("head -5 notes.md", RUNS, "rate"),
    ("tail -n 2 code/ratelimit/bucket.py", RUNS, "refill jitter"),
    ("tail -n +4 notes.md", RUNS, "Cost is"),
    ("wc -l code/ratelimit/bucket.py notes.md", RUNS, "notes.md"),
    ("ls -la code/ratelimit", RUNS, "bucket.py"),
    # History.
    ("git log --oneline -n 5", RUNS, "Refill: add jitter note"),
    ("git --no-pager log --oneline -n 1", RUNS, "Refill: add jitter note"),
    ('git log --oneline --grep="Token bucket"', RUNS, "first version"),
    ("git log -p -n 1 -- code/ratelimit/bucket.py", RUNS, "+# refill jitter"),
    ("git show --stat HEAD", RUNS, "bucket.py"),
    ("git show HEAD~1:code/ratelimit/bucket.py", RUNS, "class TokenBucket"),
    ("git grep -n 'refill\\|take' -- code", RUNS, "code/ratelimit/bucket.py"),
    ('git grep -nE "def (take|refill)"', RUNS, "store.py"),
    ("git grep -c refill HEAD~1 -- code", RUNS, "HEAD~1:code/ratelimit/bucket.py"),
    ("git diff HEAD~1 --stat", RUNS, "bucket.py"),
    ("git blame -L 1,3 code/ratelimit/bucket.py", RUNS, "token bucket"),
    # Errors dropped as a shell would drop them, or merged (they always are).
    ("grep -rn refill code 2>/dev/null", RUNS, "bucket.py"),
    ("grep -n refill no-such-file 2>&1", FAILS, "No such file"),
    # Operators outside quotes are refused, each by name.
    ("grep -rn refill code | head -5", REFUSED, "a pipe (|)"),
    ("grep -n refill code/ratelimit/bucket.py > out.txt", REFUSED, "redirection (>)"),
    ("grep -c refill < code/ratelimit/bucket.py", REFUSED, "redirection (<)"),
    ("ls code; ls docs", REFUSED, "; is a shell operator"),
    ("ls code || ls .", REFUSED, "|| runs a second command when the first fails"),
    ("grep -q refill notes.md && echo yes", REFUSED, "&& is a shell operator"),
    ("grep -rn $PATTERN code", REFUSED, "$PATTERN would be expanded"),
    ('grep -rn "$(id)" code', REFUSED, "$( would be expanded"),
    ("grep -rn `id` code", REFUSED, "`...` would be expanded"),
    ("grep -n 'unclosed code", REFUSED, "single quote is not closed"),
    # What the allow-list keeps out, however it is spelled.
    ("find . -name '*.py' -exec cat {} \\;", REFUSED, "find: -exec is not allowed"),
    ("find . -name '*.py' -delete", REFUSED, "find: -delete is not allowed"),
    ("find -L . -name x", REFUSED, "find: -L is not allowed"),
    ("find / -name passwd", REFUSED, "outside the repository root"),
    ("sed -n 's/a/b/w /tmp/leak' notes.md", REFUSED, "sed runs only scripts that print"),
    ("sed -i 's/rate/leak/' notes.md", REFUSED, "sed: option -i is not allowed"),
    ("sed -n -e '1p' -e 'w /tmp/leak' notes.md", REFUSED, "sed: -e does not take"),
    ("tail -f notes.md", REFUSED, "tail: option -f is not allowed"),
    ("git grep -O refill", REFUSED, "option -O is not allowed"),
    ("git grep --no-index refill /etc", REFUSED, "option --no-index is not allowed"),
    ("ls runs/*", REFUSED, "run records"),
    # Version control is read through git, never searched as files.
    ("grep -rn refill .git", REFUSED, "version control (.git) is not searched"),
    ("find .git -name HEAD", REFUSED, "use git log, git show or git grep"),
    ("git -C code log", REFUSED, "git: -C before the subcommand is not allowed"),
    # A pattern that starts with - is an option unless -e gives it.
    ('grep -rn "--force" code', REFUSED, "to search for '--force', give it after -e: grep -e '--force'"),
    ("grep -rn -e --force code", RUNS, "no matches"),
    ("cat notes.md", REFUSED, "; to read a file, use the read tool"),
]


def test_the_table_is_long_enough_to_pin_what_models_write() -> None:
    assert len(TABLE) >= 30
    assert sum(kind == RUNS for _, kind, _ in TABLE) >= 30


@pytest.mark.skipif(shutil.which("git") is None, reason="the table's history rows need git")
@pytest.mark.parametrize(("command", "kind", "shows"), TABLE, ids=[c for c, _, _ in TABLE])
def test_a_command_line_runs_or_is_refused_by_name(author: Ctx, command: str, kind: str, shows: str) -> None:
    out = bash(author, command)  # type: ignore[arg-type]
    if kind in (REFUSED, FAILS):
        assert out.startswith("refused: " if kind == REFUSED else "exit "), out
        assert shows in out, out
    else:
        assert not out.startswith(("refused", "error")), out
        assert not out.startswith("exit "), out
        assert shows in out, out
    assert "refill secret of the run store" not in out


def test_a_quoted_glob_reaches_the_command_and_an_unquoted_one_names_files(author: Ctx) -> None:
    quoted = bash(author, "grep -c refill 'code/ratelimit/*.py'")  # type: ignore[arg-type]
    assert "No such file" in quoted, "a quoted glob is one literal name, as in a shell"
    unquoted = bash(author, "grep -c refill code/ratelimit/*.py")  # type: ignore[arg-type]
    assert "code/ratelimit/bucket.py:" in unquoted and "code/ratelimit/store.py:" in unquoted
    assert bash(author, "grep -c refill code/*.nothing").startswith("exit 2")  # type: ignore[arg-type]


@pytest.fixture
def big(tmp_path: Path) -> Ctx:
    """The author's tools on a repository with a file of 20,000 lines and one of a single line
    of 100,000 characters."""
    (tmp_path / "big.txt").write_text("".join(f"line {n} filler text\n" for n in range(1, 20_001)))
    (tmp_path / "longline.txt").write_text("x" * 100_000 + "\n")
    return Ctx(ToolContext(role="design-author", repo_root=tmp_path, tools=AUTHOR_TOOLS))


def test_a_long_output_is_cut_at_a_line_end_and_says_how_to_narrow(big: Ctx) -> None:
    out = bash(big, "grep -n filler big.txt")  # type: ignore[arg-type]
    body, note = out.removesuffix("\n").rsplit("\n", 1)
    lines = body.splitlines()
    assert len(out) <= 30_000 + len(note) + 2
    assert lines[-1] == f"{len(lines)}:line {len(lines)} filler text", "whole lines only"
    size = len(body.encode()) + 1
    total = len(Path(big.deps.repo_root / "big.txt").read_text()) + sum(
        len(f"{n}:") for n in range(1, 20_001)
    )
    assert note == (
        f"[output cut after {len(lines)} lines ({size:,} of {total:,} bytes); narrow the command:"
        " grep -m N, head -n N, sed -n 'A,Bp' FILE, or a narrower path]"
    )


def test_one_line_longer_than_the_cap_is_cut_inside_it_and_says_so(big: Ctx) -> None:
    out = bash(big, "head -n 1 longline.txt")  # type: ignore[arg-type]
    body, note = out.removesuffix("\n").rsplit("\n", 1)
    assert body == "x" * 30_000
    assert note.startswith("[output cut at 30,000 characters, inside line 1 (of 100,001 bytes); narrow")


def test_an_error_is_shown_whole_beside_a_long_output(big: Ctx) -> None:
    out = bash(big, "grep -n filler big.txt no-such-file")  # type: ignore[arg-type]
    assert out.startswith("exit 2\n") and "[output cut after " in out
    assert out.endswith("grep: no-such-file: No such file or directory\n"), out[-300:]


def test_a_command_past_its_time_limit_is_stopped(big: Ctx) -> None:
    """A FIFO nobody writes to holds ``head`` forever: the time limit kills it."""
    os.mkfifo(big.deps.repo_root / "pipe.fifo")
    big.deps.bash_timeout = 0.5
    assert bash(big, "head -n 1 pipe.fifo") == "error: timed out after 0.5s"  # type: ignore[arg-type]


def test_a_recursive_search_leaves_out_a_hard_link_to_a_private_file(tmp_path: Path) -> None:
    """A hard link elsewhere to a run-store file is private by inode: grep -r searches the
    files beside it (and names them as grep -r does), git grep excludes it, rg is refused."""
    root = tmp_path
    runs = root / "runs"
    runs.mkdir()
    (runs / "checkpoints.sqlite").write_text("refill secret of the run store\n")
    (root / "notes" / "deep").mkdir(parents=True)
    os.link(runs / "checkpoints.sqlite", root / "notes" / "cp-hard.txt")
    (root / "notes" / "other.md").write_text("another secret, not private\n")
    (root / "notes" / "deep" / "cp-hard.txt").write_text("a secret of the same name\n")
    (root / "notes" / "skipped").mkdir()
    (root / "notes" / "skipped" / "x.md").write_text("secret in an excluded directory\n")
    _git(root, "init", "-q")
    _git(root, "add", "notes")
    _git(root, "commit", "-qm", "notes")
    ctx = Ctx(
        ToolContext(
            role="design-author",
            repo_root=root,
            tools=AUTHOR_TOOLS,
            private=Private((runs,), frozenset(), root),
        )
    )
    same, other, skipped = (
        "notes/deep/cp-hard.txt:1:a secret of the same name",
        "notes/other.md:1:another secret, not private",
        "notes/skipped/x.md:1:secret in an excluded directory",
    )
    found = {
        "grep -rn secret .": [f"./{same}", f"./{other}", f"./{skipped}"],
        "grep -rn secret": [same, other, skipped],
        "grep -rn secret notes/": [same, other, skipped],
        "grep -rl secret notes --exclude-dir=skipped": ["notes/deep/cp-hard.txt", "notes/other.md"],
        "grep -rc secret notes/deep": ["notes/deep/cp-hard.txt:1"],
        "grep -rn secret --include=*.md notes": [other, skipped],
        "git grep -n secret": [same, other, skipped],
        "git grep -n secret -- notes": [same, other, skipped],
    }
    for command, lines in found.items():
        out = bash(ctx, command)  # type: ignore[arg-type]
        assert sorted(out.splitlines()) == lines, command
    assert bash(ctx, "grep -rh secret notes").count("\n") == 3  # type: ignore[arg-type]
    assert bash(ctx, "grep -rn nowhere notes") == "no matches (exit 1)"  # type: ignore[arg-type]
    refused = bash(ctx, "rg -n secret notes")  # type: ignore[arg-type]
    assert refused.startswith("refused: notes/cp-hard.txt is a hard link to a private file"), refused
    assert "run store" not in bash(ctx, "grep -n secret notes/cp-hard.txt")  # type: ignore[arg-type]


def test_a_search_that_finds_nothing_says_so() -> None:
    assert run_command._searches(["grep", "-n", "--", "x", "f"])
    assert not run_command._searches(["ls", "x"])


def test_no_match_is_not_an_error(author: Ctx) -> None:
    assert bash(author, "grep -rn zzzz-nowhere code") == "no matches (exit 1)"  # type: ignore[arg-type]


def test_the_words_are_those_a_shell_would_pass() -> None:
    cases = {
        'grep -n "a\\|b" f': ["grep", "-n", "a\\|b", "f"],
        "grep -E 'a|b' f": ["grep", "-E", "a|b", "f"],
        'grep "x$" f': ["grep", "x$", "f"],
        "grep x$ f": ["grep", "x$", "f"],
        "grep '$HOME' f": ["grep", "$HOME", "f"],
        'grep "say \\"hi\\"" f': ["grep", 'say "hi"', "f"],
        "grep a\\ b f": ["grep", "a b", "f"],
        "grep '' f": ["grep", "", "f"],
        "grep -n x f # a comment": ["grep", "-n", "x", "f"],
        "find . \\( -name a \\)": ["find", ".", "(", "-name", "a", ")"],
        "grep x f 2>/dev/null": ["grep", "x", "f"],
        "grep x f 2> /dev/null": ["grep", "x", "f"],
        "grep -rn x --include=*.{py,md} .": ["grep", "-rn", "x", "--include=*.py", "--include=*.md", "."],
        "grep x src/{a,b}.py": ["grep", "x", "src/a.py", "src/b.py"],
        "grep x 'src/{a,b}.py'": ["grep", "x", "src/{a,b}.py"],
        "grep -E 'a{1,3}' f": ["grep", "-E", "a{1,3}", "f"],
        "grep x f{1..3}": ["grep", "x", "f1", "f2", "f3"],
        "grep x f{01..10..3}": ["grep", "x", "f01", "f04", "f07", "f10"],
        "grep x {a{b,c}}": ["grep", "x", "{ab}", "{ac}"],
        "grep x a{b}c {} a\\{b,c}": ["grep", "x", "a{b}c", "{}", "a{b,c}"],
        "ls d/{a,}": ["ls", "d/a", "d/"],
    }
    for line, words in cases.items():
        assert split_command(line).argv == words, line
    assert split_command("grep x f 2>/dev/null").drop_errors
    assert not split_command("grep x f 2>&1").drop_errors
    globbed = split_command("grep x 'a b'/*.py \"*.md\"").words
    assert globbed[2].pattern == "a b/*.py" and globbed[3].pattern is None
    assert split_command("ls [ab]*").words[1].pattern == "[ab]*"
    assert split_command("ls '[ab]'*").words[1].pattern == "[[]ab]*"
    braced = split_command("grep x --include=*.{py,md} '*'.{a,b}").words
    assert [w.pattern for w in braced[2:]] == ["--include=*.py", "--include=*.md", None, None]
    assert [w.text for w in braced[4:]] == ["*.a", "*.b"]


def test_operators_and_expansions_outside_quotes_are_refused() -> None:
    for line, operator in [
        ("a | b", "|"),
        ("a|b", "|"),
        ("a;b", ";"),
        ("a && b", "&&"),
        ("a || b", "||"),
        ("a & ", "&"),
        ("a > f", ">"),
        ("a 1>f", ">"),
        ("a 2>f", ">"),
        ("a < f", "<"),
        ("a (b)", "("),
        ("a\nb", "\\n"),
        ("a $x", "$x"),
        ("a ${x}", "${"),
        ('a "$(x)"', "$("),
        ('a "${x}"', "${"),
        ('a "`x`"', "`...`"),
        ("a $1", "$1"),
    ]:
        with pytest.raises(ShellSyntax) as caught:
            split_command(line)
        assert caught.value.operator == operator, line


def test_the_description_lists_only_what_this_machine_has(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("grep", "git"):
        found = shutil.which(name)
        if found is None:
            pytest.skip(f"{name} is not installed")
        (bin_dir / name).symlink_to(found)
    monkeypatch.setenv("PATH", str(bin_dir))
    shell.installed.cache_clear()
    try:
        described = bash_description()
        assert described.split(": ", 1)[1].startswith("git blame/diff/grep/log/show, grep.\n")
        for absent in ("rg", "find", "sed", "head", "tail", "wc", "ls"):
            assert f" {absent}," not in described and f" {absent}." not in described
        said = shell.not_installed("rg", AUTHOR_TOOLS)
        assert (
            said
            == "rg is not installed on this machine; use grep -rn PATTERN PATH or the grep tool or"
            + (" the read tool (a directory lists its entries) instead")
        )
        assert "grep tool" not in shell.not_installed("rg", ("Read", "Bash"))
    finally:
        shell.installed.cache_clear()


BRACED = [
    "a{b,c}d",
    "{a,b}{c,d}",
    "{a{b,c}}",
    "{}",
    "{a}",
    "x{",
    "a{,b}",
    "{a,b,}",
    "{1..5}",
    "{05..1}",
    "{1..10..3}",
    "{-05..5..5}",
    "{a..e}",
    "{e..a..2}",
    "{a,b{c,d}e}f",
    "{a..}",
    "{1..a}",
    "a{b}{c,d}",
    "x{1..3}y{a,b}",
    "--include=*.{py,md}",
    "'{a,b}'{c,d}",
    "\\{a,b}",
    "{a\\,b,c}",
]


@pytest.mark.skipif(shutil.which("bash") is None, reason="compared with bash itself")
@pytest.mark.parametrize("word", BRACED)
def test_braces_expand_to_the_words_bash_makes(word: str) -> None:
    made = subprocess.run(
        ["bash", "-c", f"set -f; for w in {word}; do printf '%s\\n' \"$w\"; done"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert split_command(f"ls {word}").argv[1:] == made
