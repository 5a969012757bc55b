"""The line-1 workflow-sha stamp (docs/formats.md §2): presence, the SHA, the idempotent prepend."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

from pipeline import confinement
from pipeline.errors import StampViolation
from pipeline.formats.textio import atomic_write, read_text

STAMP_RE = re.compile(rb"^<!-- workflow-sha: [0-9a-f]{40} -->$")
SHA_RE = re.compile(r"^[0-9a-f]{40}$")


def stamp_line(sha: str) -> str:
    if not SHA_RE.match(sha):
        raise ValueError(f"not a 40-hex SHA: {sha!r}")
    return f"<!-- workflow-sha: {sha} -->"


def first_line(data: bytes) -> bytes:
    end = data.find(b"\n")
    line = data if end < 0 else data[:end]
    return line[:-1] if line.endswith(b"\r") else line


def has_stamp(path: Path) -> bool:
    """Presence check; a missing file counts as unstamped."""
    try:
        with os.fdopen(confinement.open_fd(path), "rb") as handle:
            head = handle.readline()
    except FileNotFoundError:
        return False
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    return bool(STAMP_RE.match(first_line(head)))


def _git(args: Sequence[str], cwd: Path) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


class WorkflowSha:
    """The workflow SHA (docs/formats.md §2), computed at most once per invocation.

    When the user keeps overrides of the workflow (``overrides``: their agent and prompt
    directories) in git, it is the last commit touching them. Otherwise it is the SHA-1 of
    the effective definitions (``definitions``: name and bytes of every agent, prompt and
    params file the run uses), so it changes only when the workflow does, never with an
    unrelated commit.
    """

    def __init__(
        self, repo_root: Path, overrides: Sequence[Path], definitions: Sequence[tuple[str, bytes]]
    ) -> None:
        self.repo_root = repo_root
        self.overrides = list(overrides)
        self.definitions = list(definitions)
        self._value: str | None = None
        self.computations = 0

    def get(self) -> str:
        if self._value is None:
            self.computations += 1
            self._value = self._compute()
        return self._value

    def _compute(self) -> str:
        if self.overrides:
            rels = [str(p) for p in self.overrides]
            sha = _git(["log", "-1", "--format=%H", "HEAD", "--", *rels], self.repo_root)
            if sha and SHA_RE.match(sha):
                return sha
        return definitions_digest(self.definitions)


def definitions_digest(definitions: Sequence[tuple[str, bytes]]) -> str:
    """A stable 40-hex digest of named definitions, independent of their order."""
    digest = hashlib.sha1()
    for name, data in sorted(definitions):
        digest.update(name.encode() + b"\x00" + str(len(data)).encode() + b"\x00" + data)
    return digest.hexdigest()


def stamp_of(data: bytes | None) -> str | None:
    """The stamp line ``data`` opens with, if it is stamped."""
    if data is None:
        return None
    line = first_line(data.removeprefix(b"\xef\xbb\xbf"))
    return line.decode("ascii") if STAMP_RE.match(line) else None


def prepend_stamp(path: Path, sha: WorkflowSha, keep: str | None = None) -> bool:
    """Stamp ``path`` unless already stamped; returns True when a stamp was written. ``keep``:
    the stamp the file carried before this invocation rewrote it (the idempotency guard keeps
    an existing stamp; only an unstamped file gets the current workflow's)."""
    if has_stamp(path):
        return False
    source = read_text(path, what="design") if path.exists() else None
    text = source.text if source else ""
    newline = source.newline if source else "\n"
    atomic_write(path, (keep or stamp_line(sha.get())) + "\n" + text, newline=newline, bom=False)
    return True


def line1_preserved(before: bytes, after: bytes) -> bool:
    """True when line 1 (and its line ending) is byte-for-byte the same in both versions."""
    end_before, end_after = before.find(b"\n"), after.find(b"\n")
    head_before = before if end_before < 0 else before[: end_before + 1]
    head_after = after if end_after < 0 else after[: end_after + 1]
    return head_before == head_after


def assert_line1_preserved(before: bytes, after: bytes, path: Path) -> None:
    if STAMP_RE.match(first_line(before.removeprefix(b"\xef\xbb\xbf"))) and not line1_preserved(
        before, after
    ):
        raise StampViolation(
            "an edit would change the line-1 workflow-sha stamp",
            file=path,
            line=1,
            hint="only the creation kinds write the stamp; keep line 1 byte-for-byte",
        )
