"""An event log read back: whole, well-typed events; every other line skipped and counted.

A log is appended to by one writer, but a person may edit it, another program may append
to a shared `--log-file`, and a disk may cut or garble a line. One such line must not
break `runs`, `resume`, `replay` or `serve` for the whole folder: each reader gets the
events it can trust and the number of lines it could not read, to say so once.

An event is trusted when it is a JSON object with a string `event`, and each field that
readers use has the type docs/reference/events.md documents. A line cut short at the end
of the file (the writer is still writing it, or was killed mid-line) is not counted: it
is not damage, it is a line not yet there.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Check = Callable[[Any], bool]


def is_number(value: Any) -> bool:
    """A finite JSON number (true and false are not numbers; NaN is no time or cost)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _flag(value: Any) -> bool:
    return isinstance(value, bool)


def _words(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _or_null(check: Check) -> Check:
    return lambda value: value is None or check(value)


# The fields readers compute with, by event (docs/reference/events.md); any event may carry `ts`.
# A field that is absent is fine (older versions wrote fewer); one of another type is not.
_START = {
    "run_id": _text,
    "task": _or_null(_text),
    "max_iter": _or_null(_integer),
    "elapsed_before_s": _or_null(is_number),
    "record": _or_null(_text),
    "part": _or_null(_integer),
}
FIELDS: Mapping[str, Mapping[str, Check]] = {
    "run_start": _START,
    "run_resume": _START,
    "decision": {
        "iteration": _integer,
        "max_iter": _or_null(_integer),
        "action": _text,
        "duration_s": _or_null(is_number),
        "total_cost_usd": _or_null(is_number),
    },
    "step_start": {"id": _or_null(_text), "index": _or_null(_integer), "of": _or_null(_integer)},
    "step_end": {"id": _or_null(_text), "outcome": _or_null(_text)},
    "verify": {"command": _words, "passed": _flag, "exit_code": _or_null(_integer)},
    "wait": {"seconds": _or_null(is_number)},
    "budget": {
        "max_iter": _integer,
        "max_time": _or_null(is_number),
        "max_cost": _or_null(is_number),
    },
    "run_end": {
        "outcome": _or_null(_text),
        "exit_code": _or_null(_integer),
        "iterations": _or_null(_integer),
        "elapsed_s": _or_null(is_number),
        "cost_usd": _or_null(is_number),
    },
}


@dataclass(frozen=True)
class LogRead:
    """What a log held: its trusted events, in order, and how many lines were skipped."""

    events: list[dict[str, Any]]
    skipped: int = 0


def trusted(event: Any) -> bool:
    """Whether one decoded line is an event readers can compute with."""
    if not isinstance(event, dict) or not isinstance(event.get("event"), str):
        return False
    if "ts" in event and not is_number(event["ts"]):
        return False
    checks = FIELDS.get(event["event"], {})
    return all(check(event[key]) for key, check in checks.items() if key in event)


def parse(text: str) -> LogRead:
    """The events in a log's text (see the module's docstring for what is skipped)."""
    # Not splitlines(): JSON keeps U+2028 and U+0085 raw inside strings.
    lines = text.split("\n")
    unfinished = lines.pop()  # "" when the text ends with a newline
    events: list[dict[str, Any]] = []
    skipped = 0
    for line in lines:
        if not line.strip():
            continue
        event = _decode(line)
        if trusted(event):
            events.append(event)
        else:
            skipped += 1
    last = _decode(unfinished) if unfinished.strip() else None
    if isinstance(last, dict) and trusted(last):  # a whole event, its newline on its way
        events.append(last)
    return LogRead(events, skipped)


def _decode(line: str) -> Any:
    try:
        return json.loads(line)
    # Also a number too large to convert, and nesting deeper than Python's parser goes
    # (one such line crashed every reader of the folder): not an event either.
    except (ValueError, RecursionError):
        return None


def skipped_note(skipped: int, where: str) -> str:
    """The one line a view prints about the lines it skipped."""
    lines = "line" if skipped == 1 else "lines"
    return f"{skipped} unreadable {lines} in {where} skipped"
