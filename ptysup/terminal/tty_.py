"""The person's terminal: raw mode that is always restored, and its window size."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import select
import struct
import termios
import time
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


_POSITION = re.compile(rb"\x1b\[(\d+);(\d+)R")


def cursor_position(
    in_fd: int, out_fd: int, timeout: float = 1.0
) -> tuple[tuple[int, int] | None, bytes]:
    """Ask the terminal where its cursor is (DSR 6; `in_fd` in raw mode): (row, col) from
    0, or None if it does not answer in time, and whatever else was read meanwhile (keys
    the person typed, to be passed on)."""
    os.write(out_fd, b"\x1b[6n")  # 4 bytes: one write
    got = b""
    deadline = time.monotonic() + timeout
    while (m := _POSITION.search(got)) is None:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([in_fd], [], [], left)[0]:
            return None, got
        try:
            chunk = os.read(in_fd, 1024)
        except OSError:
            return None, got
        if not chunk:
            return None, got
        got += chunk
    return (int(m[1]) - 1, int(m[2]) - 1), got[: m.start()] + got[m.end() :]
