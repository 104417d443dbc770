"""The person's terminal: raw mode that is always restored, and its window size."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import struct
import termios
import tty
from collections.abc import Iterator

DEFAULT_SIZE = (40, 120)  # rows, cols: the agent's screen when ptysup has no terminal
# What using a terminal that is gone raises (its window closed, tmux killed, ssh dropped):
# the slave of a PTY whose master closed says EIO.
HUNG_UP = frozenset({errno.EIO, errno.ENXIO, errno.EPIPE})


@contextlib.contextmanager
def raw(fd: int | None) -> Iterator[None]:
    """Put `fd` in raw mode for the duration; restore it with TCSAFLUSH on every way out
    (but for a terminal that is gone: nothing is left to restore)."""
    if fd is None or not os.isatty(fd):
        yield
        return
    saved = termios.tcgetattr(fd)
    try:
        tty.setraw(fd, termios.TCSANOW)
        yield
    finally:
        try:
            termios.tcsetattr(fd, termios.TCSAFLUSH, saved)
        except termios.error as exc:
            if exc.args[0] not in HUNG_UP:
                raise


def window_size(fd: int | None) -> tuple[int, int]:
    """(rows, cols) of the terminal on `fd`, or the default size without one."""
    if fd is not None:
        with contextlib.suppress(OSError):
            packed = fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8)
            rows, cols = struct.unpack("HHHH", packed)[:2]
            if rows > 0 and cols > 0:
                return rows, cols
    return DEFAULT_SIZE
