"""What `ptysup send/budget/stop` and the control page ask of a live run, on the wire.

A steering connection sends one STEER message (JSON, below) instead of a viewer's
CONNECT, gets one REPLY ({"ok": bool, "message": str}: the line the command prints) and
is closed. The run checks everything again: the client's checks only give the person
their error before a connection is made.

    {"action": "send", "source": str, "text": str}
    {"action": "budget", "source": str, "changes": {"max_iter": "+10", ...}}
    {"action": "stop", "source": str}
    {"action": "approve", "source": str, "dialog": str}

A budget's value is absolute ("60", "90m", "2.5") or relative ("+10", "-5", "+30m"): the
run applies it to its current limit and refuses a limit below what is used.
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ptysup.values import duration_seconds, duration_text

MAX_TEXT = 64 * 1024  # characters of a sent message: a message, not a file
MAX_SOURCE = 200  # characters of `source`: a line in an event


class Refused(Exception):
    """The request cannot be carried out; the message is one line for the person."""


class Action(str, enum.Enum):
    """What a steering request does."""

    SEND = "send"
    BUDGET = "budget"
    STOP = "stop"
    APPROVE = "approve"


class Budget(str, enum.Enum):
    """A budget `ptysup budget` changes, named as the run's options are (less the --)."""

    MAX_ITER = "max_iter"
    MAX_TIME = "max_time"
    MAX_COST = "max_cost"

    @property
    def option(self) -> str:
        """The option's name as the person types it: --max-iter."""
        return "--" + self.value.replace("_", "-")


@dataclass(frozen=True)
class Change:
    """One budget's new value: set to `amount`, or moved by it (`relative`)."""

    budget: Budget
    amount: float  # iterations, seconds or USD; negative only when relative
    relative: bool

    def apply(self, current: float | None, used: float) -> float:
        """The new limit, from the `current` one (None: none) and what is `used`;
        Refused when there is nothing to move or it would fall below what is used."""
        if self.relative and current is None:
            raise Refused(
                f"{self.budget.option}: the run has no such budget to move; "
                f"set one (e.g. {self.budget.option} {_example(self.budget)})"
            )
        new = (current or 0.0) + self.amount if self.relative else self.amount
        if new < used or new <= 0:
            raise Refused(
                f"{self.budget.option}: {_shown(self.budget, new)} is below what is used "
                f"({_shown(self.budget, used)})"
            )
        return new

    def to_text(self) -> str:
        """The value as written ("+10", "90m" as seconds "5400s", "2.5")."""
        sign = "+" if self.relative and self.amount >= 0 else ""
        if self.budget is Budget.MAX_TIME:
            return f"{sign}{self.amount:g}s"
        return f"{sign}{self.amount:g}"


def _example(budget: Budget) -> str:
    return {Budget.MAX_ITER: "60", Budget.MAX_TIME: "2h", Budget.MAX_COST: "5"}[budget]


def _shown(budget: Budget, value: float) -> str:
    """A limit as the person reads it: 12, 1h30m, $2.50."""
    if budget is Budget.MAX_ITER:
        return f"{value:g}"
    if budget is Budget.MAX_COST:
        return f"${value:.2f}"
    return duration_text(value)


def parse_change(key: str, value: str) -> Change:
    """'max_iter', '+10' → a Change; Refused (one line) for an unknown budget or value."""
    try:
        budget = Budget(key)
    except ValueError:
        names = ", ".join(b.value for b in Budget)
        raise Refused(f"no budget {key!r} (choose from {names})") from None
    text = str(value).strip()
    relative = text[:1] in ("+", "-")
    body = text[1:].strip() if relative else text
    try:
        amount = _amount(budget, body)
    except ValueError as exc:
        raise Refused(f"{budget.option}: {exc}") from None
    return Change(budget, -amount if text[:1] == "-" else amount, relative)


def _amount(budget: Budget, body: str) -> float:
    if budget is Budget.MAX_TIME:
        return duration_seconds(body)
    if budget is Budget.MAX_ITER:
        if not body.isdigit() or int(body) == 0:
            raise ValueError(f"{body!r} is not a whole number of iterations above 0")
        return float(int(body))
    try:
        amount = float(body.removeprefix("$"))
    except ValueError:
        raise ValueError(f"{body!r} is not an amount in USD (e.g. 2.5)") from None
    if not math.isfinite(amount) or amount <= 0:
        raise ValueError(f"{body!r} is not an amount in USD above 0")
    return amount


@dataclass(frozen=True)
class Request:
    """One steering request, checked."""

    action: Action
    source: str
    text: str = ""  # send: the message; approve: the dialog's text as the person saw it
    changes: tuple[Change, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        """The STEER message's payload."""
        body: dict[str, Any] = {"action": self.action.value, "source": self.source}
        if self.action is Action.SEND:
            body["text"] = self.text
        elif self.action is Action.APPROVE:
            body["dialog"] = self.text
        elif self.action is Action.BUDGET:
            body["changes"] = {c.budget.value: c.to_text() for c in self.changes}
        return body


def request(action: str, source: str, **fields: Any) -> Request:
    """A checked Request from its parts (text=, dialog=, changes=); Refused saying what
    is wrong with it."""
    try:
        kind = Action(action)
    except ValueError:
        raise Refused(f"no action {action!r}") from None
    source = " ".join(str(source).split())[:MAX_SOURCE] or "unknown"
    if kind is Action.SEND:
        text = fields.get("text")
        if not isinstance(text, str) or not text.strip():
            raise Refused("nothing to send: the message is empty")
        if len(text) > MAX_TEXT:
            raise Refused(f"the message is {len(text)} characters; at most {MAX_TEXT} are sent")
        return Request(kind, source, text=text)
    if kind is Action.APPROVE:
        dialog = fields.get("dialog")
        if not isinstance(dialog, str) or not dialog.strip():
            raise Refused("no dialog named: approve needs the dialog's text as shown")
        return Request(kind, source, text=dialog)
    if kind is Action.BUDGET:
        changes = fields.get("changes")
        if not isinstance(changes, Mapping) or not changes:
            raise Refused("no budget to change (--max-iter, --max-time or --max-cost)")
        return Request(
            kind, source, changes=tuple(parse_change(str(k), str(v)) for k, v in changes.items())
        )
    return Request(kind, source)


def decode(payload: bytes) -> Request:
    """A STEER message's payload → its Request; Refused for anything malformed."""
    try:
        body = json.loads(payload)
    except ValueError:
        raise Refused("the request is not JSON") from None
    if not isinstance(body, dict) or not isinstance(body.get("action"), str):
        raise Refused("the request names no action")
    fields = {k: v for k, v in body.items() if k not in ("action", "source")}
    return request(body["action"], str(body.get("source") or ""), **fields)


def reply(ok: bool, message: str) -> dict[str, Any]:
    """A REPLY message's payload: one line."""
    return {"ok": ok, "message": " ".join(message.split())}
