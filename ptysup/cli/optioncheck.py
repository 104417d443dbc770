"""Each run option's value checked one way, wherever it comes from: the command line, a
PTYSUP_* variable, .ptysup.yaml / pyproject.toml, a plan or TASKS.yaml. So `ptysup check`
and a run refuse the same values.

A check takes a value and raises ValueError with the problem (one line, without the
option's name, which the caller adds with where the value came from).
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable, Mapping
from typing import Any

import click

from ptysup.config import QUESTIONS, command_argv, duration_seconds

OptionCheck = Callable[[Any], Any]

LOG_FORMATS = ("text", "json")


def _one_of(choices: tuple[str, ...]) -> OptionCheck:
    def check(value: Any) -> Any:
        if value not in choices:
            raise ValueError(f"must be {' or '.join(choices)}, not {value!r}")
        return value

    return check


def _agent(value: Any) -> Any:
    # Here, not at import: the registry loads every agent's profile.
    from ptysup.agents.registry import NAMES

    return _one_of(NAMES)(value)


def _agent_cmd(value: Any) -> Any:
    from ptysup.agents.registry import find

    argv = command_argv(str(value))
    problem = find(argv).refuses(argv)
    if problem is not None:
        raise ValueError(problem)
    return argv


def _more_than_zero(value: Any) -> Any:
    if value is not None and value <= 0:  # a zero budget would end the run before it starts
        raise ValueError("must be more than zero")
    return value


def _repeats(value: Any) -> Any:
    if value == 1:  # one round is no repeat: every run would end at its first turn
        raise ValueError("must be 0 (off) or at least 2, not 1")
    return value


def _escape_key(value: Any) -> Any:
    from ptysup.terminal.keys import parse_escape_key

    return parse_escape_key(str(value))


def _notify_on(value: Any) -> Any:
    from ptysup.notify import parse_kinds

    return parse_kinds([str(value)])


def _redact(value: Any) -> Any:
    from ptysup.redact import Redactor

    return Redactor.with_extra([str(value)])


def _notify_url(value: Any) -> Any:
    from ptysup.notify import UrlChannel

    if not UrlChannel.available():
        raise ValueError("needs apprise: pip install 'ptysup[notify]'")
    try:
        return UrlChannel([str(value)])
    except ValueError as exc:  # its message names the option, as a run's warning does
        raise ValueError(str(exc).removeprefix("--notify-url: ")) from None


def _prompt_template(value: Any) -> Any:
    from ptysup.supervisor.prompt import validate_template

    if not isinstance(value, str):
        raise ValueError(f"must be text, not {type(value).__name__}")
    validate_template(value)
    return value


def _pathspec(value: Any) -> Any:
    if not str(value).strip():
        raise ValueError("an empty pathspec protects nothing: give a path, a glob, or none")
    return value


# The checks beyond an option's type (a repeatable option's are per item).
VALUE_CHECKS: Mapping[str, OptionCheck] = {
    "max_time": lambda v: duration_seconds(str(v)),
    "escalate_wait": lambda v: duration_seconds(str(v)),
    "max_cost": _more_than_zero,
    "max_repeats": _repeats,
    "agent_cmd": _agent_cmd,
    "agent": _agent,
    "supervisor_cmd": lambda v: command_argv(str(v)),
    "second_opinion": lambda v: command_argv(str(v)),
    "verify": lambda v: command_argv(str(v)),
    "protect": _pathspec,
    "notify": lambda v: command_argv(str(v)),
    "log_format": _one_of(LOG_FORMATS),
    "questions": _one_of(QUESTIONS),
    "escape_key": _escape_key,
    "notify_on": _notify_on,
    "redact": _redact,
    "notify_url": _notify_url,
    "prompt_template": _prompt_template,
}


def _protect(values: Any) -> Any:
    from ptysup.run.protect import ProtectSpec

    return ProtectSpec.parse([str(v) for v in values])


# The checks of a repeatable option's items together (`none` stands alone).
LIST_CHECKS: Mapping[str, OptionCheck] = {"protect": _protect}


def check_given(name: str, value: Any) -> None:
    """The checks of an option whose value the command line already converted to its type
    (a list for a repeatable one); ValueError with the problem."""
    if isinstance(value, float) and not math.isfinite(value):  # inf would mean no limit
        raise ValueError(f"must be a finite number, not {value}")
    check = VALUE_CHECKS.get(name)
    if check is None or value is None:
        return
    items = value if isinstance(value, (list, tuple)) else [value]
    for item in items:
        check(item)
    if name in LIST_CHECKS:
        LIST_CHECKS[name](items)


def file_check(param: click.Parameter) -> OptionCheck:
    """The check of a file's value for `param` (YAML or TOML types, not the command line's
    text): the type, converted as the command line converts it, then check_given."""

    def one(value: Any) -> Any:
        problem = _type_problem(param, value)
        if problem is not None:
            raise ValueError(problem)
        try:
            converted = param.type.convert(value, param, None)
        except click.BadParameter as exc:
            raise ValueError(exc.message) from None
        check_given(param.name or "", converted)
        return value

    def check(value: Any) -> Any:
        if getattr(param, "multiple", False) and isinstance(value, list):
            for item in value:
                one(item)
            if param.name in LIST_CHECKS:
                LIST_CHECKS[param.name](value)
            return value
        return one(value)

    return check


def _type_problem(param: click.Parameter, value: Any) -> str | None:
    """Why a file's value cannot be `param`'s, whatever the command line would make of
    its text: `max-iter: true` is no 1, `max-iter: 1.5` no 1, `wait: 0` no flag."""
    kind = param.type
    flag = isinstance(kind, click.types.BoolParamType)
    want = "true or false" if flag else _expected(param)
    if (
        value is None
        or not isinstance(value, (str, int, float))  # a list, a table, a TOML date or time
        or isinstance(value, bool) != flag
        or (isinstance(kind, click.types.IntParamType) and isinstance(value, float))
        or (getattr(param, "multiple", False) and not isinstance(value, str))
    ):
        # true, or a TOML date or time, was meant as text more often than not
        looks_like_text = isinstance(value, (bool, datetime.date, datetime.time))
        text = isinstance(kind, click.types.StringParamType) and looks_like_text
        return f"expected {want}, not {_shown(value)}" + (
            " (quote it for the text)" if text else ""
        )
    return None


def _expected(param: click.Parameter) -> str:
    kind = param.type
    if isinstance(kind, click.types.IntParamType):
        return "a whole number"
    if isinstance(kind, click.types.FloatParamType):
        return "a number"
    return "text" if not getattr(param, "multiple", False) else "text or a list of text"


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "nothing (null)"
    return repr(value) if isinstance(value, (str, int, float)) else f"a {type(value).__name__}"
