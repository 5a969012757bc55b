"""How an allowed command runs (agents.shell plans it): without a shell, with a stripped
environment, no input and a time limit, and with what it prints held to a size.

Only the first part of each stream is kept, however much the command prints (the rest is read
and counted, so the command never waits on a full pipe); an output past the limit comes back
cut at a line's end with a note that says where and how to narrow the command, and the error
output follows it whole.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from pipeline.agents.shell import not_installed


def run_planned(
    argv: list[str],
    root: Path,
    timeout: float,
    limit: int,
    drop_errors: bool = False,
    tools: tuple[str, ...] = (),
) -> str:
    """Run a planned command (``plan_command``) in ``root`` without a shell, with a stripped
    environment, no input and a time limit; its output (at most ``limit`` characters, cut at a
    line's end with a note saying so; its error output too unless ``drop_errors``), prefixed
    with the exit status when it failed. A command this machine lacks says what the role (its
    allow-list ``tools``) can use instead."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root),
        "LANG": "C.UTF-8",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_PAGER": "cat",
        "PAGER": "cat",
    }
    if shutil.which(argv[0], path=env["PATH"]) is None:
        return f"error: {not_installed(argv[0], tools)}"
    try:
        done = run_bounded(argv, root, env, timeout, limit, drop_errors)
    except subprocess.TimeoutExpired:
        return f"error: timed out after {timeout:g}s"
    except OSError as exc:
        return f"error: {exc.strerror}"
    errors = done.stderr.text[:MAX_ERROR_CHARS]
    out = cut_to(done.stdout, limit - len(errors)) + errors
    if done.returncode == 1 and not out and _searches(argv):
        return "no matches (exit 1)"
    if done.returncode == 0 and not out and argv[0] == "find":
        return "no matches"
    return out if done.returncode == 0 else f"exit {done.returncode}\n{out}"


MAX_ERROR_CHARS = 4_000
"""Of a command's answer, what its error output may take: the rest is its output's."""
NARROW = "grep -m N, head -n N, sed -n 'A,Bp' FILE, or a narrower path"


@dataclass(frozen=True, slots=True)
class Stream:
    """What a command wrote to one stream: its first bytes (up to what is kept) and how many
    it wrote in all."""

    head: bytes
    size: int

    @property
    def text(self) -> str:
        return self.head.decode("utf-8", "replace")


@dataclass(frozen=True, slots=True)
class Ran:
    returncode: int
    stdout: Stream
    stderr: Stream


def _drain(stream: IO[bytes], keep: int, into: list[Stream]) -> None:
    """Read ``stream`` to its end, keeping its first ``keep`` bytes (the command is never held
    up on a full pipe, and never more than that is held in memory)."""
    head = bytearray()
    size = 0
    while chunk := stream.read(1 << 16):
        size += len(chunk)
        if len(head) < keep:
            head += chunk[: keep - len(head)]
    into.append(Stream(bytes(head), size))


def run_bounded(
    argv: list[str], root: Path, env: dict[str, str], timeout: float, keep: int, drop_errors: bool
) -> Ran:
    """Run ``argv`` with no input and a time limit (TimeoutExpired: it was killed), keeping the
    first ``keep`` bytes of its output and of its error output (more than ``keep`` characters of
    text take at least as many bytes)."""
    with subprocess.Popen(
        argv,
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL if drop_errors else subprocess.PIPE,
    ) as proc:
        streams: list[list[Stream]] = [[], []]
        readers = [
            threading.Thread(target=_drain, args=(pipe, keep + 1, into), daemon=True)
            for pipe, into in zip((proc.stdout, proc.stderr), streams, strict=True)
            if pipe is not None
        ]
        for reader in readers:
            reader.start()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
        finally:
            for reader in readers:
                reader.join()
    empty = [Stream(b"", 0)]
    return Ran(proc.returncode, (streams[0] or empty)[0], (streams[1] or empty)[0])


def cut_to(stream: Stream, limit: int) -> str:
    """A stream's text, whole when it fits in ``limit`` characters, else cut at the last line's
    end that fits (inside the first line when even that does not fit) and ended by a note
    saying where, and how to narrow the command."""
    text = stream.text
    if len(text) <= limit and len(stream.head) == stream.size:
        return text
    shown = text[:limit]
    end = shown.rfind("\n")
    if end < 0:
        return (
            f"{shown}\n[output cut at {limit:,} characters, inside line 1 (of {stream.size:,} bytes);"
            f" narrow the command: {NARROW}]\n"
        )
    shown = shown[: end + 1]
    return (
        f"{shown}[output cut after {shown.count(chr(10))} lines ({len(shown.encode()):,} of"
        f" {stream.size:,} bytes); narrow the command: {NARROW}]\n"
    )


def _searches(argv: list[str]) -> bool:
    """Whether ``argv`` is a search whose exit status 1 means only that nothing matched."""
    return argv[0] in ("grep", "rg") or argv[:5] == [
        "git",
        "--no-pager",
        "-c",
        "core.fsmonitor=false",
        "grep",
    ]
