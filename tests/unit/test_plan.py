"""The plan loader: every problem is one `FILE:LINE: problem`; the same loader runs plans."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from ptysup.cli import check
from ptysup.cli.commandline import parse_args
from ptysup.cli.planoptions import load
from ptysup.config import ConfigError, RunConfig
from ptysup.plan.schema import Step

GOOD = """\
goal: Add a cache layer
max-iter: 30
verify: [python -m pytest -q]
steps:
  - id: tests
    do: Write failing tests
    verify: pytest -q tests/test_cache.py
    max_iter: 10
  - id: impl_2
    do: Make them pass
    verify: [pytest -q, ruff check .]
    clear: true
  - do: Update the docs
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "plan.yaml"
    path.write_text(text)
    return path


def test_a_good_plan_loads_with_its_steps_goal_and_options(tmp_path: Path) -> None:
    plan = load(_write(tmp_path, GOOD))
    assert plan.goal == "Add a cache layer"
    assert plan.steps == (
        Step("tests", "Write failing tests", (("pytest", "-q", "tests/test_cache.py"),), 10),
        Step("impl_2", "Make them pass", (("pytest", "-q"), ("ruff", "check", ".")), None, True),
        Step("3", "Update the docs"),
    )
    assert plan.options == {"max_iter": 30, "verify": ["python -m pytest -q"]}


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("goal: x\nstepz: []\n", 2, "unknown key `stepz` (did you mean `steps`?)"),
        ("max-itr: 3\nsteps: [{do: x}]\n", 1, "unknown key `max-itr` (did you mean `max-iter`?)"),
        (
            "steps:\n  - id: a\n    do: x\n    verfiy: true\n",
            4,
            "unknown key `verfiy` in step 1 (did you mean `verify`?)",
        ),
        ("steps:\n  - id: a\n    do: x\n  - id: b\n", 4, "step 2 has no `do`"),
        ("steps:\n  - id: a\n    do: x\n  - id: a\n    do: y\n", 4, "duplicate step id 'a'"),
        ("steps:\n  - id: my step\n    do: x\n", 2, "bad step id 'my step'"),
        ("steps:\n  - do: x\n    max_iter: ten\n", 3, "max_iter must be a positive integer"),
        ("steps:\n  - do: x\n    clear: maybe\n", 3, "clear must be true or false"),
        ("steps:\n  - do: [x]\n", 2, "do must be text, not list"),
        ("steps:\n  - do: x\n    verify: {a: 1}\n", 3, "verify must be a command"),
        ("max-iter: abc\nsteps: [{do: x}]\n", 1, "max-iter: 'abc' is not a whole number"),
        ("max-time: soon\nsteps: [{do: x}]\n", 1, "max-time: 'soon' is not a duration"),
        ("goal: x\n", 1, "the plan has no `steps`"),
        ("steps: []\n", 1, "`steps` must be a non-empty list"),
        ("steps:\n  - do: x\n  bad indent\n", 3, "not valid YAML"),
        (
            "prompt_template: hi\nsteps: [{do: x}]\n",
            1,
            "prompt_template: the prompt template needs {task} and {agent_output}",
        ),
        ("prompt_template: [x]\nsteps: [{do: x}]\n", 1, "prompt_template: must be text"),
    ],
)
def test_each_problem_names_its_line(tmp_path: Path, text: str, line: int, problem: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load(path)
    assert str(caught.value).startswith(f"{path}:{line}: {problem}")
    err = io.StringIO()
    assert check.main([str(path)], io.StringIO(), err) == 2
    assert err.getvalue() == f"ptysup: {caught.value}\n" and err.getvalue().count("\n") == 1


def test_check_says_ok_and_exits_0(tmp_path: Path) -> None:
    out = io.StringIO()
    assert check.main([str(_write(tmp_path, GOOD))], out) == 0
    assert out.getvalue().endswith(": ok, 3 step(s): tests, impl_2, 3\n")
    assert check.main([], io.StringIO(), io.StringIO()) == 2


def test_a_run_takes_the_plan_options_under_the_command_line(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD)
    config = parse_args(["--plan", str(path), "--max-iter", "7"], {})
    assert isinstance(config, RunConfig) and config.plan is not None
    assert (config.max_iter, config.task) == (7, "Add a cache layer")
    assert config.verify == (("python", "-m", "pytest", "-q"),)
    assert parse_args(["--plan", str(path)], {}).max_iter == 30  # type: ignore[union-attr]
    assert parse_args([], {}) == 2  # neither TASK nor --plan
