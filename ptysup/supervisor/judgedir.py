"""The judge's temp folder (`ptysup-judge-*`, 0700), where its system prompt files go.

The run removes it at its end; a ptysup killed with SIGKILL cannot, and every such
folder stayed in the temp dir. So its owner holds a lock in it for its whole life, and
each new one first removes this user's folders whose lock is free: their owners are
dead, however they died (the kernel lets go of a lock with its holder).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import tempfile
from pathlib import Path

PREFIX = "ptysup-judge-"
OWNER = ".owner"  # the lock its owner holds


class JudgeDir:
    """A new judge folder, locked by this process until `close`."""

    def __init__(self, parent: str | None = None) -> None:
        remove_left(parent)
        self.path = tempfile.mkdtemp(prefix=PREFIX, dir=parent)
        # Locked before it takes its name: a folder whose lock is there and free is never
        # a live one's (one without it yet is left alone).
        new = os.path.join(self.path, OWNER + ".new")
        self._fd = os.open(new, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        os.rename(new, os.path.join(self.path, OWNER))

    def close(self) -> None:
        """Remove the folder (the run is over)."""
        shutil.rmtree(self.path, ignore_errors=True)
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def remove_left(parent: str | None = None) -> list[str]:
    """Remove this user's judge folders in `parent` (the temp dir) whose owner is dead;
    the removed paths."""
    removed = []
    for path in sorted(Path(parent or tempfile.gettempdir()).glob(PREFIX + "*")):
        with contextlib.suppress(OSError):
            st = path.lstat()
            if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and _free(path):
                shutil.rmtree(path, ignore_errors=True)
                removed.append(str(path))
    return removed


def _free(path: Path) -> bool:
    """Whether the folder's owner lock is there and held by no one."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(path / OWNER, flags)  # none yet: OSError, the folder is left alone
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True
