"""serve's own guards on the files of a run, before anything reads them.

A run's folder is the person's, and may hold anything by accident: a FIFO (opened, it
waits for a writer forever), a link to /dev/zero (read, it never ends), a sparse file of
gigabytes (read whole, memory runs out). The page must answer for every run at once and
never stall or die for one, so serve looks at each file first (stat only, which never
blocks) and reads only regular files within a size: the store's readers then never meet
anything else. Its own reads open with O_NONBLOCK and check what they opened, so a file
swapped for a FIFO in between is refused too.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

SMALL_MAX = 1 << 20  # run.json, state.json, lock, log_incomplete: ptysup writes a few KB
LOG_MAX = 64 << 20  # an event log: a long run's is a few MB
CAST_MAX = 256 << 20  # a recording: hours of a busy terminal; the browser holds it whole
_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
    stat.S_IFSOCK: "a socket",
}

# (inode, size, mtime) of a file as stat sees it; None when it is not there.
Version = tuple[int, int, int] | None


class Damaged(Exception):
    """A file serve will not read; the message says why, in a few words."""


def problem(path: Path, limit: int) -> str | None:
    """Why serve will not read the file at `path` (not a regular file, bigger than
    `limit`, cannot be looked at); None for a regular file within it, or no file at all."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None  # missing (or a link to nothing): each reader says what that means
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    return _problem(st, limit)


def _problem(st: os.stat_result, limit: int) -> str | None:
    if not stat.S_ISREG(st.st_mode):
        kind = _KINDS.get(stat.S_IFMT(st.st_mode), "another kind of file")
        return f"{kind}, not a regular file"
    if st.st_size > limit:
        return f"{size_text(st.st_size)}: bigger than the {size_text(limit)} serve reads"
    return None


def size_text(size: int) -> str:
    """A size as a person reads it: 512 bytes, 3.2 MiB, 8 GiB."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift:
            return f"{size / (1 << shift):.1f}".removesuffix(".0") + f" {unit}"
    return f"{size} bytes"


def version(path: Path) -> Version:
    """What changes whenever the file does (None when it is missing or unreadable)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


# A folder's entry: (name, inode, size, mtime, mode) as stat sees it through a link (the
# link's own for one that leads nowhere).
Entry = tuple[str, int, int, int, int]


def folder_version(folder: Path) -> tuple[Entry, ...]:
    """Every entry of a folder: changes whenever any file in it does (one listing and a
    stat each: a page that polls many runs does this for each of them)."""
    out = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                try:
                    st = entry.stat()
                except OSError:
                    st = entry.stat(follow_symlinks=False)
                out.append((entry.name, st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode))
    except OSError:
        return ()
    return tuple(sorted(out))


def regular_in(entries: tuple[Entry, ...], name: str, limit: int) -> bool:
    """Whether the folder (as folder_version saw it) holds `name` as a regular file
    within `limit`."""
    return any(e[0] == name and stat.S_ISREG(e[4]) and e[2] <= limit for e in entries)


def open_regular(path: Path, limit: int) -> BinaryIO:
    """The regular file at `path`, open for reading; Damaged if it is anything else or
    bigger than `limit`, OSError if it cannot be opened."""
    # O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    try:
        found = _problem(os.fstat(fd), limit)
        if found is not None:
            raise Damaged(found)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def lines(path: Path, limit: int, start: int = 0) -> Iterator[tuple[int, bytes]]:
    """The file's lines from byte `start` on, each with the offset after it (the last
    one may lack its newline); Damaged or OSError as open_regular says."""
    with open_regular(path, limit) as f:
        f.seek(start)
        offset = start
        for line in f:
            offset += len(line)
            yield offset, line
