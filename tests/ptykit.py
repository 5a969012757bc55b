"""A command run in a real pseudo-terminal, as a person at a terminal runs it.

stdin, stdout and stderr are the terminal's (so Rich sees a terminal and draws the live view),
the terminal has a size of its own (80 by 24 unless told), and everything the command draws
is collected until it closes the terminal: the test waits for the command's own end (end of
file on the terminal, then its exit), never for the clock. The guard only turns a hung
command into a failed test that shows what was on the screen.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

GUARD_SECONDS = 900.0
"""A command that has not closed its terminal after this long has hung: the test fails."""

ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][0-9A-Za-z]|\x1b[=>78]")


@dataclass(frozen=True, slots=True)
class Screen:
    code: int
    raw: str
    """Everything the command wrote to the terminal, control sequences included."""

    @property
    def text(self) -> str:
        """What a person reads: the control sequences taken out, line ends as ``\\n``."""
        return ANSI.sub("", self.raw).replace("\r\n", "\n").replace("\r", "\n")

    @property
    def drew_live(self) -> bool:
        """Whether a live display ran: Rich hides the cursor while it redraws and shows it again."""
        return "\x1b[?25l" in self.raw and "\x1b[?25h" in self.raw


def terminal_env(extra: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """The environment of a person's terminal: a TERM, and none of the variables that would
    tell Rich to pretend (NO_COLOR, FORCE_COLOR, COLUMNS, LINES, TTY_COMPATIBLE)."""
    env = dict(os.environ)
    for name in ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "CI"):
        env.pop(name, None)
    env["TERM"] = "xterm-256color"
    for name, value in (extra or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def in_terminal(
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str | None] | None = None,
    columns: int = 80,
    rows: int = 24,
) -> Screen:
    """``argv`` with a pseudo-terminal of ``columns`` by ``rows`` as its stdin, stdout and
    stderr; returns its exit code and everything it drew."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    try:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=terminal_env(env),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            close_fds=True,
        )
    finally:
        os.close(slave)
    chunks: list[bytes] = []
    try:
        while True:
            ready, _, _ = select.select([master], [], [], GUARD_SECONDS)
            if not ready:
                proc.kill()
                proc.wait()
                seen = ANSI.sub("", b"".join(chunks).decode("utf-8", "replace"))
                raise AssertionError(f"{' '.join(argv)} never closed its terminal; it drew:\n{seen}")
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every holder of the terminal's other end has closed it
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
    code = proc.wait()
    return Screen(code, b"".join(chunks).decode("utf-8", "replace"))


def designloop_argv(*args: str) -> list[str]:
    """designloop as a user starts it: the console script beside this interpreter."""
    script = Path(sys.executable).with_name("designloop")
    if script.exists():
        return [str(script), *args]
    return [sys.executable, "-m", "pipeline.cli", *args]


def fresh_clone(tmp_path: Path) -> Path:
    """What a fresh clone of this checkout holds: every file git tracks or would track, as it is
    now on disk (a change not yet committed is tested too), in a new repository."""
    import shutil

    root = Path(__file__).resolve().parent.parent
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        check=True,
    )
    clone = tmp_path / "clone"
    for name in filter(None, listed.stdout.decode().split("\0")):
        source = root / name
        if source.is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, clone / name)
    subprocess.run(["git", "init", "-q"], cwd=clone, check=True)
    return clone
