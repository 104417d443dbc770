"""`ptysup runs prune`: remove the batch worktrees nothing needs any more.

A worktree under .ptysup/worktrees/ goes only when no run holds it (git's worktree lock,
taken by the batch while its task runs, is free) and nothing in it is uncommitted
(`git status --porcelain` empty, ptysup's own folder aside). Its branch always stays: the
work is there. Everything kept is said, with why.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ptysup.argspec import ArgSpec
from ptysup.batch.worktrees import WORKTREES_DIR, GitError, git, uncommitted

USAGE = "usage: ptysup runs prune [--dry-run]   (remove finished batch worktrees, keep branches)"
ARGS = ArgSpec(flags=("-n", "--dry-run"))


@dataclass(frozen=True)
class Entry:
    """One worktree as `git worktree list --porcelain` describes it."""

    path: Path
    branch: str | None
    locked: str | None  # the lock's reason ('' for a lock without one), None when free


def worktrees(home: Path) -> list[Entry]:
    """The repository's worktrees (parsed from git's porcelain output)."""
    out = git(["worktree", "list", "--porcelain"], home)
    entries: list[Entry] = []
    for block in out.strip().split("\n\n"):
        fields: dict[str, str | None] = {}
        for line in block.splitlines():
            key, _, value = line.partition(" ")
            fields[key] = value
        if fields.get("worktree"):
            ref = fields.get("branch")
            entries.append(
                Entry(
                    path=Path(str(fields["worktree"])),
                    branch=ref.removeprefix("refs/heads/") if ref else None,
                    locked=fields.get("locked"),
                )
            )
    return entries


def decide(entry: Entry) -> str | None:
    """Why a worktree must be kept, or None when it can go."""
    if entry.locked is not None:
        why = entry.locked or "no reason given"
        return f"locked: a run may be using it ({why}; `git worktree unlock` if none is)"
    changes = uncommitted(entry.path)
    if changes:
        return f"{len(changes)} uncommitted change(s) (e.g. {changes[0].strip()})"
    return None


def prune(home: Path, out: TextIO, *, dry_run: bool = False) -> int:
    """Remove what can go under `home`'s .ptysup/worktrees/, saying what and why; exit code."""
    folder = (home / WORKTREES_DIR).resolve()
    ours = [e for e in worktrees(home) if e.path.resolve().parent == folder]
    if not ours:
        out.write(f"no worktrees in {WORKTREES_DIR}/\n")
        return 0
    for entry in ours:
        shown = (
            entry.path.relative_to(home.resolve())
            if entry.path.is_relative_to(home.resolve())
            else entry.path
        )
        branch = f" (branch {entry.branch} stays)" if entry.branch else ""
        try:
            why = decide(entry)
        except GitError as exc:
            why = f"cannot tell: {exc}"
        if why is not None:
            out.write(f"kept     {shown}: {why}\n")
        elif dry_run:
            out.write(f"would remove {shown}{branch}\n")
        else:
            git(["worktree", "remove", str(entry.path)], home)
            out.write(f"removed  {shown}{branch}\n")
    return 0


def main(args: Sequence[str], out: TextIO = sys.stdout, home: Path | None = None) -> int:
    """Entry point of `ptysup runs prune`."""
    dry_run = False
    for arg in args:
        if arg in ("-h", "--help"):
            print(USAGE, file=out)
            return 0
        if arg in ("-n", "--dry-run"):
            dry_run = True
        else:
            print(f"ptysup: runs prune: unknown argument {arg!r}; {USAGE}", file=sys.stderr)
            return 2
    try:
        return prune(home or Path.cwd(), out, dry_run=dry_run)
    except GitError as exc:
        print(f"ptysup: runs prune: {exc}", file=sys.stderr)
        return 2
