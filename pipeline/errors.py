"""Named errors, each mapped once to a process exit code."""

from __future__ import annotations

from enum import IntEnum
from pathlib import Path


class ExitCode(IntEnum):
    """Process exit codes shared by every command."""

    OK = 0
    FINDINGS = 1
    BAD_INPUT = 2
    GATE_PAUSED = 3
    BUDGET = 4
    INCONCLUSIVE = 5
    REFUSED = 6
    INTERNAL = 70


class DesignloopError(Exception):
    """An error a user can act on: where it is, what is wrong and what to do."""

    exit_code: ExitCode = ExitCode.INTERNAL

    def __init__(
        self,
        message: str,
        *,
        file: Path | str | None = None,
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = str(file) if file is not None else None
        self.line = line
        self.hint = hint

    def location(self) -> str:
        if self.file is None:
            return ""
        return f"{self.file}:{self.line}" if self.line is not None else self.file

    def render(self) -> str:
        loc = self.location()
        text = f"{loc}: {self.message}" if loc else self.message
        if self.hint:
            text += f"\n  what to do: {self.hint}"
        return text

    def to_json(self) -> dict[str, object]:
        return {
            "error": type(self).__name__,
            "message": self.message,
            "file": self.file,
            "line": self.line,
            "hint": self.hint,
            "exit_code": int(self.exit_code),
        }


class InputError(DesignloopError):
    """The input could not be read or parsed; nothing was written."""

    exit_code = ExitCode.BAD_INPUT


class MalformedEdit(InputError):
    """The edit cannot be applied as given; nothing was written."""


class DuplicateSection(InputError):
    """Two sections share an identity, so nothing keyed on identity can proceed."""


class WiringError(DesignloopError):
    """The orchestrator's own invariant failed (for example a wrong fan-out count)."""

    exit_code = ExitCode.INTERNAL


class StampViolation(DesignloopError):
    """An edit changed line 1 of a stamped file."""

    exit_code = ExitCode.INTERNAL


class TransitionRefused(DesignloopError):
    """A lifecycle transition (approve, reject, an edit of a frozen design) was refused; nothing
    changed. ``name`` is the stable error name scripts match on (docs/lifecycle.md)."""

    exit_code = ExitCode.REFUSED

    def __init__(
        self,
        name: str,
        message: str,
        *,
        file: Path | str | None = None,
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(f"{name}: {message}", file=file, line=line, hint=hint)
        self.name = name

    def to_json(self) -> dict[str, object]:
        return {**super().to_json(), "name": self.name}


def first_line(exc: BaseException, default: str | None = None) -> str:
    """The first line of an exception's message (a driver's message runs on for lines); when it
    has none, ``default``, else the exception's type."""
    text = str(exc).strip()
    if text:
        return text.splitlines()[0]
    return type(exc).__name__ if default is None else default
