"""A run's private directory for its agent's files (e.g. Gemini CLI's system settings).

Under the person's state directory, never in /tmp: Gemini CLI skips a settings file
whose parent directories are group- or world-writable, and /tmp is world-writable. Each
directory on the way is made 0700; a killed part's directory is removed by the next part
(`remove_left`, named after the run).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path


def agents_dir(env: Mapping[str, str] = os.environ) -> Path:
    """$XDG_STATE_HOME/ptysup/agents (~/.local/state/ptysup/agents by default)."""
    base = env.get("XDG_STATE_HOME") or os.path.join(env.get("HOME") or "~", ".local", "state")
    return Path(base).expanduser() / "ptysup" / "agents"


def _prefix(run_id: str | None) -> str:
    return f"{run_id}-" if run_id else "run-"


@contextlib.contextmanager
def private_dir(run_id: str | None, env: Mapping[str, str] = os.environ) -> Iterator[Path]:
    """A fresh 0700 directory for the block, removed after it. Where the state directory
    cannot be made, a temporary one (an agent that checks its parents may then warn)."""
    parent = agents_dir(env)
    try:
        parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = Path(tempfile.mkdtemp(prefix=_prefix(run_id), dir=parent))
    except OSError:
        path = Path(tempfile.mkdtemp(prefix="ptysup-agent-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def remove_left(run_id: str, env: Mapping[str, str] = os.environ) -> list[str]:
    """Remove the private directories earlier parts of run `run_id` left (a SIGKILL
    leaves one behind); the removed paths. Call it holding the run's lock."""
    removed = []
    with contextlib.suppress(OSError):
        for path in sorted(agents_dir(env).glob(_prefix(run_id) + "*")):
            st = path.lstat()
            if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid():
                shutil.rmtree(path, ignore_errors=True)
                removed.append(str(path))
    return removed
