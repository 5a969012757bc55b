"""Tamper evidence of the review log without the run store (docs/lifecycle.md, "Trust model").

Two checks a clone (CI included) can make of ``design-mutations.md``:

* **the chain**: every entry designloop appends ends with ``<!-- designloop-chain: <sha256> -->``,
  the SHA-256 of the previous entry's chain digest and of the entry's own text. Editing an
  entry (a revision's SHA-256 rewritten to bytes no run reviewed), deleting one, or dropping a
  chain line after an entry that has one breaks the chain at that entry;
* **the history**: the review log is append-only, so an entry, once committed, is never
  changed; in a git checkout each entry is compared with the text of the commit that first
  held it, which no recomputed chain can hide.

What neither can tell (a forger who writes a whole new entry, digests and chain included, and
commits it together with the hand-edited bytes) is said plainly in docs/lifecycle.md.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path

from pipeline.formats.textio import read_text, split_lines

CHAIN_RE = re.compile(r"^<!-- designloop-chain: (?P<digest>[0-9a-f]{64}) -->$")
HEAD_RE = re.compile(r"^## Mutation (?P<num>\d+) ")
FENCE = ("```", "~~~")


def chain_digest(previous: str, block: str) -> str:
    """The chain digest of an entry whose text (its chain line aside) is ``block``."""
    return hashlib.sha256(f"{previous}\n{block.rstrip()}\n".encode()).hexdigest()


def chain_line(previous: str, block: str) -> str:
    return f"<!-- designloop-chain: {chain_digest(previous, block)} -->"


def blocks(text: str) -> list[tuple[int, int, str]]:
    """Each entry of a review log's text: its number, its heading's line and its block (from its
    heading to the next one's, trailing blank lines dropped)."""
    lines = split_lines(text)
    heads: list[tuple[int, int]] = []
    fenced = False
    for index, line in enumerate(lines):
        if line.startswith(FENCE):
            fenced = not fenced
        if not fenced and (match := HEAD_RE.match(line)) is not None:
            heads.append((int(match.group("num")), index))
    out = []
    for i, (number, start) in enumerate(heads):
        end = heads[i + 1][1] if i + 1 < len(heads) else len(lines)
        out.append((number, start + 1, "\n".join(lines[start:end]).rstrip() + "\n"))
    return out


def last_chain(text: str) -> str:
    """The chain digest the next entry links to: the last entry's, or '' when it has none."""
    found = blocks(text)
    if not found:
        return ""
    last = found[-1][2].rstrip("\n").split("\n")[-1]
    match = CHAIN_RE.match(last.strip())
    return match.group("digest") if match else ""


def chain_breaks(text: str) -> list[str]:
    """Where the chain is broken, entry by entry (empty: every chained entry is as written)."""
    problems: list[str] = []
    previous, chained = "", False
    for number, line, block in blocks(text):
        body, _, last = block.rstrip("\n").rpartition("\n")
        match = CHAIN_RE.match(last.strip())
        if match is None:
            if chained:
                problems.append(
                    f"Mutation {number} (line {line}) has no chain digest, though an earlier entry has"
                )
            previous = ""
            continue
        chained = True
        if match.group("digest") != chain_digest(previous, body):
            problems.append(
                f"Mutation {number} (line {line}) is not the text designloop wrote: its chain digest "
                "does not match (an entry was edited, removed or inserted at or before it)"
            )
        previous = match.group("digest")
    return problems


def _git(repo: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, check=False, timeout=30, text=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def history_rewrites(path: Path, repo_root: Path, text: str) -> list[str]:
    """The entries whose text differs from the commit that first held them (append-only: a
    committed entry never changes); nothing outside a git checkout or for an untracked log."""
    try:
        rel = path.resolve().relative_to(repo_root.resolve()).as_posix()
    except ValueError:
        return []
    commits = _git(repo_root, "log", "--format=%H", "--reverse", "--", rel)
    if not commits:
        return []
    first: dict[int, tuple[str, str]] = {}
    for commit in commits.split():
        shown = _git(repo_root, "show", f"{commit}:{rel}")
        if shown is None:
            continue
        for number, _, block in blocks(shown):
            first.setdefault(number, (commit[:12], block))
    problems = []
    for number, line, block in blocks(text):
        if number in first and first[number][1] != block:
            problems.append(
                f"Mutation {number} (line {line}) differs from the text commit {first[number][0]} "
                "first recorded (the review log is append-only)"
            )
    return problems


def tampered(path: Path, repo_root: Path) -> list[str]:
    """Every sign that the review log is not as designloop wrote it: chain breaks and
    rewrites of committed entries (empty: none)."""
    if not path.is_file():
        return []
    text = read_text(path, what="review log").text
    return chain_breaks(text) + history_rewrites(path, repo_root, text)
