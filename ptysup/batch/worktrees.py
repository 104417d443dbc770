"""Git for a batch: one pinned base commit, a worktree and branch `ptysup/<id>` per task,
the task's work committed on its branch (never merged), and what that branch changed.

Worktrees are created one at a time under a lock file: git itself locks `.git/config` and
the ref store, and concurrent `git worktree add -b` lose that race (6 of 24 in the issue's
test); `--no-track` keeps `.git/config` out of it, the lock keeps the rest serial.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ptysup.agents import registry

BRANCH_PREFIX = "ptysup/"
WORKTREES_DIR = Path(".ptysup/worktrees")
LOCK_NAME = ".lock"
# Used only when git has no identity of its own (a fresh CI machine), so a commit never fails.
FALLBACK_IDENTITY = ("ptysup", "ptysup@localhost")
# ptysup's own folder and the agents' own files (their chat histories...) never go into a
# task's commit, whatever the repository ignores: they are no work of the task's.
EXCLUDE = (":(exclude).ptysup", *(f":(top,exclude,glob){p}" for p in registry.own_files()))


class GitError(Exception):
    """A git command failed; the message is one line."""


def git(args: Sequence[str], cwd: Path, *, check: bool = True) -> str:
    """Run git in `cwd` and return its stdout; GitError with git's own words if it fails."""
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError as exc:
        raise GitError(f"cannot run git: {exc.strerror or exc}") from None
    if check and proc.returncode != 0:
        words = " ".join((proc.stderr or proc.stdout).split()) or f"exit {proc.returncode}"
        raise GitError(f"git {' '.join(args[:2])}: {words}")
    return proc.stdout


def repo_root(cwd: Path) -> Path | None:
    """The top of the git working tree holding `cwd`, or None outside one."""
    try:
        out = git(["rev-parse", "--show-toplevel"], cwd).strip()
    except GitError:
        return None
    return Path(out) if out else None


def branch(task_id: str) -> str:
    """The branch of a task."""
    return f"{BRANCH_PREFIX}{task_id}"


@dataclass(frozen=True)
class Worktree:
    """One task's checkout."""

    task_id: str
    path: Path
    branch: str


@dataclass(frozen=True)
class Work:
    """What a task's branch and worktree hold of its own."""

    commits: int  # on its branch, beyond the batch's base
    uncommitted: int  # files changed in its worktree and not committed

    def __str__(self) -> str:
        said = [f"{self.commits} commit(s)"] if self.commits else []
        said += [f"{self.uncommitted} uncommitted file(s)"] if self.uncommitted else []
        return ", ".join(said) or "no work"


class Worktrees:
    """The worktrees of one repository under `<home>/.ptysup/worktrees/`."""

    def __init__(self, home: Path) -> None:
        self.home = home  # the invoking directory (the repository or a folder inside it)
        self.folder = home / WORKTREES_DIR

    def path(self, task_id: str) -> Path:
        """Where a task's worktree is."""
        return self.folder / task_id

    def pin_base(self) -> str:
        """The commit every task's branch starts from, taken once."""
        try:
            return git(["rev-parse", "--verify", "HEAD^{commit}"], self.home).strip()
        except GitError:
            raise GitError(
                "the repository has no commit yet: a batch's branches start from HEAD"
            ) from None

    def branch_exists(self, name: str) -> bool:
        """Whether a local branch of that name exists."""
        out = git(["branch", "--list", name], self.home)
        return bool(out.strip())

    def conflict(self, task_id: str) -> str | None:
        """Why a task's branch or worktree cannot be made without clobbering work, or None."""
        name = branch(task_id)
        if self.branch_exists(name):
            return (
                f"branch {name} already exists (an earlier batch's work?): "
                f"delete it (git branch -D {name}) or rename the task"
            )
        if self.path(task_id).exists():
            return f"{self.path(task_id)} already exists: ptysup runs prune, or remove it"
        return None

    @contextlib.contextmanager
    def _serial(self) -> Iterator[None]:
        """One git worktree operation at a time, across threads and processes."""
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # a fresh open file each time: threads exclude too
            yield
        finally:
            os.close(fd)

    def create(self, task_id: str, base: str) -> Worktree:
        """The task's worktree on a new branch from `base`; GitError if it cannot be made."""
        name, path = branch(task_id), self.path(task_id)
        with self._serial():
            problem = self.conflict(task_id)
            if problem is not None:
                raise GitError(problem)
            git(["worktree", "add", "--no-track", "-b", name, str(path), base], self.home)
        return Worktree(task_id, path, name)

    def reuse(self, task_id: str, base: str) -> Worktree:
        """The task's worktree as an earlier (crashed) batch left it: unlocked (its batch is
        gone), re-added on its branch if the folder went, made anew if the branch did."""
        name, path = branch(task_id), self.path(task_id)
        with self._serial():
            if not self.branch_exists(name):
                git(["worktree", "prune"], self.home, check=False)
                git(["worktree", "add", "--no-track", "-b", name, str(path), base], self.home)
            elif not path.is_dir():
                git(["worktree", "prune"], self.home, check=False)
                git(["worktree", "add", str(path), name], self.home)
            else:
                git(["worktree", "unlock", str(path)], self.home, check=False)
        return Worktree(task_id, path, name)

    def work_in(self, task_id: str, base: str) -> Work:
        """What the task's branch and worktree hold: commits beyond `base`, files changed
        and not committed (nothing for those that are gone)."""
        name, path = branch(task_id), self.path(task_id)
        commits = 0
        if self.branch_exists(name):
            commits = int(git(["rev-list", "--count", f"{base}..{name}"], self.home).strip())
        changed = len(uncommitted(path)) if (path / ".git").exists() else 0
        return Work(commits, changed)

    def remove(self, task_id: str) -> None:
        """Remove the task's worktree and branch (`batch --fresh`: the person asked)."""
        name, path = branch(task_id), self.path(task_id)
        with self._serial():
            if path.exists():
                git(["worktree", "unlock", str(path)], self.home, check=False)
                git(["worktree", "remove", "--force", "--force", str(path)], self.home)
            git(["worktree", "prune"], self.home, check=False)
            if self.branch_exists(name):
                git(["branch", "-D", name], self.home)

    def lock(self, tree: Worktree, reason: str) -> None:
        """`git worktree lock`: prune and `git worktree remove` leave it alone."""
        with self._serial():
            git(["worktree", "lock", "--reason", reason, str(tree.path)], self.home)

    def unlock(self, tree: Worktree) -> None:
        """Release the lock taken by lock()."""
        with self._serial():
            git(["worktree", "unlock", str(tree.path)], self.home, check=False)

    def commit(self, tree: Worktree, message: str) -> str | None:
        """Commit everything in the worktree (untracked files too; .ptysup/ and the agents'
        own files never) on its branch; the new commit, or None when nothing changed."""
        git(["add", "-A", "--", ".", *EXCLUDE], tree.path)
        if not dirty_index(tree.path):
            return None
        git([*identity(tree.path), "commit", "--no-verify", "-q", "-m", message], tree.path)
        return git(["rev-parse", "HEAD"], tree.path).strip()

    def diff_stat(self, base: str, name: str) -> str:
        """`git diff --stat base..branch`'s last line ('' when nothing changed)."""
        out = git(["diff", "--stat", f"{base}..{name}"], self.home).strip().splitlines()
        return out[-1].strip() if out else ""


def dirty_index(path: Path) -> bool:
    """Whether the index of the worktree at `path` differs from its HEAD."""
    proc = subprocess.run(
        ["git", "diff", "--cached", "--quiet"],
        cwd=path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
    )
    return proc.returncode == 1


def uncommitted(path: Path) -> list[str]:
    """`git status --porcelain` of a worktree, ptysup's folder and the agents' files left out."""
    out = git(["status", "--porcelain", "--", ".", *EXCLUDE], path)
    return [line for line in out.splitlines() if line.strip()]


def identity(cwd: Path) -> list[str]:
    """`-c user.name=… -c user.email=…` when git has no identity here, else nothing."""
    name = git(["config", "user.name"], cwd, check=False).strip()
    email = git(["config", "user.email"], cwd, check=False).strip()
    if name and email:
        return []
    return [
        "-c",
        f"user.name={name or FALLBACK_IDENTITY[0]}",
        "-c",
        f"user.email={email or FALLBACK_IDENTITY[1]}",
    ]


def commit_on_branch(top: Path, task_id: str, message: str) -> str:
    """In the checkout at `top`: switch to the task's branch (made here, the work tree's
    changes kept), commit everything (.ptysup/ never); the branch's commit."""
    name = branch(task_id)
    current = git(["rev-parse", "--abbrev-ref", "HEAD"], top).strip()
    if current != name:
        git(["switch", "-C", name], top)
    git(["add", "-A", "--", ".", *EXCLUDE], top)
    if dirty_index(top):
        git([*identity(top), "commit", "--no-verify", "-q", "-m", message], top)
    return git(["rev-parse", "HEAD"], top).strip()
