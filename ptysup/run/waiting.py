"""What the run waits on a person for, where someone steering it from elsewhere sees it.

One board per run: the loop posts an escalation or a question it waits on, the screen
model a dialog it shows; state.json ("waiting"), the control page and `ptysup send` read
it. A question held open for a person elsewhere (--escalate-wait, no terminal) keeps its
Ask here, so a sent answer goes to the agent's question tool as the picker's would.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from ptysup.agents.questions import Ask

ESCALATION, QUESTION, DIALOG = "escalation", "question", "dialog"


@dataclass(frozen=True)
class Waiting:
    """An open escalation, question or dialog."""

    kind: str  # ESCALATION, QUESTION or DIALOG
    text: str  # the reason, the question(s), or the dialog as drawn
    options: tuple[str, ...] = ()  # a question's labels
    until: float | None = None  # Unix time an --escalate-wait ends

    def to_json(self) -> dict[str, object]:
        """state.json's "waiting"."""
        return {
            "kind": self.kind,
            "text": self.text,
            "options": list(self.options),
            "until": self.until,
        }


class WaitBoard:
    """The one thing the run waits on a person for now (a dialog under an escalation is
    the dialog: it is what the agent waits on)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._closed = threading.Condition(self._lock)  # notified when a dialog closes
        self._loop: Waiting | None = None  # posted by the loop
        self._dialog: Waiting | None = None  # seen on the screen
        self._ask: Ask | None = None  # a question held open for an answer sent from elsewhere
        self.on_change: list[Callable[[Waiting | None], None]] = []

    @property
    def now(self) -> Waiting | None:
        """What the run waits on, if anything."""
        with self._lock:
            return self._dialog or self._loop

    def post(self, waiting: Waiting | None, ask: Ask | None = None) -> None:
        """The loop waits on `waiting` (None: on nobody any more)."""
        with self._lock:
            self._loop, self._ask = waiting, ask
        self._changed()

    def dialog(self, text: str | None) -> None:
        """The screen shows a dialog with `text` (None: none)."""
        waiting = None if text is None else Waiting(DIALOG, text)
        with self._lock:
            if waiting == self._dialog:
                return
            self._dialog = waiting
            if waiting is None:
                self._closed.notify_all()
        self._changed()

    def dialog_closed(self, timeout: float) -> bool:
        """Wait (at most `timeout` seconds) until no dialog shows; whether none does."""
        with self._lock:
            return self._closed.wait_for(lambda: self._dialog is None, timeout)

    def holds_question(self) -> bool:
        """Whether a question is held open for an answer from elsewhere."""
        with self._lock:
            return self._ask is not None

    def take_question(self) -> Ask | None:
        """The question held open for an answer, taken (it is answered once)."""
        with self._lock:
            ask, self._ask = self._ask, None
            return ask

    def _changed(self) -> None:
        now = self.now
        for callback in list(self.on_change):
            callback(now)
