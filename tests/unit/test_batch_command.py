"""`ptysup batch` on the command line: plan output, bad input (exit 2, one line, nothing
created), exit codes, and what is shown while it runs."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ptysup.batch import command, summary
from ptysup.batch.display import Lines
from ptysup.batch.result import TaskResult
from ptysup.cli.commandline import main

TASKS = (
    "max-iter: 4\ntasks:\n  - {id: cache, task: Add a cache}\n  - {id: docs, task: Write docs}\n"
)


@pytest.fixture
def tasks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "TASKS.yaml"
    path.write_text(TASKS)
    return path


def test_plan_as_a_github_matrix_holds_only_ids(tasks: Path) -> None:
    out = io.StringIO()
    assert command.plan_main([str(tasks), "--format", "github-matrix"], out, {}) == 0
    assert out.getvalue() == '{"include": [{"id": "cache"}, {"id": "docs"}]}\n'
    assert "Add a cache" not in out.getvalue()


def test_plan_as_json_prints_a_tasks_secrets_redacted(tmp_path: Path) -> None:
    token = "ghp_" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa"
    path = tmp_path / "TASKS.yaml"
    path.write_text(f"tasks:\n  - {{id: a, task: 'use {token} to push'}}\n")
    out = io.StringIO()
    assert command.plan_main([str(path)], out, {}) == 0
    task = json.loads(out.getvalue())["tasks"][0]["task"]
    assert token not in task and task.startswith("use [REDACTED")


def test_plan_as_json_holds_the_resolved_tasks(tasks: Path) -> None:
    out = io.StringIO()
    assert command.plan_main([str(tasks), "--format=json"], out, {}) == 0
    data = json.loads(out.getvalue())
    assert data["tasks"][1] == {
        "id": "docs",
        "task": "Write docs",
        "plan": None,
        "options": {"max_iter": 4},
    }


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["batch", "TASKS.yaml", "--jobs", "0"], "--jobs must be a whole number"),
        (["batch", "TASKS.yaml", "--isolate", "vm"], "--isolate must be worktree or none"),
        (["batch", "TASKS.yaml", "--on-complete", "merge"], "--on-complete must be commit or pr"),
        (["batch", "TASKS.yaml", "--log-file", "x"], "--log-file cannot be given to a batch"),
        (["batch", "TASKS.yaml", "--plan", "p.yaml"], "--plan cannot be given to a batch"),
        (["batch", "TASKS.yaml", "--verify", "no-such-check"], "verify command not found"),
        (["batch", "TASKS.yaml", "--isolate", "worktree"], "needs a git repository"),
        (["batch", "TASKS.yaml", "--max-iter", "lots"], "task 'cache': Invalid value"),
        (["batch", "missing.yaml"], "cannot read missing.yaml"),
        (["batch", "--jobs", "2"], "TASKS.yaml comes first"),
        (["batch", "plan", "TASKS.yaml", "--format", "yaml"], "--format must be json"),
        (["batch", "run", "TASKS.yaml"], "needs one of --index N or --id ID"),
        (["batch", "run", "TASKS.yaml", "--index", "2"], "no task at index 2"),
        (["batch", "run", "TASKS.yaml", "--index", "-1"], "--index must be a whole number"),
        (["batch", "run", "TASKS.yaml", "--id", "nope"], "no task with id 'nope'"),
        (["batch", "run", "TASKS.yaml", "--index", "0", "--id", "x"], "not both"),
        (["batch"], "batch needs a TASKS.yaml (see: ptysup batch --help)"),
        (["batch", "plan"], "batch plan needs a TASKS.yaml"),
        (["batch", "run"], "batch run needs a TASKS.yaml and --index N or --id ID"),
    ],
)
def test_bad_input_is_exit_2_with_one_line_and_nothing_started(
    tasks: Path, capsys: pytest.CaptureFixture[str], args: list[str], words: str
) -> None:
    assert main(args, {"PATH": "/usr/bin:/bin"}) == 2
    err = capsys.readouterr().err
    assert err.startswith("ptysup: ") and err.count("\n") == 1 and words in err, err
    assert not (tasks.parent / ".ptysup").exists()


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
def test_pull_requests_need_gh_before_anything_starts(
    tasks: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tasks.parent, check=True)
    subprocess.run(
        [
            "git",
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@e",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "b",
        ],
        cwd=tasks.parent,
        check=True,
    )
    assert main(["batch", "TASKS.yaml", "--on-complete", "pr"], {"PATH": "/nonexistent"}) == 2
    assert "needs the GitHub CLI `gh`" in capsys.readouterr().err
    assert not (tasks.parent / ".ptysup" / "worktrees").exists()


def _result(task_id: str, outcome: str | None, code: int | None) -> TaskResult:
    return TaskResult(task_id, f"run-{task_id}", Path("r"), outcome=outcome, exit_code=code)


def test_the_batch_exit_code() -> None:
    done = [_result("a", "complete", 0), _result("b", "complete", 0)]
    assert summary.exit_code(done, None) == 0
    assert summary.exit_code([*done, _result("c", "abort", 1)], None) == 1
    assert summary.exit_code([*done, _result("c", "not_started", None)], None) == 1
    assert summary.exit_code(done, 15) == 143  # stopped, even when all had completed
    failed_commit = _result("d", "complete", 0)
    failed_commit.error = "git commit: failed"
    assert summary.exit_code([failed_commit], None) == 1


def test_without_a_terminal_each_state_change_is_one_line() -> None:
    out = io.StringIO()
    lines = Lines(out, clock=lambda: 0.0)
    a = _result("alpha", None, None)
    lines.update([a])
    lines.update([a])  # no change, no line
    a.state = "working"
    a.extra = {"iterations": 2, "cost_usd": 0.5}
    lines.update([a])
    text = out.getvalue().splitlines()
    assert len(text) == 2
    assert text[0].endswith("batch  alpha  queued  (run run-alpha)")
    assert text[1].endswith("batch  alpha  working  (run run-alpha, iter 2, $0.5000)")


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
@pytest.mark.parametrize(
    "args", [["batch", "--help"], ["help", "batch"], ["batch", "TASKS.yaml", "--jobs", "2", "-h"]]
)
def test_batch_is_a_subcommand_with_help(args: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-m", "ptysup", *args], capture_output=True, text=True)
    assert proc.returncode == 0 and "ptysup batch plan TASKS.yaml" in proc.stdout, proc.stderr


def test_an_unknown_variable_does_not_muddle_a_task_s_error(
    tasks: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {"PATH": "/usr/bin:/bin", "PTYSUP_COLOUR": "blue"}
    assert main(["batch", "TASKS.yaml", "--max-iter", "lots"], env) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "task 'cache': Invalid value" in err
    assert "COLOUR" not in err


@pytest.mark.parametrize(
    ("text", "files", "env", "words"),
    [
        # A task's plan file that is not there, or that a run would refuse.
        ("tasks:\n  - id: a\n    task: x\n  - id: b\n    plan: nope.yaml\n", {}, {}, ":4: task"),
        (
            "tasks:\n  - id: a\n    plan: p.yaml\n",
            {"p.yaml": "steps:\n  - id: s\n    task: x\n"},
            {},
            ":2: task 'a': p.yaml:3: unknown key",
        ),
        # max-iter 0 from the environment or the config file: every run would refuse it.
        ("tasks:\n  - {id: a, task: x}\n", {}, {"PTYSUP_MAX_ITER": "0"}, ":2: task 'a': "),
        ("tasks:\n  - {id: a, task: x}\n", {".ptysup.yaml": "max-iter: 0\n"}, {}, ":2: task 'a'"),
        ("tasks:\n  - {id: a, task: x}\n  - {id: b, task: y}\nmax-iter: 0\n", {}, {}, ":4: max-i"),
        ("", {}, {}, "TASKS.yaml:1: expected a mapping"),
    ],
)
def test_batch_plan_refuses_what_batch_refuses_naming_file_and_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    text: str,
    files: dict[str, str],
    env: dict[str, str],
    words: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "TASKS.yaml").write_text(text)
    for name, content in files.items():
        (tmp_path / name).write_text(content)
    for args in (["batch", "plan", "TASKS.yaml"], ["batch", "TASKS.yaml"]):
        assert main(args, {"PATH": "/usr/bin:/bin", **env}) == 2, args
        err = capsys.readouterr().err
        assert err.startswith("ptysup: TASKS.yaml:") and err.count("\n") == 1, err
        assert words in err, err
    assert not (tmp_path / ".ptysup").exists()


def test_batch_plan_leaves_the_machine_s_commands_to_the_tasks_own_runners(
    tasks: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The plan job of a CI matrix need not have the tasks' verify command installed.
    tasks.write_text("verify: no-such-check\ntasks:\n  - {id: a, task: x}\n")
    assert main(["batch", "plan", "TASKS.yaml"], {"PATH": "/usr/bin:/bin"}) == 0
    assert main(["batch", "TASKS.yaml"], {"PATH": "/usr/bin:/bin"}) == 2
    assert "TASKS.yaml:3: task 'a': verify command not found" in capsys.readouterr().err


GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@e"]


def _git_repo(path: Path) -> str:
    git = GIT
    subprocess.run([*git, "init", "-q"], cwd=path, check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "base"], cwd=path, check=True)
    return _out(path, "rev-parse", "HEAD")


def _out(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.strip()


def _summary(path: Path) -> dict[str, dict[str, object]]:
    return {t["id"]: t for t in json.loads(path.read_text())["tasks"]}


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
def test_a_rerun_goes_on_with_interrupted_tasks_and_fresh_starts_over(
    tasks: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # An agent that exits at once: each task ends agent_exited (interrupted, resumed).
    quick = 'agent-cmd: "true"\nsupervisor-cmd: "true"\n'
    tasks.write_text(quick + "tasks:\n  - {id: a, task: x}\n  - {id: b, task: y}\n")
    base = _git_repo(tasks.parent)
    env = {"PATH": "/usr/bin:/bin"}
    assert main(["batch", "TASKS.yaml", "--summary-json", "1.json"], env) == 1
    first = _summary(tasks.parent / "1.json")
    assert {t["outcome"] for t in first.values()} == {"agent_exited"}
    # Work left on a branch by hand: a rerun keeps it, --fresh removes it.
    tree = tasks.parent / ".ptysup" / "worktrees" / "a"
    subprocess.run([*GIT, "commit", "-q", "--allow-empty", "-m", "by hand"], cwd=tree, check=True)
    by_hand = _out(tasks.parent, "rev-parse", "ptysup/a")
    assert main(["batch", "TASKS.yaml", "--summary-json", "2.json"], env) == 1
    second = _summary(tasks.parent / "2.json")
    assert [second[i]["run_id"] for i in "ab"] == [first[i]["run_id"] for i in "ab"]
    for t in second.values():  # the same run, resumed: a second part
        log = tasks.parent / ".ptysup" / "runs" / str(t["run_id"]) / "events.jsonl"
        assert '"run_resume"' in log.read_text()
    assert _out(tasks.parent, "rev-parse", "ptysup/a") == by_hand
    capsys.readouterr()
    # --fresh keeps work: a commit on a branch, a file changed in a worktree. It says
    # which and how to go on, and touches nothing.
    (tasks.parent / ".ptysup" / "worktrees" / "b" / "notes.txt").write_text("mine\n")
    assert main(["batch", "TASKS.yaml", "--fresh"], env) == 2
    (said,) = capsys.readouterr().err.splitlines()
    assert said == (
        "ptysup: --fresh would delete the work of the earlier batch: ptysup/a (1 commit(s)), "
        "ptysup/b (1 uncommitted file(s)); keep it first (git branch -m, commit or copy it), "
        "or delete it: --fresh --discard"
    )
    assert _out(tasks.parent, "rev-parse", "ptysup/a") == by_hand
    assert (tasks.parent / ".ptysup" / "worktrees" / "b" / "notes.txt").is_file()
    assert main(["batch", "TASKS.yaml", "--discard"], env) == 2
    assert "--discard goes with --fresh" in capsys.readouterr().err
    # Asked to: it deletes them, and says what went.
    assert (
        main(["batch", "TASKS.yaml", "--fresh", "--discard", "--summary-json", "3.json"], env) == 1
    )
    err = capsys.readouterr().err
    assert "ptysup: --fresh: removed ptysup/a and its worktree (1 commit(s))\n" in err
    assert "ptysup: --fresh: removed ptysup/b and its worktree (1 uncommitted file(s))\n" in err
    third = _summary(tasks.parent / "3.json")
    assert not {t["run_id"] for t in third.values()} & {t["run_id"] for t in first.values()}
    assert _out(tasks.parent, "rev-parse", "ptysup/a") == base  # made anew from the base
    assert "locked" not in _out(tasks.parent, "worktree", "list", "--porcelain")
    # Nothing of its own in them: --fresh alone starts over, and says so.
    assert main(["batch", "TASKS.yaml", "--fresh"], env) == 1
    err = capsys.readouterr().err
    assert "ptysup: --fresh: removed ptysup/a and its worktree (no work)\n" in err


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
def test_a_task_that_ended_for_good_is_kept_by_a_rerun(tasks: Path) -> None:
    from ptysup.batch import state

    tasks.write_text('agent-cmd: "true"\nsupervisor-cmd: "true"\ntasks:\n  - {id: a, task: x}\n')
    _git_repo(tasks.parent)
    env = {"PATH": "/usr/bin:/bin"}
    assert main(["batch", "TASKS.yaml"], env) == 1
    # As if the supervisor had said [ABORT]: a rerun would only repeat it.
    where = state.folder(tasks.parent / ".ptysup" / "runs", tasks)
    path = where / state.STATE_FILE
    path.write_text(path.read_text().replace('"agent_exited"', '"abort"'))
    assert main(["batch", "TASKS.yaml", "--summary-json", "s.json"], env) == 1
    (kept,) = _summary(tasks.parent / "s.json").values()
    assert kept["outcome"] == "abort"
    log = tasks.parent / ".ptysup" / "runs" / str(kept["run_id"]) / "events.jsonl"
    assert '"run_resume"' not in log.read_text()


@pytest.mark.parametrize(
    ("outcome", "error", "kept"),
    [
        ("complete", None, True),
        ("abort", None, True),
        ("budget", None, True),
        ("complete", "push failed: ...", False),
        ("signal", None, False),
        ("agent_exited", None, False),
        ("killed", "killed by SIGKILL before its run ended", False),
        ("exit -15", None, False),  # what an earlier ptysup wrote for a killed task
        ("exit 70", None, False),  # a process that ended with no run_end
    ],
)
def test_a_rerun_keeps_only_a_task_whose_run_ended_with_a_final_outcome_of_its_own(
    outcome: str, error: str | None, kept: bool
) -> None:
    from ptysup.batch.state import ENDED, TaskState

    assert TaskState("a", ENDED, "r", outcome, 0, error=error).kept is kept


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGKILL, 137), (signal.SIGTERM, 4)])
def test_batch_run_says_137_when_the_agent_was_killed_with_sigkill(
    tasks: Path, capsys: pytest.CaptureFixture[str], signum: int, code: int
) -> None:
    # The out-of-memory killer's SIGKILL is worth a retry (a Job's podFailurePolicy counts
    # 137); an agent that ended otherwise is the run's own outcome (4, final).
    agent = tasks.parent / "agent.sh"
    agent.write_text(f"#!/bin/sh\nkill -{int(signum)} $$\n")
    agent.chmod(0o755)
    tasks.write_text(
        f"agent-cmd: {agent}\nsupervisor-cmd: 'true'\ntasks:\n  - {{id: a, task: x}}\n"
    )
    assert main(["batch", "run", "TASKS.yaml", "--index", "0"], {"PATH": "/usr/bin:/bin"}) == code
    capsys.readouterr()


def test_the_git_credential_helper_gives_the_token_only_for_get_of_the_one_remote() -> None:
    from ptysup.engines import ci

    remote = "https://git.example:8443/team/project.git"
    env = {"PTYSUP_GIT_TOKEN": "s3cret", "PTYSUP_REPOSITORY": remote}
    ours = "protocol=https\nhost=git.example:8443\npath=team/project.git\n\n"

    def helper(operation: str, request: str, given: dict[str, str]) -> str:
        out = io.StringIO()
        assert ci.main(["git-credential", operation], given, out, io.StringIO(request)) == 0
        return out.getvalue()

    assert helper("get", ours, env) == "username=x-access-token\npassword=s3cret\n"
    # git names no path unless credential.useHttpPath: the host is the remote's.
    assert helper("get", "protocol=https\nhost=git.example:8443\n\n", env) != ""
    others = (
        "protocol=https\nhost=evil.example\n\n",  # another host
        "protocol=https\nhost=git.example\npath=team/project.git\n\n",  # another port
        "protocol=http\nhost=git.example:8443\npath=team/project.git\n\n",  # in clear
        "protocol=https\nhost=git.example:8443\npath=team/other.git\n\n",  # another repo
        "protocol=https\nhost=git.example:8443.evil.example\n\n",
    )
    for request in others:
        assert helper("get", request, env) == "", request
    assert helper("store", ours, env) == ""
    assert helper("get", ours, {"PTYSUP_GIT_TOKEN": "s3cret"}) == ""  # no remote: nobody
    assert helper("get", ours, {"PTYSUP_REPOSITORY": remote}) == ""  # no token


def test_ptysup_takes_the_git_token_out_of_the_environment_of_all_it_starts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ptysup.cli import gitauth

    monkeypatch.setenv("PTYSUP_GIT_TOKEN", "s3cret")
    given = {"PTYSUP_GIT_TOKEN": "s3cret", "PATH": "/usr/bin:/bin"}
    assert main(["version"], given) == 0
    capsys.readouterr()
    assert "PTYSUP_GIT_TOKEN" not in os.environ  # what ptysup starts inherits
    assert gitauth.token() == "s3cret"  # kept for the push alone
    assert main(["version"], {"PATH": "/usr/bin:/bin"}) == 0
    assert gitauth.token() is None  # an invocation without one holds none


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
def test_a_damaged_state_file_is_refused_and_fresh_starts_over(
    tasks: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ptysup.batch import state

    tasks.write_text('agent-cmd: "true"\nsupervisor-cmd: "true"\ntasks:\n  - {id: a, task: x}\n')
    _git_repo(tasks.parent)
    env = {"PATH": "/usr/bin:/bin"}
    assert main(["batch", "TASKS.yaml"], env) == 1
    path = state.folder(tasks.parent / ".ptysup" / "runs", tasks) / state.STATE_FILE
    path.write_text('{"tasks_file": ')  # cut
    capsys.readouterr()
    assert main(["batch", "TASKS.yaml"], env) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ptysup: cannot read {path}") and "--fresh" in err, err
    assert main(["batch", "TASKS.yaml", "--fresh"], env) == 2  # its branch is not known
    assert "branch ptysup/a already exists" in capsys.readouterr().err


def test_a_pull_requests_body_says_the_task_why_it_is_done_and_each_checks_last_result(
    tmp_path: Path,
) -> None:
    from ptysup.batch.pullrequest import body, title
    from ptysup.batch.result import TaskResult
    from ptysup.batch.schema import Task

    task = Task(id="cache", task="x", plan=None, options={}, line=3)
    result = TaskResult("cache", "20261127-1-a", tmp_path, diff_stat=" a.py | 2 +-\n")
    failed = {"command": ["pytest", "-q"], "exit_code": 1, "passed": False, "duration_s": 2.0}
    summary = {
        "task": "Add a cache layer\n\nkeep it small",
        "reason": "all tests pass",
        "iterations": 3,
        "elapsed_s": 61.0,
        "cost_usd": 0.25,
        "verifications": [
            {**failed, "output_tail": "FAILED test_cache\n1 failed"},
            {**failed, "exit_code": 0, "passed": True, "output_tail": "3 passed"},
            {"command": ["ruff", "check"], "exit_code": None, "passed": False, "duration_s": 9.0},
        ],
    }
    text = body(task, result, summary)
    assert "> Add a cache layer\n>\n> keep it small\n" in text
    assert "**Done, says the supervisor:** all tests pass" in text
    assert "- ✅ `pytest -q` (exit 0, 2.0s)" in text  # its last run, not the failed first
    assert "- ❌ `ruff check` (timed out, 9.0s)" in text
    assert "Run `20261127-1-a`: 3 iteration(s), 61s, $0.2500." in text and "a.py | 2 +-" in text
    assert title(task, summary) == "cache: Add a cache layer"
    unchecked = body(task, result, {**summary, "verifications": []})
    assert "No `--verify` check was given" in unchecked
