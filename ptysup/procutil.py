"""Small process helpers shared by the supervisor runner and --verify."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
from collections.abc import Callable


def kill_group(pid: int) -> None:
    """SIGKILL a process group started with start_new_session (gone already is fine)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


# Supervisors and --verify commands run in their own sessions (so a time-out kills the
# whole group), which also means nothing ends them if ptysup itself is killed (SIGKILL,
# OOM): `claude -p` lived on until its model answered. On Linux they ask the kernel for
# SIGKILL when ptysup dies.
_PR_SET_PDEATHSIG = ctypes.c_int(1)
_SIGKILL = ctypes.c_ulong(int(signal.SIGKILL))  # prctl's second argument is unsigned long
_prctl: Callable[..., int] | None = None
if sys.platform.startswith("linux"):
    try:
        _prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        _prctl = None


_PR_SET_DUMPABLE = ctypes.c_int(4)


def forbid_inspection() -> bool:
    """Make this process non-dumpable (Linux): other processes of the same user, an agent
    ptysup started among them, can then no longer read its /proc/PID/environ or memory, nor
    trace it; only CAP_SYS_PTRACE can. Whether it took effect."""
    prctl = _prctl
    return prctl is not None and prctl(_PR_SET_DUMPABLE, ctypes.c_ulong(0)) == 0


def end_other_processes(timeout: float = 10.0) -> bool:
    """As the first process of its PID namespace (a pod's container, whose command execs
    ptysup), SIGKILL every other process in it and reap them: whatever an agent left
    running (a setsid daemon escapes its process group) is gone. True once none is left,
    and at once when this is not pid 1 (a person's machine: nothing is touched there)."""
    if os.getpid() != 1:
        return True
    with contextlib.suppress(ProcessLookupError):
        os.kill(-1, signal.SIGKILL)  # every process it may signal but itself
    # Orphans are re-parented to pid 1, so every one left becomes a child to reap: the
    # namespace is empty when waitpid says there is no child any more.
    reaper = threading.Thread(target=_reap_all, name="ptysup-reap", daemon=True)
    reaper.start()
    reaper.join(timeout)
    return not reaper.is_alive()


def _reap_all() -> None:
    with contextlib.suppress(ChildProcessError):
        while True:
            os.waitpid(-1, 0)


def dies_with(parent: int) -> Callable[[], None] | None:
    """A preexec_fn that has the kernel SIGKILL the child when `parent` dies (Linux only)."""
    prctl = _prctl
    if prctl is None:
        return None

    def preexec() -> None:
        # Between fork and exec, with other threads' locks possibly held: no imports and
        # no allocation, only the C call resolved at import time and two syscalls.
        prctl(_PR_SET_PDEATHSIG, _SIGKILL)
        if os.getppid() != parent:  # ptysup died before the call above took effect
            os._exit(1)

    return preexec
