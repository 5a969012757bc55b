"""What the argparse commands share: a parser whose usage errors are bad input, and stdout."""

from __future__ import annotations

import argparse
import sys

from pipeline.errors import InputError


class ArgParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        command = self.prog.removeprefix("designloop").strip()  # the program named once
        raise InputError(f"{command}: {message}", hint=f"see '{self.prog} --help'")


def emit(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
