"""`batch run --push REMOTE` before the task runs, with real git repositories: the remote
read at once, and a branch of the task's name already there refused unless it is this
checkout's own earlier push."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ptysup.batch import remote, taskrun
from ptysup.batch.schema import Task
from ptysup.batch.worktrees import GitError
from ptysup.exitcodes import ExitCode
from ptysup.procutil import end_other_processes

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
TASK = Task(id="only", task="x")


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run([*GIT, *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A clone of a bare repository `origin.git` with one commit."""
    seed = tmp_path / "seed"
    seed.mkdir()
    (seed / "a.txt").write_text("a\n")
    _git(seed, "init", "-q")
    _git(seed, "add", ".")
    _git(seed, "commit", "-qm", "start")
    _git(tmp_path, "clone", "-q", "--bare", str(seed), "origin.git")
    _git(tmp_path, "clone", "-q", "origin.git", "clone")
    return tmp_path / "clone"


def _branch_there(clone: Path, content: str) -> str:
    """Commit CONTENT on ptysup/only in CLONE and push it; its commit."""
    _git(clone, "switch", "-qc", "ptysup/only")
    (clone / "b.txt").write_text(content)
    _git(clone, "add", ".")
    _git(clone, "commit", "-qm", "work")
    _git(clone, "push", "-q", "origin", "ptysup/only")
    return _git(clone, "rev-parse", "HEAD")


def test_a_remote_s_name_is_read_before_the_task_runs(clone: Path) -> None:
    checked = taskrun._remote_first(TASK, "origin", clone)
    assert isinstance(checked, remote.Remote)
    assert checked.url == str(clone.parent / "origin.git")
    _git(clone, "remote", "set-url", "origin", "https://evil.example/x.git")  # the agent
    assert checked.url == str(clone.parent / "origin.git")


def test_a_branch_there_from_another_batch_is_refused_before_the_task_runs(
    clone: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _branch_there(clone, "another job's work\n")
    _git(tmp_path, "clone", "-q", "origin.git", "fresh")  # the second Job's clone
    fresh = tmp_path / "fresh"
    assert taskrun._remote_first(TASK, "origin", fresh) == ExitCode.USAGE
    (said,) = capsys.readouterr().err.splitlines()
    assert said == (
        "ptysup: --push origin: branch ptysup/only is already there (an earlier batch's "
        "work?): delete it there (git push origin --delete ptysup/only) or rename the task"
    )


def test_the_checkout_s_own_earlier_push_is_no_conflict(clone: Path) -> None:
    _branch_there(clone, "this pod's work, pushed before it was killed\n")
    assert isinstance(taskrun._remote_first(TASK, "origin", clone), remote.Remote)


def test_a_remote_that_cannot_be_reached_is_worth_another_try(
    clone: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gone = str(tmp_path / "nowhere.git")
    assert taskrun._remote_first(TASK, gone, clone) == taskrun.PUSH_FAILED
    assert capsys.readouterr().err.startswith(f"ptysup: --push {gone}: cannot reach it: ")


def test_outside_a_repository_push_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert taskrun._remote_first(TASK, "origin", tmp_path) == ExitCode.USAGE
    assert "is not in a git repository" in capsys.readouterr().err


def test_ending_the_other_processes_touches_nothing_but_as_a_pod_s_first_process() -> None:
    child = subprocess.Popen(["sleep", "60"])
    try:
        assert end_other_processes(timeout=1) is True
        assert child.poll() is None  # pid 1 only: on a person's machine nothing is ended
    finally:
        child.kill()
        child.wait()


def test_the_token_is_only_for_the_jobs_repository_whatever_the_checkout_says(
    clone: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.gitserver import serve

    _git(clone, "switch", "-qc", "ptysup/only")
    (clone / "b.txt").write_text("work\n")
    _git(clone, "add", ".")
    _git(clone, "commit", "-qm", "work")
    (tmp_path / "served").mkdir()
    _git(tmp_path, "clone", "-q", "--bare", "origin.git", "served/origin.git")
    _git(tmp_path, "clone", "-q", "--bare", "origin.git", "served/other.git")
    with serve(tmp_path / "served", "s3cret") as server:
        monkeypatch.setenv("PTYSUP_REPOSITORY", server.url("origin.git"))
        elsewhere = remote.Remote(server.url("other.git"), "s3cret")  # as the agent set it
        with pytest.raises(GitError, match="could not read Username"):
            elsewhere.push(clone, "ptysup/only")
        assert not any(r.authorized for r in server.requests)
        remote.Remote(server.url("origin.git"), "s3cret").push(clone, "ptysup/only")
        assert [r.path for r in server.pushes()][-1] == "/origin.git/git-receive-pack"
