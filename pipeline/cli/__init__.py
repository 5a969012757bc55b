"""The designloop command line.

``main`` sends the deterministic commands (check, slices, gate, drift, claims) to the argparse
front in ``cli.fast`` before typer loads; every other command is a typer command.
"""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from pathlib import Path
from typing import TextIO

from pipeline.cli.fast import FAST_COMMANDS, run_fast
from pipeline.errors import DesignloopError, ExitCode, InputError
from pipeline.formats.space import space_error


def _typer_main(argv: list[str]) -> None:
    from typer._click.exceptions import ClickException, NoArgsIsHelpError

    from pipeline.cli import (  # noqa: F401  (registers the commands)
        batch,
        config,
        discard,
        edit,
        lifecycle,
        records,
        reports,
        runs,
        workers,
    )
    from pipeline.cli.app import command_tree

    try:
        code = command_tree().main(args=argv, prog_name="designloop", standalone_mode=False)
    except NoArgsIsHelpError:
        sys.exit(int(ExitCode.BAD_INPUT))  # the help is already on the screen
    except ClickException as exc:  # a usage error: the same contract as every other bad input
        ctx = getattr(exc, "ctx", None)
        where = ctx.command_path if ctx is not None else "designloop"
        # "designloop: create: No such option: --bogus", the program named once
        command = where.removeprefix("designloop").strip()
        message = f"{command}: {exc.format_message()}" if command else exc.format_message()
        raise InputError(message, hint=f"see '{where} --help'") from None
    sys.exit(code if isinstance(code, int) else 0)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    from pipeline.cli.output import forget_flags

    forget_flags()
    try:
        if args and args[0] in FAST_COMMANDS:
            sys.exit(int(run_fast(args[0], args[1:])))
        _typer_main(args)
    except DesignloopError as exc:
        from pipeline.cli.output import pasteable

        sys.stderr.write(f"designloop: {pasteable(exc.render())}\n")
        sys.exit(int(exc.exit_code))
    except KeyboardInterrupt:
        sys.stderr.write("designloop: interrupted\n")
        sys.exit(130)
    except Exception as exc:  # never a traceback for users; DESIGNLOOP_DEBUG=1 shows it
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
