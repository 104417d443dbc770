"""Small process helpers shared by the supervisor runner and --verify."""

from __future__ import annotations

import contextlib
import os
import signal


def kill_group(pid: int) -> None:
    """SIGKILL a process group started with start_new_session (gone already is fine)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
