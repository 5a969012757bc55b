"""Fault injection for crash tests and bench/faults.py: designloop as a real subprocess that
dies (os._exit, as a SIGKILL would leave it) at a chosen point of the checkpoint protocol.

``launch`` builds the command line: it arms the fault, then runs ``designloop`` with the
given arguments. The fault is injected into the checkpointer, never raced against a clock:
``before`` dies after a task's side effects but before its writes are saved, ``after``
dies after its writes are saved but before the step's checkpoint.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent
KILLED = 137
FINISH_NODES = ("step6_outcome", "step7_review_log", "step1_stamp", "step9_present")


def arm(node: str, when: str) -> None:
    """Die when a task of ``node`` saves its writes: ``before`` or ``after`` saving them."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    original = AsyncSqliteSaver.aput_writes

    async def aput_writes(self: Any, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        hit = node in str(task_path).replace(",", " ").split()
        if hit and when == "before":
            os._exit(KILLED)
        await original(self, config, writes, task_id, task_path)
        if hit and when == "after":
            os._exit(KILLED)

    AsyncSqliteSaver.aput_writes = aput_writes  # type: ignore[method-assign]


def launch(args: list[str], node: str | None = None, when: str = "after") -> list[str]:
    """The command line of ``designloop ARGS``, armed to die at ``node`` when one is given."""
    code = [f"import sys; sys.path.insert(0, {str(TESTS)!r})"]
    if node is not None:
        code.append(f"import faultkit; faultkit.arm({node!r}, {when!r})")
    code.append("from pipeline.cli import main; main()")
    return [sys.executable, "-c", "; ".join(code), *args]
