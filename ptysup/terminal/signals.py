"""Signals as bytes on a pipe, so the relay's one select loop sees them as fd events."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator, Sequence
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _noop(signum: int, frame: FrameType | None) -> None:
    """Nothing heavy in a handler: the wake-up fd carries the signal number."""


@contextlib.contextmanager
def signal_pipe(signals: Sequence[int]) -> Iterator[int]:
    """Install no-op handlers for `signals` and yield a fd that receives their numbers."""
    r, w = os.pipe()
    os.set_blocking(r, False)
    os.set_blocking(w, False)
    old_fd = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    old = {s: signal.signal(s, _noop) for s in signals}
    try:
        yield r
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        signal.set_wakeup_fd(old_fd)
        os.close(r)
        os.close(w)


def read_signals(fd: int) -> list[int]:
    """The signal numbers waiting on a wake-up fd."""
    try:
        data = os.read(fd, 512)
    except BlockingIOError:
        return []
    return list(data)
