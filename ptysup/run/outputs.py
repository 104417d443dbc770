"""Output paths checked before anything starts: a run never learns at its end that a file
it was asked to write cannot be written."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterable
from pathlib import Path


def problem(path: Path) -> str | None:
    """Why `path` cannot be written (the OS's own words), or None.

    Tried for real, not guessed from permission bits (root passes those, /proc does not
    take files): missing parent directories and the file are created and removed again;
    an existing file is opened without truncation.
    """
    try:  # a folder the user cannot enter refuses even a look inside it
        if path.is_dir():
            return os.strerror(errno.EISDIR)
        missing = [p for p in path.parents if not p.exists() and not p.is_symlink()]
        existed = path.exists()
    except OSError as exc:
        return exc.strerror or str(exc)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:  # an empty write: /proc and /sys files open for writing, then refuse it
            os.write(fd, b"")
        finally:
            os.close(fd)
        if not existed:
            path.unlink()
    except OSError as exc:
        if isinstance(exc, FileExistsError):  # a file where a directory must be
            return os.strerror(errno.ENOTDIR)
        return exc.strerror or str(exc)
    finally:
        for directory in missing:  # innermost first: leave the tree as it was
            with contextlib.suppress(OSError):
                directory.rmdir()
    return None


def first_problem(paths: Iterable[tuple[str, Path | None]]) -> str | None:
    """One line for the first (option, path) that cannot be written, or None."""
    for option, path in paths:
        if path is None:
            continue
        reason = problem(path)
        if reason is not None:
            return f"cannot write {option} {path}: {reason}"
    return None


def same_file(paths: Iterable[tuple[str, Path | None]]) -> str | None:
    """One line when two options would write the same file, or None."""
    seen: dict[Path, str] = {}
    for option, path in paths:
        if path is None:
            continue
        key = path.resolve()
        if key in seen:
            return f"{seen[key]} and {option} are the same file: {path}"
        seen[key] = option
    return None


GITIGNORE = "# ptysup's run logs and raw terminal recordings: never commit them\n*\n"


def ignore_in_git(folder: Path) -> None:
    """Give ptysup's own folder (.ptysup/) a .gitignore, so `git add -A` by an agent never
    commits logs and recordings; an existing file is left as the person wrote it."""
    path = folder / ".gitignore"
    if path.exists() or not folder.is_dir():
        return
    with contextlib.suppress(OSError):  # best effort: the run does not depend on it
        path.write_text(GITIGNORE, encoding="utf-8")
