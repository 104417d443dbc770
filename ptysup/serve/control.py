"""Steering from the page (`ptysup serve --control`): a live run's budgets and what it
waits on, and the person's actions handed to the run through the steer client.

The Guard has already judged each request (the control cookie, Origin, Host, header);
here a request's body is checked and turned into one call of the steer client, whose
one-line confirmation or refusal the page shows. The run logs each as a `person_action`
from "page from ADDR" and notifies it; nothing here writes a run's files.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ptysup.logread import is_number
from ptysup.store import runstate
from ptysup.store.rundir import RunDir

JSON = "application/json; charset=utf-8"
BUDGET_KEYS = ("max_iter", "max_time", "max_cost")
WAITING_KINDS = frozenset({"escalation", "question", "dialog"})
MAX_TEXT = 16 * 1024  # characters of a message typed from the page
ACTIONS = ("send", "budget", "stop", "approve")


@dataclass(frozen=True)
class Steer:
    """The steer client's calls (ptysup.attach.steer), passed in: each returns the line
    that confirms it, or raises `error` with the line that says why not."""

    send: Callable[[Path, str, str], str]
    budget: Callable[[Path, Mapping[str, str], str], str]
    stop: Callable[[Path, str], str]
    approve: Callable[[Path, str, str], str]
    error: type[Exception]


@dataclass(frozen=True)
class Answer:
    """What a control request gets: its status and a JSON body."""

    status: int
    body: dict[str, Any]

    def encoded(self) -> bytes:
        """The body as sent."""
        return json.dumps(self.body, ensure_ascii=False).encode()


class BadRequest(Exception):
    """A body the page would never send; the message is one line."""


def state(run_dir: RunDir, live: bool) -> dict[str, Any]:
    """What the control page shows beside the terminal: the run's current budgets and what
    it waits on (state.json, as the run writes them), only while it lives."""
    saved = runstate.read_state(run_dir.path / runstate.STATE_FILE) if live else None
    saved = saved or {}
    return {
        "live": live,
        "budgets": _budgets(saved.get("budgets")),
        "waiting": _waiting(saved.get("waiting")),
    }


def _budgets(value: Any) -> dict[str, float | None] | None:
    """The budgets as written, or None if the file holds something else."""
    if not isinstance(value, dict):
        return None
    shown: dict[str, float | None] = {}
    for key in BUDGET_KEYS:
        number = value.get(key)
        if number is not None and not is_number(number):
            return None
        shown[key] = number
    return shown


def _waiting(value: Any) -> dict[str, Any] | None:
    """What the run waits on, or None (also for anything ptysup would not have written)."""
    if not isinstance(value, dict) or value.get("kind") not in WAITING_KINDS:
        return None
    text, options, until = value.get("text"), value.get("options", []), value.get("until")
    if not isinstance(text, str) or not isinstance(options, list):
        return None
    if not all(isinstance(o, str) for o in options) or not (until is None or is_number(until)):
        return None
    return {"kind": value["kind"], "text": text, "options": options, "until": until}


def not_running(run_dir: RunDir) -> str:
    """What a control request for an ended run is told."""
    return f"run {run_dir.run_id} is not running: nothing can be steered any more"


def act(steer: Steer, run_dir: RunDir, action: str, body: bytes, address: str) -> Answer:
    """Carry out one control request for the run in `run_dir`, from `address`."""
    if action not in ACTIONS:
        return Answer(404, {"error": f"no such action: {action}"})
    try:
        fields = _fields(body)
        source = f"page from {address}"
        line = _call(steer, run_dir.path, action, fields, source)
    except BadRequest as exc:
        return Answer(400, {"error": str(exc)})
    except steer.error as exc:  # the run refused, or is gone: the person reads why
        return refused(str(exc))
    return Answer(200, {"ok": line})


def refused(line: str) -> Answer:
    """The run's no (or why it cannot be asked): an answer like its yes, which the page
    shows in its error colour; an HTTP error is for a request the page would never send."""
    return Answer(200, {"refused": line})


def _call(steer: Steer, path: Path, action: str, fields: dict[str, Any], source: str) -> str:
    if action == "send":
        return steer.send(path, _text(fields, "text"), source)
    if action == "budget":
        return steer.budget(path, _changes(fields), source)
    if action == "approve":
        # The text the person saw beside the button: the run approves only that dialog.
        return steer.approve(path, _text(fields, "dialog"), source)
    return steer.stop(path, source)


def _fields(body: bytes) -> dict[str, Any]:
    try:
        value = json.loads(body or b"{}")
    except (ValueError, RecursionError):
        raise BadRequest("the body is no JSON") from None
    if not isinstance(value, dict):
        raise BadRequest("the body is no JSON object")
    return value


def _text(fields: dict[str, Any], name: str) -> str:
    text = fields.get(name)
    if not isinstance(text, str) or not text.strip():
        raise BadRequest(f"{name} needs some text")
    if len(text) > MAX_TEXT:
        raise BadRequest(f"{name} is at most {MAX_TEXT} characters")
    return text


def _changes(fields: dict[str, Any]) -> dict[str, str]:
    changes = {}
    for key, value in fields.items():
        if key not in BUDGET_KEYS:
            raise BadRequest(f"no such budget: {key} (one of {', '.join(BUDGET_KEYS)})")
        if not isinstance(value, str) or len(value) > 32:
            raise BadRequest(f"{key} needs a short text value such as +5")
        if value.strip():
            changes[key] = value.strip()
    if not changes:
        raise BadRequest("no budget to change")
    return changes
