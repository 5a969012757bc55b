"""The designloop command line: one typer application, every command on it (typer's public API;
no private module of a dependency is imported)."""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from pathlib import Path
from typing import TextIO

from pipeline.errors import DesignloopError, ExitCode, InputError

COMMAND_MODULES = (
    "batch",
    "check",
    "config",
    "discard",
    "drift",
    "edit",
    "lifecycle",
    "records",
    "reports",
    "rules",
    "runs",
    "structure",
    "workers",
)
"""The modules whose import registers their commands on the application."""


class BareCommand(InputError):
    """A command or group given nothing to do: its help is the whole message (exit 2)."""

    def render(self) -> str:
        return f"{self.message}\n  what to do: {self.hint}"


def _usage_error(exc: BaseException) -> InputError | None:
    """A parser's usage error (an unknown option, a missing argument) as bad input naming the
    command once, or None for any other exception. Read from what every click exception
    carries (``format_message``, ``exit_code``, ``ctx``), whatever module defines it."""
    format_message = getattr(exc, "format_message", None)
    if not callable(format_message) or getattr(exc, "exit_code", None) != ExitCode.BAD_INPUT:
        return None
    ctx = getattr(exc, "ctx", None)
    message = str(format_message())
    if ctx is not None and message == ctx.get_help():  # a bare command or group: its help, whole
        where = str(getattr(ctx, "command_path", "") or "designloop")
        return BareCommand(message, hint=f"give {where} what its usage above asks for")
    where = str(getattr(ctx, "command_path", "") or "designloop")
    # "designloop: create: No such option: --bogus", the program named once
    command = where.removeprefix("designloop").strip()
    return InputError(f"{command}: {message}" if command else message, hint=f"see '{where} --help'")


def _typer_main(argv: list[str]) -> None:
    import importlib

    for name in COMMAND_MODULES:
        importlib.import_module(f"pipeline.cli.{name}")
    from pipeline.cli.app import command_tree

    tree = command_tree()
    try:
        code = tree.main(args=argv, prog_name="designloop", standalone_mode=False)
    except Exception as exc:
        usage = _usage_error(exc)
        if usage is None:
            raise
        raise usage from None
    sys.exit(code if isinstance(code, int) else 0)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    from pipeline.cli.output import forget_flags

    forget_flags()
    if args in (["--version"], ["-V"]):  # the same answer the parser gives, without loading it
        from pipeline import __version__

        sys.stdout.write(f"designloop {__version__}\n")
        sys.exit(0)
    try:
        _typer_main(args)
    except DesignloopError as exc:
        from pipeline.cli.output import pasteable

        if isinstance(exc, BareCommand):
            sys.stderr.write(exc.render() + "\n")
        else:
            sys.stderr.write(f"designloop: {pasteable(exc.render())}\n")
        sys.exit(int(exc.exit_code))
    except KeyboardInterrupt:
        sys.stderr.write("designloop: interrupted\n")
        sys.exit(130)
    except Exception as exc:  # never a traceback for users; DESIGNLOOP_DEBUG=1 shows it
        from pipeline.formats.space import space_error

        full = space_error(exc, Path.cwd())
        if full is not None:  # a full disk wherever it was met: bad input, named
            sys.stderr.write(f"designloop: {full.render()}\n")
            sys.exit(int(full.exit_code))
        if os.environ.get("DESIGNLOOP_DEBUG"):
            traceback.print_exc()
        sys.stderr.write(
            f"designloop: internal error: {type(exc).__name__}: {exc}\n"
            "  what to do: re-run with DESIGNLOOP_DEBUG=1 and report the traceback\n"
        )
        sys.exit(int(ExitCode.INTERNAL))


def run() -> None:
    """The console entry point: ``main``, then leave at once. Everything a command writes is
    on disk when it returns (each write is synced, the stores are closed), so the interpreter's
    own teardown (joining idle worker threads, freeing every module) is skipped."""
    code: int | str | None
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code
    if isinstance(code, str):
        _say(sys.stderr, code + "\n")
        code = 1
    for stream in (sys.stdout, sys.stderr):
        _say(stream, "")
    os._exit(code or 0)


def _say(stream: TextIO | None, text: str) -> None:
    """Write and flush, whatever became of the stream (none, closed, or gone with its reader)."""
    if stream is None:
        return
    with contextlib.suppress(OSError, ValueError):
        if text:
            stream.write(text)
        stream.flush()


if __name__ == "__main__":
    run()
