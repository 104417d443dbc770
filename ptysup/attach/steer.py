"""Steering a live run from another process: `ptysup send/budget/stop` and the control page.

Each call opens the run's attach socket (private: the same user only), sends one request
(steerproto.py) and returns the run's one-line answer, or raises SteerError with the
reason: a bad or finished run, a refused value, another user's run, no socket.
`source` says where the request comes from, in words ("shell pid 4242 on /dev/pts/3",
"page from 10.0.0.7"); the run logs it with the action (`person_action`).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ptysup.attach import steerproto, wire
from ptysup.attach.client import Refused, open_socket
from ptysup.store.rundir import RunDir

# The longest a request may take: typing a message waits for the agent's input box, a
# stop for the agent to be ended (the run's own limits are well inside this).
ANSWER_S = 120.0


class SteerError(Exception):
    """The run did not do it; the message is one line (the CLI prints it, exit 2)."""


def send(run_dir: Path, text: str, source: str) -> str:
    """Type TEXT into the run's agent as the person's message (or their answer to what the
    run waits on)."""
    return _ask(run_dir, steerproto.Action.SEND, source, text=text)


def budget(run_dir: Path, changes: Mapping[str, str], source: str) -> str:
    """Change the run's budgets: keys max_iter, max_time, max_cost; values "60", "+10",
    "-5", "90m", "+30m", "2.5", "+1" (never below what is used)."""
    return _ask(run_dir, steerproto.Action.BUDGET, source, changes=dict(changes))


def stop(run_dir: Path, source: str) -> str:
    """Stop the run as its escape key's stop does (outcome stopped, exit 8)."""
    return _ask(run_dir, steerproto.Action.STOP, source)


def approve(run_dir: Path, dialog: str, source: str) -> str:
    """Approve the open approval dialog, only if the run sees exactly DIALOG now."""
    return _ask(run_dir, steerproto.Action.APPROVE, source, dialog=dialog)


def _ask(run_dir: Path, action: steerproto.Action, source: str, **fields: Any) -> str:
    try:
        request = steerproto.request(action.value, source, **fields)
    except steerproto.Refused as exc:
        raise SteerError(str(exc)) from None
    run = RunDir(run_dir)
    try:
        sock = open_socket(run)
    except Refused as exc:
        raise SteerError(str(exc)) from None
    with sock:
        sock.settimeout(ANSWER_S)
        try:
            sock.sendall(wire.json_frame(wire.STEER, request.to_json()))
            answer = _reply(sock)
        except (ConnectionResetError, BrokenPipeError):
            answer = None  # closed on us before, or while, the request was read
        except TimeoutError:
            raise SteerError(f"run {run.run_id} did not answer in {ANSWER_S:.0f}s") from None
        except (OSError, wire.WireError) as exc:
            raise SteerError(f"lost run {run.run_id}: {exc}") from None
    if answer is None:
        # The run closes a connection from another user's process without a word.
        raise SteerError(
            f"run {run.run_id} closed the connection without an answer (it ended, or it "
            "is another user's run: only the user who started it may steer it)"
        )
    if not answer.get("ok"):
        raise SteerError(str(answer.get("message") or "refused"))
    return str(answer.get("message") or "done")


def _reply(sock: socket.socket) -> dict[str, Any] | None:
    """The run's REPLY, or None if it closed the connection first."""
    reader = wire.Reader()
    while True:
        data = sock.recv(65536)
        if not data:
            return None
        for kind, payload in reader.feed(data):
            if kind == wire.REPLY:
                body = json.loads(payload)
                return body if isinstance(body, dict) else {"ok": False, "message": "?"}
