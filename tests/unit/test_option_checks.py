"""One check per option: `ptysup check`, a config file, a PTYSUP_* variable and the command
line refuse the same values, each file's with `FILE:LINE`; YAML types are not coerced."""

from __future__ import annotations

import io
import os
import re
import subprocess
from pathlib import Path

import click
import pytest
import yaml

from ptysup.cli import check
from ptysup.cli.commandline import OTHER_VARIABLES, parse_args
from ptysup.cli.options import _variable, option_params
from ptysup.config import RunConfig
from tests.helpers import ptysup_argv

# (option, a value the run refuses, words of the problem)
REFUSED = [
    ("questions", "everyone", "must be supervisor or person"),
    ("max-cost", "0", "0 is too small: it must be more than 0"),
    ("log-format", "fancy", "must be text or json"),
    ("escape-key", "x", "is not a control key"),
    ("notify-on", "everything", "unknown event 'everything'"),
    ("redact", "'('", "invalid redaction regex"),
    ("max-time", "soon", "is not a duration"),
    ("agent-cmd", '"\'"', "No closing quotation"),
    ("notify", '"a \'b"', "No closing quotation"),
    ("idle", ".inf", "must be a finite number"),
    ("max-repeats", "1", "must be 0 (off) or at least 2, not 1"),
    ("max-repeats", "-1", "-1 is too small: the least is 0"),
    ("wind-down", "1.5", "must be more than 0 and less than 1 (or off), not '1.5'"),
    ("wind-down", "soon", "must be a fraction such as 0.85 (or 85%), or off, not 'soon'"),
]


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # where a run looks for .ptysup.yaml


def _plan(tmp_path: Path, line: str) -> Path:
    path = tmp_path / "plan.yaml"
    path.write_text(f"goal: g\n{line}\nsteps: [{{do: x}}]\n")
    return path


@pytest.mark.parametrize(("option", "value", "problem"), REFUSED)
def test_check_refuses_what_the_run_refuses_with_file_and_line(
    tmp_path: Path, option: str, value: str, problem: str
) -> None:
    path = _plan(tmp_path, f"{option}: {value}")
    out, err = io.StringIO(), io.StringIO()
    assert check.main([str(path)], out, err) == 2
    assert err.getvalue().startswith(f"ptysup: {path}:2: {option}: ")
    assert problem in err.getvalue() and err.getvalue().count("\n") == 1
    assert out.getvalue() == ""


@pytest.mark.parametrize(("option", "value", "problem"), REFUSED)
def test_a_config_file_refuses_the_same_values_with_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, value: str, problem: str
) -> None:
    config = tmp_path / ".ptysup.yaml"
    config.write_text(f"max-iter: 3\n{option}: {value}\n")
    assert parse_args(["t"], {}) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ptysup: {config}:2: {option}: ") and problem in err


@pytest.mark.parametrize(("option", "value", "problem"), REFUSED)
def test_the_command_line_and_environment_refuse_the_same_values(
    capsys: pytest.CaptureFixture[str], option: str, value: str, problem: str
) -> None:
    text = str(yaml.safe_load(value))  # the YAML value as the text a shell would pass
    if option == "idle":
        text = "inf"
    assert parse_args(["t", f"--{option}", text], {}) == 2
    variable = "PTYSUP_" + option.upper().replace("-", "_")
    assert parse_args(["t"], {variable: text}) == 2
    lines = capsys.readouterr().err.splitlines()
    assert all(problem in line and line.startswith("ptysup: ") for line in lines), lines
    assert lines[1].endswith(f"(from {variable})")


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("max-iter: true", "max-iter: expected a whole number, not true"),
        ("max-cost: true", "max-cost: expected a number, not true"),
        ("idle: yes", "idle: expected a number, not true"),
        ("wait: 0", "wait: expected true or false, not 0"),
        ("max-iter: 1.5", "max-iter: expected a whole number, not 1.5"),
        ("max-cost:", "max-cost: expected a number, not nothing (null)"),
        ("agent-cmd: ~", "agent-cmd: expected text, not nothing (null)"),
        ("verify: [pytest, 3]", "verify: expected text or a list of text, not 3"),
        ("log-format: {a: 1}", "log-format: expected text, not a dict"),
        ("questions: true", "questions: expected text, not true (quote it for the text)"),
    ],
)
def test_a_yaml_type_is_not_coerced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, problem: str
) -> None:
    config = tmp_path / ".ptysup.yaml"
    config.write_text(f"# options\n{line}\n")
    assert parse_args(["t"], {}) == 2
    assert capsys.readouterr().err == f"ptysup: {config}:2: {problem}\n"
    err = io.StringIO()
    assert check.main([str(_plan(tmp_path, line))], io.StringIO(), err) == 2
    assert err.getvalue().startswith(f"ptysup: {tmp_path / 'plan.yaml'}:2: {problem}")


def test_good_values_still_load_from_a_file(tmp_path: Path) -> None:
    (tmp_path / ".ptysup.yaml").write_text(
        "max-iter: 3\nmax-cost: 1.5\nwait: false\nverify: [pytest -q, 'true']\nquestions: person\n"
    )
    config = parse_args(["t"], {})
    assert isinstance(config, RunConfig)
    assert (config.max_iter, config.max_cost, config.wait) == (3, 1.5, False)
    assert config.verify == (("pytest", "-q"), ("true",)) and config.questions == "person"


def _run(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ptysup_argv(*args),
        cwd=cwd,
        env={"PATH": os.environ["PATH"], "HOME": str(cwd), **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
@pytest.mark.parametrize("line", ["max-iter: true", "questions: everyone", "max-cost: 0"])
def test_a_run_with_a_bad_config_file_exits_2_with_one_line(tmp_path: Path, line: str) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".ptysup.yaml").write_text(f"supervisor-cmd: 'true'\n{line}\n")
    result = _run(tmp_path, "--agent-cmd", f"touch {tmp_path / 'started'}", "a task")
    assert result.returncode == 2
    assert result.stderr.startswith(f"ptysup: {tmp_path / '.ptysup.yaml'}:2: ")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert result.stdout == ""
    assert not (tmp_path / "started").exists() and not (tmp_path / ".ptysup").exists()


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
def test_unknown_ptysup_variables_are_named_in_one_warning(tmp_path: Path) -> None:
    env = {
        "PTYSUP_MAXITER": "3",  # a typo of PTYSUP_MAX_ITER
        "PTYSUP_COLOUR": "blue",
        "PTYSUP_MAX_ITER": "2",
        "PTYSUP_VERIFY": "true",
        "PTYSUP_REQUIRE_E2E": "1",  # ptysup's own test and deployment variables
        "PTYSUP_SOAK_DECISIONS": "5",
        "PTYSUP_CLAUDE_BIN": "claude",
        "PTYSUP_LINT_TOOLS": "x",
        "PTYSUP_TOOLS_DIR": "x",
        "PTYSUP_UNDER_TEST": "x",
        "PTYSUP_REPOSITORY": "x",
        "PTYSUP_TEST_RUN": "x",
    }
    result = _run(tmp_path, "--agent-cmd", "no-such-agent-here", "a task", env=env)
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    assert warnings == [
        "ptysup: warning: unknown variables PTYSUP_COLOUR, PTYSUP_MAXITER "
        "(not a run option; see ptysup --help)"
    ]
    assert result.returncode == 4  # a warning, not an error: the run went on to its preflight


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        (".ptysup.yaml", "max-iter: 3\nquestions: everyone\n", 2),
        ("pyproject.toml", "[project]\nname = 'x'\n\n[tool.ptysup]\nquestions = 'everyone'\n", 5),
    ],
)
def test_check_validates_a_config_file_as_a_run_reads_it(
    tmp_path: Path, name: str, text: str, line: int
) -> None:
    path = tmp_path / name
    path.write_text(text)
    out, err = io.StringIO(), io.StringIO()
    assert check.main([str(path)], out, err) == 2
    assert err.getvalue().startswith(f"ptysup: {path}:{line}: questions: must be supervisor")
    path.write_text(text.replace("everyone", "person"))
    assert check.main([str(path)], out, err) == 0
    assert out.getvalue().startswith(f"{path}: ok, ")


def test_check_refuses_none_with_a_pathspec_as_the_run_does(tmp_path: Path) -> None:
    path = _plan(tmp_path, "protect: [none, golden/]")
    out, err = io.StringIO(), io.StringIO()
    assert check.main([str(path)], out, err) == 2
    assert err.getvalue() == (
        f"ptysup: {path}:2: protect: none turns protection off: it cannot come with a pathspec\n"
    )


def test_every_variable_the_test_scripts_set_is_one_ptysup_knows() -> None:
    # scripts/test.sh exported PTYSUP_ALONE, unknown to ptysup: every run under test
    # warned about it, and every test reading a run's stderr whole failed. A name the
    # script unsets after reading it reaches no run.
    root = Path(__file__).resolve().parents[2]
    sources = [*sorted((root / "scripts").glob("*.sh")), root / "tests" / "conftest.py"]
    pattern = re.compile(r"\bPTYSUP_[A-Z0-9_]*[A-Z0-9]")
    texts = [path.read_text() for path in sources]
    named = {m for text in texts for m in pattern.findall(text)}
    unset = {m for text in texts for m in re.findall(r"^\s*unset (PTYSUP_\w+)$", text, re.M)}
    assert "PTYSUP_SOAK_DECISIONS" in named  # the scan reads what the scripts set
    assert "PTYSUP_TEST_WORKERS" in unset
    options = {
        _variable(p.name)
        for p in option_params()
        if p.name and isinstance(p, click.Option) and p.allow_from_autoenv
    }
    assert named - unset - OTHER_VARIABLES - options == set()
