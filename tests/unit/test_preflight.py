"""Checks before anything starts: the task, --task-file, every output path. Each is one
line on stderr, exit 2, and nothing created."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ptysup.cli.commandline import main
from ptysup.run.outputs import problem
from tests.helpers import ptysup_argv

# Commands that exist, so only the check under test can fail.
FAST = ["--agent-cmd", "true", "--supervisor-cmd", "true"]


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _refused(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code = main([*args, *FAST], {"PATH": "/usr/bin:/bin"})
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ptysup: ")
    assert not Path(".ptysup").exists(), "nothing may be created before the checks pass"
    return lines[0]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (
            ["--log-file", "/etc/passwd/x.jsonl"],
            "cannot write --log-file /etc/passwd/x.jsonl: Not a directory",
        ),
        (
            ["--record", "/proc/nope/x.cast"],
            "cannot write --record /proc/nope/x.cast: No such file",
        ),
        (["--summary-json", "."], "cannot write --summary-json .: Is a directory"),
        # It opens for writing, then refuses every write: said before the run, not at its end.
        (
            ["--summary-json", "/proc/version"],
            "cannot write --summary-json /proc/version: Input/output error",
        ),
        (["--log-file", "a.jsonl", "--summary-json", "a.jsonl"], "are the same file: a.jsonl"),
    ],
)
def test_output_paths_are_checked_before_the_run(
    args: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert words in _refused(["t", *args], capsys)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ([" \n\t"], "the task is empty"),
        ([], "missing TASK (or --task-file FILE, or --plan FILE)"),
        (["t", "--task-file", "task.md"], "TASK or --task-file, not both"),
        (["--task-file", "missing.md"], "--task-file missing.md: No such file or directory"),
        (["x" * 70000], "the task is 70000 characters; the limit is 65536"),
    ],
)
def test_bad_tasks_are_usage_errors(
    args: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert words in _refused(args, capsys)


def test_missing_directories_are_fine_and_left_as_they_were(tmp_path: Path) -> None:
    target = tmp_path / "new" / "deeper" / "x.cast"
    assert problem(target) is None
    assert not (tmp_path / "new").exists()  # tried, then removed


def test_an_existing_file_is_checked_without_truncating_it(tmp_path: Path) -> None:
    kept = tmp_path / "log.jsonl"
    kept.write_text("earlier run\n")
    assert problem(kept) is None
    assert kept.read_text() == "earlier run\n"


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
def test_the_task_comes_from_stdin_with_a_dash(tmp_path: Path) -> None:
    # A fake agent that exits at once: the run ends 4, after run_start shows the task.
    log = tmp_path / "events.jsonl"
    proc = subprocess.run(
        ptysup_argv("--task-file", "-", "--log-file", str(log), *FAST),
        input="fix the build\nthen the docs\n",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode == 4, proc.stderr
    start = log.read_text().splitlines()[0]
    assert '"task": "fix the build\\nthen the docs\\n"' in start


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
def test_the_runs_folder_is_ignored_by_git(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    proc = subprocess.run(
        ptysup_argv("t", *FAST), capture_output=True, text=True, cwd=tmp_path, timeout=60
    )
    assert proc.returncode == 4, proc.stderr
    assert list((tmp_path / ".ptysup" / "runs").glob("*/events.jsonl"))
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    )
    assert status.stdout == ""  # `git add -A` would commit none of it


def test_a_command_that_is_there_but_cannot_run_is_named_so(tmp_path: Path) -> None:
    from ptysup.cli.commandline import parse_options, preflight

    parsed = parse_options(["t", "--agent-cmd", "/etc/passwd", "--verify", "no-such-check"], {})
    assert not isinstance(parsed, int)
    config = parsed[0]
    env = {"PATH": "/usr/bin:/bin"}
    assert preflight(config, env) == ("verify command not found: no-such-check", 2)
    config = parse_options(["t", "--agent-cmd", "/etc/passwd"], {})[0]  # type: ignore[index]
    assert preflight(config, env) == ("agent command is not executable: /etc/passwd", 4)


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
def test_a_pathspec_git_refuses_is_a_usage_error_before_the_agent_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    subprocess.run(["git", "init", "-q"], check=True)
    for spec, words in (
        (":(bad)x", "ptysup: --protect: Invalid pathspec magic 'bad' in ':(bad)x'"),
        ("../elsewhere", "ptysup: --protect: ../elsewhere: '../elsewhere' is outside repository"),
    ):
        code = main(["t", "--protect", spec, *FAST], {"PATH": "/usr/bin:/bin"})
        err = capsys.readouterr().err
        assert code == 2 and err.startswith(words), err
    # Outside a git work tree nothing is protected: the run says so, it is no usage error.
    (tmp_path / ".git").rename(tmp_path / "not-git")
    assert main(["t", "--protect", ":(bad)x", *FAST], {"PATH": "/usr/bin:/bin"}) != 2


def test_a_second_opinion_that_cannot_run_stops_the_run_before_the_agent_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.helpers import read_events

    env = {"PATH": "/usr/bin:/bin"}  # none of the five judge CLIs is there
    code = main(["t", "--second-opinion", "auto", "--log-file", "auto.jsonl", *FAST], env)
    assert code == 2
    assert capsys.readouterr().err == (
        "ptysup: --second-opinion auto: no supervisor CLI of another vendor than the agent's "
        "(unknown) and the judge's (unknown) is installed: install one of claude, codex, "
        "gemini, qwen, opencode, or name a command\n"
    )
    events = read_events(tmp_path / "auto.jsonl")
    assert [e["event"] for e in events] == ["run_start", "run_end"]  # no agent started
    assert events[0]["second_opinion"] == ["auto"] and events[-1]["outcome"] == "usage"
    code = main(["t", "--second-opinion", "codex exec -m o3", *FAST], env)
    assert code == 5  # as for the supervisor command
    assert capsys.readouterr().err == "ptysup: second opinion command not found: codex\n"
