"""--on-complete pr: a completed task's branch pushed and a pull request opened with `gh`."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from ptysup.batch.scheduler import Finish, TaskResult
from ptysup.batch.schema import Task
from ptysup.batch.worktrees import GitError, Worktree, git


def preflight(home: Path, env: Mapping[str, str]) -> str:
    """The branch pull requests go into; GitError before anything starts if `gh` is
    missing, there is no `origin`, or HEAD is not on a branch."""
    if shutil.which("gh", path=env.get("PATH")) is None:
        raise GitError("--on-complete pr needs the GitHub CLI `gh` on PATH (or use commit)")
    if not git(["remote", "get-url", "origin"], home, check=False).strip():
        raise GitError("--on-complete pr needs a remote named origin to push to")
    base = git(["rev-parse", "--abbrev-ref", "HEAD"], home).strip()
    if base == "HEAD":
        raise GitError("--on-complete pr needs HEAD on a branch (the pull requests' base)")
    return base


def opener(base: str, home: Path, env: Mapping[str, str]) -> Finish:
    """What the scheduler calls after committing a task: push, then `gh pr create`."""

    def open_pr(task: Task, result: TaskResult, tree: Worktree) -> None:
        if result.commit is None:
            return  # nothing changed: no pull request
        try:
            git(["push", "-u", "origin", tree.branch], tree.path)
        except GitError as exc:
            result.error = f"push failed: {exc}"
            return
        title = f"ptysup: {task.id}"
        body = (
            f"Task `{task.id}` of a ptysup batch, run `{result.run_id}` "
            f"({result.outcome}).\n\n{result.diff_stat}\n"
        )
        proc = subprocess.run(
            [
                "gh",
                "pr",
                "create",
                "--head",
                tree.branch,
                "--base",
                base,
                "--title",
                title,
                "--body",
                body,
            ],
            cwd=tree.path,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            result.error = "gh pr create: " + " ".join((proc.stderr or proc.stdout).split())
        else:
            result.pr_url = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else None

    return open_pr
