"""Worktrees of a batch on a real git repository: the creation race, refusing to clobber,
commits on the branch only, and prune's choices."""

from __future__ import annotations

import fcntl
import io
import os
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from ptysup.batch import prune, worktrees
from ptysup.batch.worktrees import GitError, Worktrees, git

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    subprocess.run([*GIT, "init", "-q"], cwd=path, check=True)
    (path / "a.txt").write_text("a\n")
    subprocess.run([*GIT, "add", "-A"], cwd=path, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "base"], cwd=path, check=True)
    return path


def test_eight_worktrees_made_at_once_all_succeed(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trees = Worktrees(repo)
    base = trees.pin_base()
    # Every `git worktree add` runs while the batch's lock is held (git itself may or may
    # not survive concurrent adds): the probe finds the lock taken each time.
    unguarded: list[str] = []

    def probe(args: Sequence[str], cwd: Path, *, check: bool = True) -> str:
        if list(args[:2]) == ["worktree", "add"]:
            trees.folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(trees.folder / worktrees.LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                unguarded.append(str(args[-2]))  # nobody held it
            except BlockingIOError:
                pass
            finally:
                os.close(fd)
        return git(args, cwd, check=check)

    monkeypatch.setattr(worktrees, "git", probe)
    start = threading.Barrier(8)
    errors: list[BaseException] = []

    def make(i: int) -> None:
        start.wait()  # all eight reach git at the same moment
        try:
            trees.create(f"t{i}", base)
        except BaseException as exc:  # every failure is the result
            errors.append(exc)

    threads = [threading.Thread(target=make, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert unguarded == []
    listing = git(["worktree", "list", "--porcelain"], repo)
    for i in range(8):
        assert f"branch refs/heads/ptysup/t{i}" in listing
        assert git(["rev-parse", f"ptysup/t{i}"], repo).strip() == base
    # --no-track: no branch.<name>.* sections were written to .git/config
    assert "ptysup/" not in (repo / ".git" / "config").read_text()


def test_an_existing_branch_is_never_clobbered(repo: Path) -> None:
    git(["branch", "ptysup/x"], repo)
    trees = Worktrees(repo)
    assert "branch ptysup/x already exists" in (trees.conflict("x") or "")
    with pytest.raises(GitError, match="already exists"):
        trees.create("x", trees.pin_base())


def test_a_commit_takes_everything_but_ptysup_and_stays_on_the_branch(repo: Path) -> None:
    trees = Worktrees(repo)
    base = trees.pin_base()
    tree = trees.create("w", base)
    (tree.path / "new.txt").write_text("new\n")
    (tree.path / "a.txt").write_text("changed\n")
    (tree.path / ".ptysup").mkdir()
    (tree.path / ".ptysup" / "log").write_text("private\n")
    commit = trees.commit(tree, "ptysup batch: w\n\nRun: r1\n")
    assert commit is not None
    assert git(["diff", "--name-only", f"{base}..ptysup/w"], repo).split() == ["a.txt", "new.txt"]
    assert trees.diff_stat(base, "ptysup/w") == "2 files changed, 2 insertions(+), 1 deletion(-)"
    assert git(["rev-parse", "HEAD"], repo).strip() == base  # nothing merged
    assert trees.commit(tree, "again") is None  # nothing left to commit


def test_prune_removes_only_unlocked_clean_worktrees(repo: Path) -> None:
    trees = Worktrees(repo)
    base = trees.pin_base()
    clean, dirty, busy = (trees.create(n, base) for n in ("clean", "dirty", "busy"))
    (dirty.path / "wip.txt").write_text("unsaved\n")
    trees.lock(busy, "ptysup batch pid 1 run r1")
    out = io.StringIO()
    assert prune.prune(repo, out, dry_run=True) == 0
    assert "would remove .ptysup/worktrees/clean (branch ptysup/clean stays)" in out.getvalue()
    assert clean.path.is_dir()  # a dry run removes nothing
    out = io.StringIO()
    assert prune.prune(repo, out) == 0
    text = out.getvalue()
    assert "removed  .ptysup/worktrees/clean (branch ptysup/clean stays)" in text
    assert "kept     .ptysup/worktrees/dirty: 1 uncommitted change(s) (e.g. ?? wip.txt)" in text
    assert "kept     .ptysup/worktrees/busy: locked" in text and "run r1" in text
    assert not clean.path.exists() and dirty.path.is_dir() and busy.path.is_dir()
    assert git(["rev-parse", "ptysup/clean"], repo).strip() == base  # the branch stays
    trees.unlock(busy)
    out = io.StringIO()
    prune.prune(repo, out)
    assert "removed  .ptysup/worktrees/busy" in out.getvalue()


def test_prune_with_nothing_to_do_says_so(repo: Path) -> None:
    out = io.StringIO()
    assert prune.prune(repo, out) == 0
    assert out.getvalue() == "no worktrees in .ptysup/worktrees/\n"


def test_a_repository_without_a_commit_is_one_clear_line(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    with pytest.raises(GitError, match=r"^the repository has no commit yet"):
        Worktrees(tmp_path).pin_base()
