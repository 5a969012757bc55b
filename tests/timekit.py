"""A wall-clock safety net for tests of how long code runs: a runaway fails, never hangs.

The assertions of those tests are on CPU time or on outcomes; this only ends what would
otherwise run for ever. Python's regular expressions answer signals, so an exponential match is
stopped too. Main thread only (SIGALRM).
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

RUNAWAY = 120
"""Wall-clock seconds after which the code under test is stopped and the test fails."""


class Runaway(Exception):
    pass


@contextlib.contextmanager
def stopped_after(seconds: float = RUNAWAY) -> Iterator[None]:
    def stop(signum: int, frame: object) -> None:
        raise Runaway(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
