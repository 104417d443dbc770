"""The person at the keyboard, as the run sees them: paused or not, typing, submitting.

Written from the relay thread (keys) and the hook channel's thread (prompts), read by the
run loop; every method is a few attribute writes under a lock, so the relay stays fast.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ptysup.agents.events import PersonCommand
from ptysup.events import EventLog
from ptysup.terminal.keys import EscapeKeys, KeyCommand
from ptysup.terminal.reports import REPORTS


def _norm(text: str) -> str:
    # Claude Code trims, turns tabs into spaces and CRLF into LF, and ptysup adds a leading
    # space to texts starting with / or !: compare the words only.
    return " ".join(text.split())


class Person:
    """Who owns the agent's input right now, and what the person sent it."""

    def __init__(self, present: bool, clock: Callable[[], float] = time.monotonic) -> None:
        self.present = present  # a keyboard is attached (stdin is the person's terminal)
        self.paused = False  # the person took over: no decisions until resumed
        # Agents without hooks never say a prompt arrived: an Enter the person presses is
        # the best sign that they sent one.
        self.enter_submits = False
        self.prompts = 0  # prompts that reached the agent and were not typed by ptysup
        self._clock = clock
        self._lock = threading.Lock()
        self._keys_at = float("-inf")
        self._typed_at = float("-inf")
        self._ours: list[str] = []  # texts ptysup typed whose submit was not seen yet
        # Called when the person takes the agent (a message, a pause, a stop): the decision
        # being made, if any, is abandoned.
        self.on_takeover: list[Callable[[], None]] = []

    def keys(self, data: bytes) -> bool:
        """The person typed `data` (relay thread); True if that counts as sending a message."""
        if data[:1] == b"\x1b" and REPORTS.fullmatch(data):
            return False  # their terminal reporting (focus, answers to queries), not typing
        self._keys_at = self._clock()
        if self.enter_submits and b"\r" in data:
            with self._lock:
                self.prompts += 1
            self._take_over()
            return True
        return False

    def ptysup_types(self, text: str) -> None:
        """ptysup is about to type `text` into the agent (run loop)."""
        with self._lock:
            self._typed_at = self._clock()
            self._ours.append(_norm(text))
            del self._ours[:-8]  # texts whose submit never showed are forgotten eventually

    def owns_input(self) -> bool:
        """Whether text in the agent's input box is the person's: they typed since ptysup did.

        Without a keyboard nothing in the box can be theirs (in CI it is ptysup's own text,
        e.g. a prompt Claude Code put back after an interrupt)."""
        return self.present and self._keys_at > self._typed_at

    def submitted(self, prompt: str) -> bool:
        """A prompt reached the agent (hook thread); True, and counted, if it is the person's."""
        with self._lock:
            text = _norm(prompt)
            if text in self._ours:
                self._ours.remove(text)
                return False
            self.prompts += 1
        self._take_over()
        return True

    def command(self, command: KeyCommand) -> KeyCommand | None:
        """Apply the escape key's command (relay thread): the command that took effect
        (STOP, PAUSE or RESUME), or None when it changed nothing (resume while supervising)."""
        with self._lock:
            if command is KeyCommand.TOGGLE:
                command = KeyCommand.RESUME if self.paused else KeyCommand.PAUSE
            if command is KeyCommand.PAUSE and not self.paused:
                self.paused = True
            elif command is KeyCommand.RESUME and self.paused:
                self.paused = False
            elif command is not KeyCommand.STOP:
                return None
        if command is not KeyCommand.RESUME:
            self._take_over()
        return command

    def _take_over(self) -> None:
        for callback in list(self.on_takeover):
            callback()


class PersonKeys:
    """The relay's handler for the person's typing: ptysup's commands out, the rest returned
    for the agent. Runs in the relay thread, so it only parses, flips flags and posts."""

    def __init__(
        self,
        escape: EscapeKeys,
        person: Person,
        post: Callable[[PersonCommand], None],
        log: EventLog,
        menu: Callable[[bool], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._escape = escape
        self._person = person
        self._post = post
        self._log = log
        self._menu = menu
        self._clock = clock

    def feed(self, data: bytes) -> bytes:
        """Handle one read of the person's keys; the bytes that go on to the agent."""
        keys = self._escape.feed(data)
        for command in keys.commands:
            self._command(command)
        if keys.forward and self._person.keys(keys.forward):
            self._log.emit("person_prompt", text=None)  # what was sent is not known
        return keys.forward

    def _command(self, command: KeyCommand) -> None:
        if self._menu is not None:
            self._menu(command is KeyCommand.MENU)
        if command in (KeyCommand.MENU, KeyCommand.CANCEL):
            return
        done = self._person.command(command)
        if done is not None:
            self._log.emit("person_command", command=done.value)
            self._post(PersonCommand(done, self._clock()))
