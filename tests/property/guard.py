"""A per-example deadline in CPU time, so that a hang fails the example instead of the run.

Hypothesis' own `deadline` only judges an example after it returns; this one interrupts
it (SIGVTALRM, which counts this process's CPU time: a loaded machine does not trip it,
and it does not touch the SIGALRM that pytest-timeout uses). Python handles the signal
between bytecodes, so a hang inside one C call (a single regex search) is reported when
that call returns; pytest-timeout ends one that never does.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from types import FrameType


class Hang(AssertionError):
    """The guarded block used more CPU time than it was given."""


@contextlib.contextmanager
def cpu_deadline(seconds: float, what: str = "the example") -> Iterator[None]:
    """Raise Hang if the block uses more than `seconds` of CPU time."""

    def expired(signum: int, frame: FrameType | None) -> None:
        raise Hang(f"{what} used more than {seconds}s of CPU time")

    previous = signal.signal(signal.SIGVTALRM, expired)
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)
