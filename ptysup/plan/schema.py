"""A plan file: its schema and the one loader that `ptysup check` and a run both use.

    goal: Add a cache layer          # optional
    max-iter: 40                     # any run option, as in .ptysup.yaml
    steps:
      - id: tests                    # unique; letters, digits, - and _
        do: Write failing tests      # typed into the agent when the step starts
        verify: pytest -q            # optional; a string or a list: the step's gate
        max_iter: 10                 # optional; decisions for this step
        clear: true                  # optional; /clear before the step

Every problem is reported as `FILE:LINE: problem`, so the loader composes YAML nodes
(which keep their marks, read within ptysup.userfile's bounds) and reads them itself
instead of taking `yaml.safe_load`'s dict.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ptysup.userfile import (
    InputError,
    Unreadable,
    compose_yaml,
    construct,
    key_name,
    line_of,
    mapping_items,
    read_text,
)
from ptysup.values import ConfigError, split_command

# Checks one option's value; raises ValueError with the problem (one line).
OptionCheck = Callable[[Any], Any]

_ID = re.compile(r"^[A-Za-z0-9_-]+$")
_TOP_KEYS = ("goal", "steps")
_STEP_KEYS = ("id", "do", "verify", "max_iter", "clear")


class PlanError(InputError):
    """A plan that cannot be used; str() is `FILE:LINE: problem`."""


@dataclass(frozen=True)
class Step:
    """One step of a plan."""

    id: str
    do: str
    verify: tuple[tuple[str, ...], ...] = ()
    max_iter: int | None = None
    clear: bool = False


@dataclass(frozen=True)
class Plan:
    """A loaded plan: its steps, goal and the run options it sets."""

    steps: tuple[Step, ...]
    goal: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)  # parameter name → value
    path: str = ""
    text: str = ""  # the file as read, kept with the run


def load_plan(path: Path, options: Mapping[str, OptionCheck]) -> Plan:
    """Read and check the plan at `path`; PlanError (with its line) for any problem.

    `options` maps each run option allowed at the top level (parameter name, e.g.
    `max_iter`) to a check of its value.
    """
    where = str(path)
    try:
        text = read_text(path)
    except Unreadable as exc:
        raise PlanError(where, 0, f"cannot read the plan: {exc}") from None
    try:
        root = compose_yaml(text, where)
    except InputError as exc:
        raise PlanError(where, exc.line, exc.problem) from None
    return _Reader(where, options).plan(root, text)


class _Reader:
    def __init__(self, where: str, options: Mapping[str, OptionCheck]) -> None:
        self._where = where
        self._options = options

    def fail(self, node: Any, problem: str) -> PlanError:
        return PlanError(self._where, line_of(node) if node is not None else 1, problem)

    def plan(self, root: Any, text: str) -> Plan:
        import yaml

        if root is None or not isinstance(root, yaml.MappingNode):
            raise self.fail(root, "a plan is a mapping with `steps` (and optional `goal`)")
        goal = ""
        steps: tuple[Step, ...] | None = None
        opts: dict[str, Any] = {}
        for key, key_node, value_node in mapping_items(root):  # no key twice: compose_yaml
            if key == "goal":
                goal = self.string(value_node, "goal")
            elif key == "steps":
                steps = self.steps(value_node)
            elif key_name(key) in self._options:
                opts[key_name(key)] = self.option(key, value_node)
            else:
                known = [*_TOP_KEYS, *(k.replace("_", "-") for k in self._options)]
                raise self.fail(key_node, _unknown(key, known, ""))
        if steps is None:
            raise self.fail(root, "the plan has no `steps`")
        return Plan(steps, goal, opts, self._where, text)

    def steps(self, node: Any) -> tuple[Step, ...]:
        import yaml

        if not isinstance(node, yaml.SequenceNode) or not node.value:
            raise self.fail(node, "`steps` must be a non-empty list of steps")
        steps: list[Step] = []
        ids: dict[str, int] = {}
        for i, item in enumerate(node.value, 1):
            step = self.step(item, i)
            if step.id in ids:
                raise self.fail(item, f"duplicate step id {step.id!r} (step {ids[step.id]})")
            ids[step.id] = i
            steps.append(step)
        return tuple(steps)

    def step(self, node: Any, index: int) -> Step:
        import yaml

        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, f"step {index} must be a mapping with `do`")
        values: dict[str, Any] = {}
        nodes: dict[str, Any] = {}
        for raw, key_node, value_node in mapping_items(node):
            key = key_name(raw)  # `max-iter` as the top level takes it
            if key not in _STEP_KEYS:
                raise self.fail(key_node, _unknown(raw, _STEP_KEYS, f" in step {index}"))
            nodes[key] = value_node
            values[key] = construct(value_node)
        if "do" not in values:
            raise self.fail(node, f"step {index} has no `do`")
        do = self.string(nodes["do"], "do")
        if not do.strip():
            raise self.fail(nodes["do"], f"step {index}: `do` is empty")
        step_id = str(index)
        if "id" in values:
            raw = values["id"]
            if isinstance(raw, bool) or not isinstance(raw, (str, int)) or not _ID.match(str(raw)):
                raise self.fail(
                    nodes["id"], f"bad step id {raw!r}: use letters, digits, - and _ only"
                )
            step_id = str(raw)
        max_iter = values.get("max_iter")
        if max_iter is not None and (
            isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1
        ):
            raise self.fail(
                nodes["max_iter"], f"max_iter must be a positive integer, not {max_iter!r}"
            )
        clear = values.get("clear", False)
        if not isinstance(clear, bool):
            raise self.fail(nodes["clear"], f"clear must be true or false, not {clear!r}")
        verify = self.commands(nodes["verify"], values["verify"]) if "verify" in values else ()
        return Step(step_id, do, verify, max_iter, clear)

    def commands(self, node: Any, value: Any) -> tuple[tuple[str, ...], ...]:
        items = value if isinstance(value, list) else [value]
        if not items or not all(isinstance(v, str) for v in items):
            raise self.fail(node, "verify must be a command or a list of commands")
        try:
            return tuple(split_command(v, "verify") for v in items)
        except ConfigError as exc:
            raise self.fail(node, str(exc)) from None

    def string(self, node: Any, name: str) -> str:
        value = construct(node)
        if not isinstance(value, str):
            raise self.fail(node, f"{name} must be text, not {type(value).__name__}")
        return value

    def option(self, key: str, node: Any) -> Any:
        value = construct(node)
        try:
            return self._options[key_name(key)](value)
        except ValueError as exc:
            raise self.fail(node, f"{key}: {' '.join(str(exc).split())}") from None


def _unknown(key: str, known: Any, where: str) -> str:
    close = difflib.get_close_matches(key, list(known), n=1)
    hint = f" (did you mean `{close[0]}`?)" if close else ""
    return f"unknown key `{key}`{where}{hint}"
