"""A lock a process holds for its whole life, with its pid in it: flock() on a file.

The kernel releases flock() when the process dies however it dies, so a `kill -9`ed
holder is never mistaken for a live one. Standard library only (its ptysup.store.durable
is too): the demo's `--clean` checks its folders with it before any setup.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from ptysup.store import durable


class Taken(Exception):
    """Another live process holds the lock."""

    def __init__(self, pid: int | None) -> None:
        super().__init__(f"pid {pid}" if pid else "another process")
        self.pid = pid


@contextlib.contextmanager
def hold(path: Path) -> Iterator[None]:
    """Hold the lock at PATH (with this pid in it) for the block; Taken if it is held."""
    durable.make_dirs(path.parent)  # a run's folder, named durably as it is made
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Taken(_read_pid(fd)) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        os.close(fd)  # also releases the lock


def holder(path: Path) -> int | None:
    """The pid of the live process holding the lock at PATH (-1: unknown), or None (also
    for a lock that is no regular file: a FIFO there would block the open for ever)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_pid(fd) or -1
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _read_pid(fd: int) -> int | None:
    try:
        return int(os.pread(fd, 32, 0).strip() or 0) or None
    except (OSError, ValueError):
        return None


def wait(path: Path) -> None:
    """Block until no process holds the lock at PATH (returns at once when none does)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError:
        return
    try:  # the kernel lets go of a lock when its holder dies, however it dies
        if stat.S_ISREG(os.fstat(fd).st_mode):  # no one holds a FIFO or a device
            fcntl.flock(fd, fcntl.LOCK_SH)
    finally:
        os.close(fd)
