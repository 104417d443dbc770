"""CLI conventions: -h, -V, subcommands that never start a run, grouped help, completion,
errors that say where a bad value came from, non-finite numbers refused."""

from __future__ import annotations

import gc
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from ptysup import __version__
from ptysup.cli import commandline as cli
from ptysup.cli.commandline import main, parse_args
from ptysup.cli.options import SUBCOMMANDS
from ptysup.config import RunConfig
from ptysup.exitcodes import ExitCode
from tests.helpers import ptysup_argv


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _no_run_started() -> None:
    assert not Path(".ptysup").exists()


@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_help_is_grouped_with_examples(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([flag], {}) == 0
    out = capsys.readouterr().out
    headings = [line for line in out.splitlines() if line and not line.startswith(" ")]
    for group in ("Task:", "Budgets:", "Agent:", "Output:", "General:"):
        assert group in headings
    assert "ptysup -- replay" in out and "Exit codes:" in out
    assert "--no-version" not in out and "PTYSUP_VERSION" not in out
    _no_run_started()


def test_help_names_every_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"], {}) == 0
    said = " ".join(capsys.readouterr().out.split("Exit codes:", 1)[1].split())
    assert [code.value for code in ExitCode if f"{code.value} " not in said] == []


def test_max_costs_help_states_the_range_it_refuses_outside_of(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--help"], {}) == 0
    option = " ".join(capsys.readouterr().out.split()).split("--max-cost", 1)[1]
    assert "(exit 3). [env var: PTYSUP_MAX_COST; x>0]" in option.split("--", 1)[0]
    assert parse_args(["t", "--max-cost", "0"], {}) == 2
    assert isinstance(parse_args(["t", "--max-cost", "0.01"], {}), RunConfig)


@pytest.mark.parametrize("args", [["-V"], ["--version"], ["version"], ["t", "-V"]])
def test_version(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args, {}) == 0
    assert capsys.readouterr().out == f"ptysup {__version__}\n"
    _no_run_started()


def test_help_subcommand_shows_help_and_a_subcommands_help(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["help"], {}) == 0
    assert "Usage: ptysup [OPTIONS] [TASK]" in capsys.readouterr().out
    assert main(["help", "replay"], {}) == 0
    assert "usage: ptysup replay" in capsys.readouterr().out
    assert main(["help", "--help"], {}) == 0
    assert "Usage: ptysup [OPTIONS] [TASK]" in capsys.readouterr().out
    assert main(["help", "nosuch"], {}) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("ptysup: no subcommand 'nosuch'; subcommands:")
    _no_run_started()


def test_replay_help_anywhere_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "last", "--help"], {}) == 0
    assert "usage: ptysup replay" in capsys.readouterr().out


@pytest.mark.parametrize("args", [["--debug", "replay"], ["--max-iter", "3", "doctor"]])
def test_a_subcommand_word_as_the_task_is_refused(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args, {}) == 2
    err = capsys.readouterr().err
    assert "is a subcommand" in err and "ptysup -- " in err
    _no_run_started()


def test_a_task_named_like_a_subcommand_runs_after_double_dash() -> None:
    config = parse_args(["--max-iter", "3", "--", "replay"], {})
    assert isinstance(config, RunConfig) and config.task == "replay"


def test_a_near_miss_of_a_subcommand_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctr"], {}) == 2
    assert "did you mean `ptysup doctor`" in capsys.readouterr().err
    _no_run_started()


# Every subcommand and subcommand's subcommand, as a person types them.
EVERY_SUBCOMMAND = [
    *([name] for name in SUBCOMMANDS),
    ["runs", "prune"],
    ["batch", "plan"],
    ["batch", "run"],
]


@pytest.mark.parametrize("words", EVERY_SUBCOMMAND, ids=" ".join)
def test_an_unknown_option_of_any_subcommand_is_one_line_and_exit_2(
    words: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*words, "--bogus"], {}) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("ptysup: "), err
    assert "'--bogus'" in err or "--bogus" in err
    _no_run_started()


@pytest.mark.parametrize(
    ("words", "meant"),
    [
        (["runs", "--jsn"], "--json"),
        (["serve", "--prot", "1"], "--port"),
        (["runs", "prune", "--dry-rn"], "--dry-run"),
        (["attach", "--wr"], "--rw"),
    ],
)
def test_a_mistyped_option_of_a_subcommand_gets_a_did_you_mean(
    words: list[str], meant: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(words, {}) == 2
    assert f"did you mean {meant}?" in capsys.readouterr().err


def test_an_options_value_and_words_after_double_dash_are_not_options(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["runs", "-n", "3", "--count=2", "-n4"], {}) == 0
    assert main(["replay", "--", "--not-an-option"], {}) == 2  # a run named so: not found
    assert "unknown option" not in capsys.readouterr().err


def test_a_batchs_unknown_option_is_the_command_lines_not_a_tasks_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each task's options were checked with the command line's: `--parallel 2` blamed
    # TASKS.yaml:5, the first task's line.
    monkeypatch.chdir(tmp_path)
    Path("TASKS.yaml").write_text("tasks:\n  - id: a\n    task: do a\n")
    assert main(["batch", "TASKS.yaml", "--parallel", "2"], {}) == 2
    err = capsys.readouterr().err
    assert (
        err == "ptysup: batch: unknown option '--parallel' (ptysup help batch lists its options)\n"
    )
    assert main(["batch", "TASKS.yaml", "--max-itr", "2"], {}) == 2
    assert "batch: unknown option '--max-itr'; did you mean --max-iter?" in capsys.readouterr().err


def test_every_subcommand_resolves_to_a_function() -> None:
    import importlib

    for target in SUBCOMMANDS.values():
        module, function = target.split(":")
        assert callable(getattr(importlib.import_module(module), function))


def test_a_stray_version_variable_is_not_a_request() -> None:
    config = parse_args(["t"], {"PTYSUP_VERSION": "1"})
    assert isinstance(config, RunConfig)


@pytest.mark.parametrize(
    ("args", "env", "file", "words"),
    [
        (["t"], {"PTYSUP_MAX_ITER": "lots"}, None, "(from PTYSUP_MAX_ITER)"),
        (["t"], {}, "max-iter: lots\n", ".ptysup.yaml:1: max-iter: 'lots' is not"),
        (["t"], {}, "verify: 123\n", ".ptysup.yaml:1: verify: expected text or a list of text"),
        (["t", "--max-cost", "nan"], {}, None, "--max-cost: must be a finite number, not nan"),
        (["t", "--max-time", "inf"], {}, None, "--max-time"),
        (["t"], {"PTYSUP_IDLE": "inf"}, None, "finite number, not inf (from PTYSUP_IDLE)"),
        (["t"], {"PTYSUP_MAX_TIME": "inf"}, None, "not 'inf' (from PTYSUP_MAX_TIME)"),
        (["t"], {"PTYSUP_ESCAPE_KEY": "x"}, None, "control key (e.g. ctrl-], ^g, or none) (from"),
        (["t"], {}, "log-format: xml\n", ".ptysup.yaml:1: log-format: must be text or json"),
        (["t"], {}, "questions: x\n", ".ptysup.yaml:1: questions: must be supervisor or person"),
        (["t"], {}, "prompt_template: x\n", ".ptysup.yaml:1: prompt_template: the prompt"),
        (
            ["t", "--max-cost", "0"],
            {},
            None,
            "'--max-cost': 0 is too small: it must be more than 0",
        ),
        (["t"], {"PTYSUP_MAX_COST": "0"}, None, "more than 0 (from PTYSUP_MAX_COST)"),
        (["t", "--max-iter", "abc"], {}, None, "'--max-iter': 'abc' is not a whole number"),
        (["t", "--max-iter", "0"], {}, None, "'--max-iter': 0 is too small: the least is 1"),
        (["t", "--max-cost", "x"], {}, None, "'--max-cost': 'x' is not a number"),
    ],
)
def test_bad_values_say_where_they_came_from(
    args: list[str],
    env: dict[str, str],
    file: str | None,
    words: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if file is not None:
        Path(".ptysup.yaml").write_text(file)
    assert parse_args(args, env) == 2
    assert words in capsys.readouterr().err


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
def test_a_deleted_working_directory_is_one_line_and_exit_2(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    script = f"cd {gone} && rmdir {gone} && exec {shlex.join(ptysup_argv('a task'))}"
    run = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30)
    assert run.returncode == 2
    assert run.stderr.splitlines() == [
        "ptysup: the current directory no longer exists (deleted or moved): cd to one that does"
    ]


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
def test_completion_script_and_answers(tmp_path: Path) -> None:
    script = subprocess.run(
        ptysup_argv("completion", "bash"), capture_output=True, text=True, timeout=30
    )
    assert script.returncode == 0 and "_PTYSUP_COMPLETE=bash_complete" in script.stdout
    env = {
        **os.environ,
        "_PTYSUP_COMPLETE": "bash_complete",
        "COMP_WORDS": "ptysup --max-i",
        "COMP_CWORD": "1",
    }
    answer = subprocess.run(ptysup_argv(), env=env, capture_output=True, text=True, timeout=30)
    assert "--max-iter" in answer.stdout and "--max-time" not in answer.stdout


def test_the_entry_point_exits_with_mains_code_and_skips_the_last_collections(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The heap is frozen after main returned: the interpreter's exit then skips walking it.
    calls: list[str] = []

    def fake_main() -> int:
        calls.append("main")
        return 3

    monkeypatch.setattr(cli, "main", fake_main)
    monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
    with pytest.raises(SystemExit) as ended:
        cli.entry()
    assert ended.value.code == 3
    assert calls == ["main", "freeze"]


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
@pytest.mark.parametrize(
    "args", [["doctor"], ["help"], ["runs"], ["completion", "bash"], ["version"]], ids=str
)
@pytest.mark.parametrize("unbuffered", ["1", ""], ids=["unbuffered", "buffered"])
def test_a_reader_that_went_away_ends_the_command_quietly(args: list[str], unbuffered: str) -> None:
    # `ptysup replay RUN | head`: the pipe's reader is gone before the output is written.
    # Buffered (CI's default) the write fails only at the last flush, unbuffered at once.
    proc = _to_a_gone_reader(args, PYTHONUNBUFFERED=unbuffered)
    assert (proc.returncode, proc.stderr) == (141, ""), proc.stderr[-2000:]


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
def test_a_run_whose_reader_went_away_keeps_its_outcomes_exit_code() -> None:
    proc = _to_a_gone_reader(["t", "--agent-cmd", "no-such-agent-cmd"])
    assert (proc.returncode, proc.stderr) == (
        4,
        "ptysup: agent command not found: no-such-agent-cmd\n",
    )


def _to_a_gone_reader(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    read, write = os.pipe()
    os.close(read)
    environ = {k: v for k, v in (os.environ | env).items() if v}
    try:
        return subprocess.run(
            ptysup_argv(*args),
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            env=environ,
        )
    finally:
        os.close(write)


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
@pytest.mark.parametrize("closed", [">&-", "<&-", "2>&-"])
def test_a_command_started_with_a_stream_closed_runs_without_a_traceback(closed: str) -> None:
    # `ptysup runs >&-`: Python leaves sys.stdout None; ptysup gives the stream /dev/null.
    argv = ptysup_argv("runs")
    proc = subprocess.run(
        ["sh", "-c", f'exec "$@" {closed}', "sh", *argv],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
