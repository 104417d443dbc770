"""The run options a plan may set at its top level, checked as the command line would."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ptysup.config import ConfigError, parse_duration, split_command
from ptysup.plan.schema import OptionCheck, Plan, PlanError, load_plan

# Options that make no sense inside a plan (the plan is the task; it cannot name itself).
_NOT_IN_PLAN = ("task", "plan", "config", "version")


def load(path: Path) -> Plan:
    """The plan at `path`; ConfigError (`FILE:LINE: problem`) if it cannot be used."""
    try:
        return load_plan(path, checks())
    except PlanError as exc:
        raise ConfigError(str(exc)) from None


def checks() -> dict[str, OptionCheck]:
    """Each allowed option's parameter name → a check of its value."""
    from ptysup.cli import option_params

    out: dict[str, OptionCheck] = {}
    for param in option_params():
        if param.name and param.name not in _NOT_IN_PLAN:
            out[param.name] = _check(param)
    out["prompt_template"] = _template
    return out


def _check(param: click.Parameter) -> OptionCheck:
    special: dict[str, Callable[[str], Any]] = {
        "max_time": lambda v: parse_duration(v, "max-time"),
        "agent_cmd": lambda v: split_command(v, "agent-cmd"),
        "supervisor_cmd": lambda v: split_command(v, "supervisor-cmd"),
        "verify": lambda v: split_command(v, "verify"),
    }

    def one(value: Any) -> Any:
        try:
            converted = param.type.convert(value, param, None)
            if param.name in special:
                special[param.name](str(converted))
        except click.BadParameter as exc:
            raise ValueError(exc.message) from None
        except ConfigError as exc:  # its message starts with the option, named again by the caller
            raise ValueError(str(exc).split(": ", 1)[-1]) from None
        return value

    def check(value: Any) -> Any:
        if getattr(param, "multiple", False) and isinstance(value, list):
            for item in value:
                one(item)
            return value
        if isinstance(value, (list, dict)):
            raise ValueError(f"expected a single value, not a {type(value).__name__}")
        return one(value)

    return check


def _template(value: Any) -> Any:
    """prompt_template: text with the placeholders a run needs (as the run checks it)."""
    from ptysup.supervisor.prompt import validate_template

    if not isinstance(value, str):
        raise ValueError(f"must be text, not {type(value).__name__}")
    validate_template(value)
    return value
