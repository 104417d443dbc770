"""Small process helpers shared by the supervisor runner and --verify."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from collections.abc import Callable, Sequence


def is_claude(argv: Sequence[str]) -> bool:
    """Whether a command is Claude Code (its executable is named claude), agent or judge."""
    return bool(argv) and os.path.basename(argv[0]) == "claude"


def is_codex(argv: Sequence[str]) -> bool:
    """Whether a command is Codex CLI (its executable is named codex), agent or judge."""
    return bool(argv) and os.path.basename(argv[0]) == "codex"


def is_gemini(argv: Sequence[str]) -> bool:
    """Whether a command is Gemini CLI (its executable is named gemini), agent or judge."""
    return bool(argv) and os.path.basename(argv[0]) == "gemini"


def is_qwen(argv: Sequence[str]) -> bool:
    """Whether a command is Qwen Code (its executable is named qwen), agent or judge."""
    return bool(argv) and os.path.basename(argv[0]) == "qwen"


def is_opencode(argv: Sequence[str]) -> bool:
    """Whether a command is opencode (its executable is named opencode)."""
    return bool(argv) and os.path.basename(argv[0]) == "opencode"


def is_aider(argv: Sequence[str]) -> bool:
    """Whether a command is aider (its executable is named aider)."""
    return bool(argv) and os.path.basename(argv[0]) == "aider"


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
