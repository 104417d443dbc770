"""TASKS.yaml: the tasks of a batch and the run options each one gets, checked strictly.

    jobs: 2                        # optional; also --jobs N
    max-iter: 30                   # any run option here is a default for every task
    tasks:
      - id: cache                  # unique; becomes the branch ptysup/cache
        task: Add a cache layer    # or  plan: plans/cache.yaml
        verify: pytest -q          # any run option, for this task only

Every problem is one line naming the file and line (and the task), raised as BatchError.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ptysup import userfile
from ptysup.userfile import InputError, key_name

# Ids become branch names (ptysup/<id>) and folder names: a charset safe for both, with
# no dots (git refuses `..`, a trailing `.` and `.lock`) and no leading `-`.
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_TOP_KEYS = ("jobs", "tasks")
_TASK_KEYS = ("id", "task", "plan")
# Each task's run keeps its own files in its run directory; one path for all would clash.
_NOT_IN_BATCH = ("task_file", "log_file", "record", "summary_json", "config", "version", "help")


class BatchError(Exception):
    """A TASKS.yaml that cannot be used; the message is one line."""


@dataclass(frozen=True)
class Task:
    """One task: its id, its text or plan, and its resolved run options."""

    id: str
    task: str | None = None
    plan: Path | None = None
    options: Mapping[str, Any] = field(default_factory=dict)  # parameter name → YAML value
    line: int = field(default=0, compare=False)  # where TASKS.yaml gives it (0: unknown)

    def to_json(self) -> dict[str, Any]:
        """The task as `batch plan --format json` prints it."""
        return {
            "id": self.id,
            "task": self.task,
            "plan": str(self.plan) if self.plan is not None else None,
            "options": dict(self.options),
        }


@dataclass(frozen=True)
class Batch:
    """A loaded TASKS.yaml."""

    path: Path
    tasks: tuple[Task, ...]
    jobs: int | None = None

    def find(self, *, index: int | None = None, task_id: str | None = None) -> Task:
        """The task at 0-based `index` or with `task_id`; BatchError if there is none."""
        if index is not None:
            if not 0 <= index < len(self.tasks):
                raise BatchError(
                    f"{self.path}: no task at index {index} (there are {len(self.tasks)}: "
                    f"0 to {len(self.tasks) - 1})"
                )
            return self.tasks[index]
        for task in self.tasks:
            if task_id is not None and task.id.lower() == task_id.lower():  # as ids are compared
                return task
        raise BatchError(f"{self.path}: no task with id {task_id!r}")


def load(path: Path, allowed: Mapping[str, Any]) -> Batch:
    """Read and check TASKS.yaml; `allowed` maps each run option's parameter name to a
    check of its value (raising ValueError), as plans use."""
    try:
        text = userfile.read_text(path)
    except userfile.Unreadable as exc:
        raise BatchError(f"cannot read {path}: {exc}") from None
    try:  # within the bounds of every file a person gives (ptysup.userfile), no key twice
        root = userfile.compose_yaml(text, str(path))
    except InputError as exc:
        raise BatchError(str(exc)) from None
    data = userfile.construct(root) if root is not None else None
    at = _Places(path, userfile.key_lines(root) if root is not None else {})
    if not isinstance(data, Mapping):
        raise BatchError(f"{at()}: expected a mapping with `tasks` (and optional `jobs`)")
    options = {k: v for k, v in data.items() if key_name(k) not in _TOP_KEYS}
    defaults = _options(at, (), "", options, allowed, _TOP_KEYS)
    jobs = data.get("jobs")
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise BatchError(f"{at('jobs')}: jobs: must be a whole number of at least 1, not {jobs!r}")
    raw = data.get("tasks")
    if not isinstance(raw, list) or not raw:
        raise BatchError(f"{at('tasks')}: `tasks` must be a non-empty list of tasks")
    tasks = tuple(_task(at, i, item, defaults, allowed) for i, item in enumerate(raw))
    seen: dict[str, str] = {}
    for i, task in enumerate(tasks):  # case-insensitive: on macOS `Cache` and `cache` are one
        if task.id.lower() in seen:
            raise BatchError(f"{at('tasks', i)}: duplicate task id {task.id!r}")
        seen[task.id.lower()] = task.id
    return Batch(path=path, tasks=tasks, jobs=jobs)


class _Places:
    """`FILE:LINE` of a place in TASKS.yaml (`FILE` where the line is unknown)."""

    def __init__(self, path: Path, lines: Mapping[tuple[str | int, ...], int]) -> None:
        self.path, self._lines = path, lines

    def __call__(self, *place: str | int) -> str:
        return f"{self.path}:{self.line(*place)}"

    def line(self, *place: str | int) -> int:
        """The line of `place`, else of what holds it; 1 for an empty file."""
        return self._lines.get(place) or self._lines.get(place[:-1]) or 1


def _task(
    at: _Places, index: int, item: Any, defaults: Mapping[str, Any], allowed: Mapping[str, Any]
) -> Task:
    here = at("tasks", index)
    where = f"{here}: task {index + 1}"  # counted from 1, as a plan's steps are
    if not isinstance(item, Mapping):
        raise BatchError(f"{where}: expected a mapping with `id` and `task` or `plan`")
    task_id = item.get("id")
    if task_id is None:
        raise BatchError(f"{where}: has no `id` (it names the task's branch and folder)")
    if not isinstance(task_id, str) or not ID_PATTERN.match(task_id):
        raise BatchError(
            f"{at('tasks', index, 'id')}: task {index + 1}: id {task_id!r} must be 1-64 "
            "letters, digits, - or _ (not starting with - or _): it becomes a branch and a "
            "folder name"
        )
    where = f"{here}: task {task_id!r}"
    # The keys first: a mistyped `task:` is named as such, not as a task without one.
    rest = {k: v for k, v in item.items() if key_name(k) not in _TASK_KEYS}
    options = _options(at, ("tasks", index), f"task {task_id!r}: ", rest, allowed, _TASK_KEYS)
    text, plan = item.get("task"), item.get("plan")
    if text is not None and plan is not None:
        raise BatchError(f"{where}: has both `task` and `plan`; give one")
    if text is None and plan is None:
        raise BatchError(f"{where}: needs `task` or `plan`")
    if text is not None and (not isinstance(text, str) or not text.strip()):
        raise BatchError(
            f"{at('tasks', index, 'task')}: task {task_id!r}: task must be non-empty text"
        )
    if plan is not None and (not isinstance(plan, str) or not plan.strip()):
        raise BatchError(
            f"{at('tasks', index, 'plan')}: task {task_id!r}: plan must be a file name"
        )
    options = {**defaults, **options}
    # A plan is found next to TASKS.yaml, wherever the batch is started from.
    plan_path = (at.path.parent / plan) if isinstance(plan, str) else None
    return Task(
        id=task_id, task=text, plan=plan_path, options=options, line=at.line("tasks", index)
    )


def _options(
    at: _Places,
    place: tuple[str | int, ...],
    where: str,
    values: Mapping[Any, Any],
    allowed: Mapping[str, Any],
    own: tuple[str, ...],
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in values.items():
        name = key_name(key)
        here = at(*place, str(key))
        if name in _NOT_IN_BATCH:
            raise BatchError(
                f"{here}: {where}{key!r} cannot be set in a batch (each task's run keeps "
                "its files in its own run directory)"
            )
        check = allowed.get(name)
        if check is None:
            known = [*own, *(option.replace("_", "-") for option in allowed)]
            close = difflib.get_close_matches(str(key).replace("_", "-"), known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise BatchError(f"{here}: {where}unknown key {key!r}{hint}")
        try:
            check(value)
        except ValueError as exc:
            raise BatchError(f"{here}: {where}{key}: {exc}") from None
        out[name] = value
    return out
