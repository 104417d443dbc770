"""TASKS.yaml: strict checks with one-line errors, defaults, and the run each task gets."""

from __future__ import annotations

from pathlib import Path

import pytest

from ptysup.batch import concurrency, taskrun
from ptysup.batch.schema import Batch, BatchError


def _load(tmp_path: Path, text: str) -> Batch:
    path = tmp_path / "TASKS.yaml"
    path.write_text(text)
    return taskrun.load(path)


def test_top_options_are_defaults_that_a_task_overrides(tmp_path: Path) -> None:
    batch = _load(
        tmp_path,
        "jobs: 2\nmax-iter: 7\nverify: pytest -q\ntasks:\n"
        "  - {id: a, task: do a}\n  - {id: b, plan: plans/b.yaml, max_iter: 3}\n",
    )
    assert batch.jobs == 2
    a, b = batch.tasks
    assert (a.id, a.task, a.plan, dict(a.options)) == (
        "a",
        "do a",
        None,
        {"max_iter": 7, "verify": "pytest -q"},
    )
    assert b.plan == tmp_path / "plans" / "b.yaml"  # next to TASKS.yaml
    assert b.options["max_iter"] == 3 and batch.find(index=1) is b and batch.find(task_id="a") is a


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("tasks: []\n", "`tasks` must be a non-empty list"),
        ("- a\n", "expected a mapping"),
        ("tasks:\n  - {id: a, task: x, colour: red}\n", "task 'a': unknown key 'colour'"),
        ("colour: red\ntasks:\n  - {id: a, task: x}\n", "unknown key 'colour'"),
        # A near miss is named, as a plan's or a config file's is.
        ("taks:\n  - {id: a, task: x}\n", "unknown key 'taks' (did you mean 'tasks'?)"),
        ("tasks:\n  - {id: a, taks: x}\n", "task 'a': unknown key 'taks' (did you mean 'task'?)"),
        (
            "tasks:\n  - {id: a, task: x, max_itr: 3}\n",
            "unknown key 'max_itr' (did you mean 'max-iter'?)",
        ),
        ("max-itr: 3\ntasks:\n  - {id: a, task: x}\n", "(did you mean 'max-iter'?)"),
        ("tasks:\n  - {id: a, task: x}\n  - {id: a, task: y}\n", "duplicate task id 'a'"),
        ("tasks:\n  - {id: A, task: x}\n  - {id: a, task: y}\n", "duplicate task id 'a'"),
        ("tasks:\n  - {id: a, task: x, plan: p.yaml}\n", "has both `task` and `plan`"),
        ("tasks:\n  - {id: a}\n", "needs `task` or `plan`"),
        ("tasks:\n  - {id: a, task: '  '}\n", "task must be non-empty text"),
        ("tasks:\n  - {id: ../x, task: t}\n", "id '../x' must be 1-64 letters"),
        ("tasks:\n  - {id: a.lock, task: t}\n", "must be 1-64 letters"),
        ("tasks:\n  - {id: -rf, task: t}\n", "must be 1-64 letters"),
        ("tasks:\n  - {id: 7, task: t}\n", "task 1: id 7 must be"),
        ("tasks:\n  - {id: a, task: t}\n  - {task: t}\n", "task 2: has no `id`"),
        ("tasks:\n  - {id: a, task: t, max-iter: lots}\n", "task 'a': max-iter:"),
        ("tasks:\n  - {id: a, task: t, log-file: x.jsonl}\n", "cannot be set in a batch"),
        ("jobs: 0\ntasks:\n  - {id: a, task: t}\n", "jobs: must be a whole number"),
        ("tasks: [\n", "not valid YAML"),
    ],
)
def test_a_bad_tasks_file_is_one_line_naming_the_problem(
    tmp_path: Path, text: str, words: str
) -> None:
    with pytest.raises(BatchError) as err:
        _load(tmp_path, text)
    message = str(err.value)
    assert words in message and "\n" not in message and "TASKS.yaml" in message


def test_find_outside_the_tasks_says_what_there_is(tmp_path: Path) -> None:
    batch = _load(tmp_path, "tasks:\n  - {id: a, task: t}\n")
    with pytest.raises(BatchError, match=r"no task at index 1 \(there are 1: 0 to 0\)"):
        batch.find(index=1)
    with pytest.raises(BatchError, match="no task with id 'zz'"):
        batch.find(task_id="zz")
    assert batch.find(task_id="A").id == "a"  # ids are compared without case


def test_a_task_becomes_the_run_its_options_describe(tmp_path: Path) -> None:
    batch = _load(
        tmp_path,
        "max-time: 5m\nwait: false\nverify: ['true', 'test -f x']\ntasks:\n"
        "  - {id: a, task: '-starts with a dash', max-iter: 4}\n",
    )
    (task,) = batch.tasks
    config = taskrun.config_for(task, ["--max-iter", "9"], {})
    assert not isinstance(config, int)
    assert config.task == "-starts with a dash"
    assert (config.max_time, config.wait, config.max_iter) == (300.0, False, 9)  # CLI wins
    assert config.verify == (("true",), ("test", "-f", "x"))


@pytest.mark.parametrize(
    ("cpus", "available", "asked", "tasks", "expected"),
    [
        (8, 64 * 1024**3, None, 20, 8),  # CPUs bound
        (8, 900 * concurrency.MB, None, 20, 3),  # memory bound: 900 MB / 300 MB
        (8, 100 * concurrency.MB, None, 20, 1),  # never less than one
        (2, None, None, 20, 2),  # memory unknown
        (2, 64 * 1024**3, 5, 20, 5),  # what is asked is the limit
        (8, 64 * 1024**3, None, 3, 3),  # never more than there are tasks
    ],
)
def test_default_concurrency_from_the_machine(
    cpus: int, available: int | None, asked: int | None, tasks: int, expected: int
) -> None:
    got = concurrency.jobs(asked, tasks, cpus=lambda: cpus, available=lambda: available)
    assert got == expected


def test_available_memory_reads_meminfo(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 100 kB\nMemAvailable:   2048 kB\n")
    assert concurrency.available_memory(str(meminfo)) == 2048 * 1024
    assert concurrency.available_memory(str(tmp_path / "none")) is None


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("jobs: 2\ntasks:\n  - {id: a, task: x, colour: red}\n", "TASKS.yaml:3: task 'a': unknown"),
        ("max-iter: 2\nquestions: everyone\ntasks: [{id: a, task: x}]\n", "TASKS.yaml:2: quest"),
        ("tasks:\n  - id: a\n    task: x\n  - id: a\n    task: y\n", "TASKS.yaml:4: duplicate"),
        ("tasks:\n  - id: a\n    task: x\n    max-cost: 0\n", "TASKS.yaml:4: task 'a': max-cost"),
        ("tasks:\n  - id: ../x\n    task: t\n", "TASKS.yaml:2: task 1: id '../x'"),
        ("tasks:\n  - {id: a, task: x}\njobs: 0\n", "TASKS.yaml:3: jobs:"),
    ],
)
def test_a_bad_tasks_file_names_the_line(tmp_path: Path, text: str, where: str) -> None:
    with pytest.raises(BatchError) as err:
        _load(tmp_path, text)
    assert where in str(err.value)
