"""Writes that outlive a crash of the machine: a file fsynced, and the directory naming it.

A write reaches the disk when the kernel writes it back (on ext4 up to 30 s later), and a
new file's name when its directory is. Seen for real: after an ext4 went read-only and was
repaired, a run's whole event log and recording were gone. So what a run must keep is
fsynced at the moments that matter (each decision, its end, its state files as they are
replaced), never on the relay's path: one fsync costs milliseconds.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

Fsync = Callable[[int], None]


def sync_dir(path: Path, fsync: Fsync = os.fsync) -> None:
    """fsync the directory `path`: the names made or replaced in it are on disk."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fsync(fd)
    finally:
        os.close(fd)


def make_dirs(path: Path, fsync: Fsync = os.fsync) -> None:
    """`mkdir -p path`, each folder it makes named durably (its parent fsynced)."""
    missing: list[Path] = []
    here = path
    while not here.is_dir():
        missing.append(here)
        if here.parent == here:
            break
        here = here.parent
    for folder in reversed(missing):
        folder.mkdir(exist_ok=True)  # a file in the way raises, as mkdir -p does
        sync_dir(folder.parent, fsync)
