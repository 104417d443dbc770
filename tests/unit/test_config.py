"""Options from the command line, the environment and config files, and their precedence."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ptysup.cli.commandline import parse_args
from ptysup.config import ConfigError, RunConfig, parse_duration


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _parse(args: list[str], env: dict[str, str] | None = None) -> RunConfig:
    parsed = parse_args(args, env or {})
    assert isinstance(parsed, RunConfig), parsed
    return parsed


@pytest.mark.parametrize(
    ("text", "seconds"), [("90m", 5400), ("1h30m", 5400), ("45s", 45), ("2h", 7200), ("120", 120)]
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text, "--max-time") == seconds


@pytest.mark.parametrize("text", ["", "soon", "0", "-5", "5x"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_duration(text, "--max-time")


def test_defaults() -> None:
    config = _parse(["task"])
    assert (config.max_iter, config.agent_cmd, config.supervisor_cmd) == (
        50,
        ("claude",),
        ("claude", "-p"),
    )
    assert config.verify == () and config.wait and config.recording


def test_commands_are_split_like_a_shell() -> None:
    config = _parse(
        [
            "t",
            "--agent-cmd",
            "claude --permission-mode 'accept Edits'",
            "--verify",
            "python -m pytest -q",
            "--verify",
            "ruff check .",
        ]
    )
    assert config.agent_cmd == ("claude", "--permission-mode", "accept Edits")
    assert config.verify == (("python", "-m", "pytest", "-q"), ("ruff", "check", "."))


def test_cli_beats_env_beats_yaml_file(tmp_path: Path) -> None:
    (tmp_path / ".ptysup.yaml").write_text(
        "max-iter: 7\nidle: 9\nturn_timeout: 11\nverify: [make test]\n"
    )
    config = _parse(["t", "--idle", "1"], {"PTYSUP_TURN_TIMEOUT": "22"})
    assert (config.max_iter, config.idle, config.turn_timeout) == (7, 1.0, 22.0)
    assert config.verify == (("make", "test"),)


def test_max_repeats_from_the_flag_the_variable_and_the_file(tmp_path: Path) -> None:
    assert _parse(["t"]).max_repeats == 3
    (tmp_path / ".ptysup.yaml").write_text("max-repeats: 5\n")
    assert _parse(["t"]).max_repeats == 5
    assert _parse(["t"], {"PTYSUP_MAX_REPEATS": "0"}).max_repeats == 0
    assert _parse(["t", "--max-repeats", "2"], {"PTYSUP_MAX_REPEATS": "0"}).max_repeats == 2


def test_protect_and_the_baseline_from_the_flags_the_variables_and_the_file(
    tmp_path: Path,
) -> None:
    config = _parse(["t"])
    assert (config.protect, config.verify_baseline) == ((), True)
    (tmp_path / ".ptysup.yaml").write_text("protect: [golden/, '*.snap']\nverify-baseline: false\n")
    config = _parse(["t"])
    assert (config.protect, config.verify_baseline) == (("golden/", "*.snap"), False)
    env = {"PTYSUP_PROTECT": "none", "PTYSUP_VERIFY_BASELINE": "true"}
    config = _parse(["t"], env)
    assert (config.protect, config.verify_baseline) == (("none",), True)
    config = _parse(["t", "--protect", "a", "--protect", "b", "--no-verify-baseline"], env)
    assert (config.protect, config.verify_baseline) == (("a", "b"), False)


def test_protect_none_with_a_pathspec_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert parse_args(["t", "--protect", "none", "--protect", "golden/"], {}) == 2
    err = capsys.readouterr().err
    assert err == "ptysup: --protect: none turns protection off: it cannot come with a pathspec\n"
    (tmp_path / ".ptysup.yaml").write_text("protect: [none, golden/]\n")
    assert parse_args(["t"], {}) == 2
    assert ".ptysup.yaml:1: protect: none turns protection off" in capsys.readouterr().err
    (tmp_path / ".ptysup.yaml").unlink()
    assert parse_args(["t", "--protect", " "], {}) == 2
    assert "an empty pathspec protects nothing" in capsys.readouterr().err


def test_pyproject_table(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.ptysup]\nmax-iter = 3\nmax-time = "1h"\n'
        'prompt_template = "T={task}\\n{agent_output}"\n'
    )
    config = _parse(["t"])
    assert (config.max_iter, config.max_time) == (3, 3600.0)
    assert config.prompt_template == "T={task}\n{agent_output}"


def test_env_list_options_take_one_item_per_line() -> None:
    config = _parse(["t"], {"PTYSUP_VERIFY": "python -m pytest\nruff check ."})
    assert config.verify == (("python", "-m", "pytest"), ("ruff", "check", "."))


def test_config_option_names_a_file(tmp_path: Path) -> None:
    (tmp_path / "other.yaml").write_text("max_iter: 4\n")
    assert _parse(["t", "--config", str(tmp_path / "other.yaml")]).max_iter == 4


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("max_iter: [unclosed\n", ".ptysup.yaml:2: not valid YAML"),
        ("colour: blue\n", ".ptysup.yaml:1: unknown option 'colour'"),
        # A config file naming another is not followed: it would be ignored without a word.
        ("max-iter: 3\nconfig: other.yaml\n", ".ptysup.yaml:2: `config` cannot be set in a"),
        ("version: true\n", ".ptysup.yaml:1: `version` cannot be set in a config file"),
        ("- a\n- b\n", ".ptysup.yaml:1: expected a table"),
        ("prompt_template: '{nope} {task} {agent_output}'\n", "unknown placeholder {nope}"),
        ("prompt_template: 'no agent output {task}'\n", "needs {task} and {agent_output}"),
    ],
)
def test_bad_config_files_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    (tmp_path / ".ptysup.yaml").write_text(content)
    assert parse_args(["t"], {}) == 2
    err = capsys.readouterr().err
    assert err.startswith("ptysup: ") and message in err and err.count("\n") == 1


def test_unreadable_config_file_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert parse_args(["t", "--config", str(tmp_path / "missing.yaml")], {}) == 2
    assert "cannot read" in capsys.readouterr().err


def test_bad_values_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert parse_args(["t", "--max-time", "soon"], {}) == 2
    assert parse_args(["t", "--log-format", "xml"], {}) == 2
    assert parse_args(["t", "--agent-cmd", "claude 'unclosed"], {}) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 3 and all(line.startswith("ptysup: ") for line in lines)


def test_question_and_notification_options_from_flags_env_and_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _parse(["t"])
    assert (config.questions, config.notify, config.notify_url) == ("supervisor", (), ())
    assert config.notify_on == ("escalation", "person", "person_action", "run_end")
    config = _parse(
        [
            "t",
            "--questions",
            "person",
            "--notify",
            "notify-send 'ptysup run'",
            "--notify",
            "logger",
            "--notify-on",
            "escalation,decision",
            "--notify-on",
            "run_end",
        ]
    )
    assert config.questions == "person"
    assert config.notify == (("notify-send", "ptysup run"), ("logger",))
    assert config.notify_on == ("escalation", "decision", "run_end")
    config = _parse(
        ["t"], {"PTYSUP_NOTIFY": "cmd one\ncmd two", "PTYSUP_NOTIFY_ON": "run_end,warning"}
    )
    assert config.notify == (("cmd", "one"), ("cmd", "two"))
    assert config.notify_on == ("run_end", "warning")
    (tmp_path / ".ptysup.yaml").write_text("notify: my-notifier --loud\nnotify-on: [person]\n")
    config = _parse(["t"])
    assert (config.notify, config.notify_on) == ((("my-notifier", "--loud"),), ("person",))
    for bad in (["--questions", "robot"], ["--notify-on", "everything"], ["--notify", ""]):
        assert parse_args(["t", *bad], {}) == 2
    err = capsys.readouterr().err
    assert "ptysup: --questions: must be supervisor or person" in err
    assert "ptysup: --notify-on: unknown event 'everything'" in err
    assert "ptysup: --notify: the command is empty" in err


def test_the_config_file_is_found_up_to_the_repository_root(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".ptysup.yaml").write_text("max-iter: 7\n")
    sub = tmp_path / "src" / "pkg"
    sub.mkdir(parents=True)
    os.chdir(sub)
    assert _parse(["t"]).max_iter == 7


def test_outside_a_repository_only_the_working_directory_counts(tmp_path: Path) -> None:
    (tmp_path / ".ptysup.yaml").write_text("max-iter: 7\n")
    sub = tmp_path / "sub"
    sub.mkdir()
    os.chdir(sub)
    assert _parse(["t"]).max_iter == 50
