"""A fingerprint of the files in a git repository: changes whenever the agent changes one.

The spinning detector (`ptysup.run.repeats`) compares it between rounds: the same answer
with files changing is progress. Outside a repository (or without git) there is none.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

GIT_TIMEOUT_S = 10.0
_MAX_UNTRACKED = 2_000  # untracked files stat'ed; more only count by their names


def git_fingerprint(cwd: Path, exclude: Sequence[Path] = ()) -> str | None:
    """A hash of HEAD, `git status`, the diff against HEAD and the untracked files' sizes
    and modification times, leaving out `exclude` (what ptysup itself writes: its log,
    its recording); None when `cwd` is not in a git work tree or git fails."""
    paths = ("--", ".", *(f":(exclude,top){p}" for p in _inside(cwd, exclude)))
    if _git(cwd, "rev-parse", "--is-inside-work-tree") is None:
        return None
    digest = hashlib.sha256()
    for args in (
        ("rev-parse", "--verify", "-q", "HEAD"),  # fails before the first commit: no HEAD
        ("status", "--porcelain=v1", "-z", "--untracked-files=all", *paths),
        ("diff", "HEAD", "--binary", "--no-ext-diff", "--no-color", *paths),
    ):
        digest.update(b"\0" + (_git(cwd, *args) or b""))
    untracked = _git(cwd, "ls-files", "--others", "--exclude-standard", "-z", *paths)
    for name in (untracked or b"").split(b"\0")[:_MAX_UNTRACKED]:
        if name:
            try:
                st = (cwd / os.fsdecode(name)).stat()
            except OSError:
                continue
            digest.update(b"\0%s\0%d\0%d" % (name, st.st_size, st.st_mtime_ns))
    return digest.hexdigest()


def _inside(cwd: Path, paths: Sequence[Path]) -> list[str]:
    """`paths` inside the work tree, relative to its top (pathspecs); others are left out."""
    top = _git(cwd, "rev-parse", "--show-toplevel")
    if top is None:
        return []
    root = Path(os.fsdecode(top.strip())).resolve()
    out = []
    for path in paths:
        try:
            out.append((cwd / path).resolve().relative_to(root).as_posix())
        except ValueError:
            continue
    return out


def _git(cwd: Path, *args: str) -> bytes | None:
    """git's stdout, or None when it fails (not a repository, no git, too slow)."""
    try:
        done = subprocess.run(
            ("git", *args),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            # Only looking: no index refresh written, no lock the agent's own git could meet.
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None
