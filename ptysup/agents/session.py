"""The agent as the run loop sees it: ready, take a message, end a turn, clear, exit.

Every other thread (relay, screen feeder, hook channel) only posts events to this
session's queue; the run loop's thread consumes them here, in order, waiting on the
queue with deadlines instead of polling.
"""

from __future__ import annotations

import collections
import queue
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ptysup.agents.events import (
    AgentEvent,
    AgentExit,
    AgentExited,
    HookEvent,
    Interrupted,
    ScreenState,
    ScreenUpdate,
    StopRequest,
    TimeUp,
    TurnEnd,
    TurnEndKind,
)
from ptysup.agents.firstrun import AgentBlocked
from ptysup.agents.profile import AgentProfile
from ptysup.events import EventLog
from ptysup.terminal.inject import Typist, as_message
from ptysup.terminal.screen import ScreenSnapshot

MAX_MESSAGE = 64 * 1024  # characters of one instruction; more is cut (and logged)


@dataclass(frozen=True)
class Timings:
    """How long to wait for what (seconds)."""

    ready: float = 60.0  # agent start → ready for input (--start-timeout)
    blocked: float | None = None  # a first-run screen on screen this long ends the start;
    # None: a person is there to answer it
    landed: float = 2.0  # paste → the text shows in the agent's input box
    confirm: float = 3.0  # Enter → the agent shows a turn started (then Enter once more)
    idle: float = 3.0  # quiet time that ends a turn for agents without hooks
    screen_grace: float = 3.0  # screen back to ready, yet no Stop hook: a turn end anyway
    turn: float = 300.0  # no output and no turn end this long: the turn is stalled
    exit: float = 5.0  # graceful exit → the agent is gone


@dataclass
class Activity:
    """What the agent did since the last message it was given."""

    tools: list[str] = field(default_factory=list)
    last_message: str = ""

    def reset(self) -> None:
        """Forget the previous turn."""
        self.tools.clear()
        self.last_message = ""


@dataclass(frozen=True)
class InjectResult:
    """What was typed, and whether the agent showed that a turn started."""

    text: str
    confirmed: bool
    attempts: int


class AgentSession:
    """Turns the agent's events into ready / turn started / turn ended for the run loop."""

    def __init__(
        self,
        profile: AgentProfile,
        typist: Typist,
        snapshot: Callable[[], ScreenSnapshot],
        log: EventLog,
        timings: Timings = Timings(),
        clock: Callable[[], float] = time.monotonic,
        kill: Callable[[], object] = lambda: None,
    ) -> None:
        self.profile = profile
        self._kill = kill
        self._typist = typist
        self._snapshot = snapshot
        self._log = log
        self.timings = timings
        self._clock = clock
        self._queue: queue.SimpleQueue[AgentEvent] = queue.SimpleQueue()
        self._pushback: collections.deque[AgentEvent] = collections.deque()
        self.state = ScreenState.UNKNOWN
        self.last_output = clock()
        self.activity = Activity()
        self.exited: AgentExit | None = None

    # -- posted from other threads -------------------------------------------------
    def post(self, event: AgentEvent) -> None:
        """Queue an event for the run loop (any thread)."""
        self._queue.put(event)

    def now(self) -> float:
        """The session clock (the clock events are stamped with)."""
        return self._clock()

    # -- consumed by the run loop ----------------------------------------------------
    def snapshot(self) -> ScreenSnapshot:
        """The agent's screen as it stands."""
        return self._snapshot()

    def wait_ready(self) -> None:
        """Return once the agent waits for input (Claude: its screen; others: quiet).

        Raises AgentBlocked when a first-run screen or dialog waits for a person who is not
        there (`timings.blocked` set), TimeoutError after `timings.ready` seconds. With a
        person, the time a dialog stays open does not count: they are answering it.
        """
        deadline = self._clock() + self.timings.ready
        blocked_since: float | None = None
        try:
            while self.state is not ScreenState.READY:
                now = self._clock()
                quiet_at = self.last_output + self.timings.idle
                if not self.profile.uses_hooks and now >= quiet_at:
                    return
                wake = deadline if self.profile.uses_hooks else min(deadline, quiet_at)
                blocker = self.profile.blocker(self.snapshot())
                settle = self.timings.blocked
                if blocker is None:
                    blocked_since = None
                elif settle is None:
                    deadline = max(deadline, now + self.timings.ready)  # a person answers it
                else:
                    # A short settle: a dialog drawn on the way to the input box is not one.
                    blocked_since = now if blocked_since is None else blocked_since
                    if now >= blocked_since + settle:
                        raise AgentBlocked(blocker)
                    wake = min(wake, blocked_since + settle)
                event = self._next(wake)
                if event is None and self._clock() >= deadline:
                    raise TimeoutError(f"agent not ready after {self.timings.ready:.0f}s")
        except AgentExited:
            # An agent that quits at a first-run screen (onboarding offline): say which.
            blocker = self.profile.blocker(self.snapshot())
            if blocker is None:
                raise
            raise AgentBlocked(blocker) from None

    def submit(self, text: str) -> InjectResult:
        """Type `text` as one message and confirm the agent started a turn on it."""
        message = as_message(text)
        if len(message) > MAX_MESSAGE:
            self._log.emit("warning", message=f"instruction cut to {MAX_MESSAGE} characters")
            message = message[:MAX_MESSAGE]
        self.activity.reset()
        if not self._wait_settled():
            return InjectResult(message, False, 0)
        self._typist.paste(message)
        self._wait_landed()
        self._typist.enter()
        for attempt in (1, 2):
            if self._confirm_turn_started():
                return InjectResult(message, True, attempt)
            if attempt == 1:
                self._log.emit("warning", message="no turn started after injection; Enter again")
                self._typist.enter()
        return InjectResult(message, False, 2)

    def command(self, command: str) -> bool:
        """Type a slash command such as /clear and wait briefly for it to take effect;
        whether it did (without hooks: whether it was typed)."""
        if not self._wait_settled():
            return False
        self._typist.command(command)
        deadline = self._clock() + self.timings.confirm
        while (event := self._next(deadline)) is not None:
            if not self.profile.uses_hooks:
                return True  # any sign of life: the screen changed
            if isinstance(event, HookEvent) and event.name == "SessionStart":
                return True
        return not self.profile.uses_hooks  # typed; without hooks nothing more is known

    def pause(self, seconds: float) -> None:
        """Wait `seconds` while still noticing the agent's exit and stop signals."""
        deadline = self._clock() + seconds
        while self._clock() < deadline:
            self._next(deadline)

    def wait_turn_end(self, deadline: float | None = None) -> TurnEnd:
        """Block until the current turn ends (hook, screen, quiet time or stall).

        Raises TimeUp once the session clock passes `deadline` (the run's time budget).
        """
        ready_since: float | None = None
        while True:
            now = self._clock()
            if deadline is not None and now >= deadline:
                raise TimeUp()
            wakes = [self.last_output + self.timings.turn]
            if deadline is not None:
                wakes.append(deadline)
            if ready_since is not None:
                wakes.append(ready_since + self.timings.screen_grace)
            if not self.profile.uses_hooks:
                wakes.append(self.last_output + self.timings.idle)
            event = self._next(min(wakes))
            now = self._clock()
            if event is None:
                if not self.profile.uses_hooks and now >= self.last_output + self.timings.idle:
                    return TurnEnd(TurnEndKind.QUIET)
                if ready_since is not None and now >= ready_since + self.timings.screen_grace:
                    return self._screen_turn_end()
                if now >= self.last_output + self.timings.turn:
                    return TurnEnd(TurnEndKind.STALLED, self.snapshot().text()[-2000:])
                continue
            if isinstance(event, HookEvent):
                if event.name == "Stop":
                    return TurnEnd(TurnEndKind.STOP, self.activity.last_message)
                if event.name == "StopFailure":
                    return TurnEnd(TurnEndKind.API_ERROR, self._api_error_detail(event))
            elif isinstance(event, ScreenUpdate):
                ready_since = ready_since or event.ts if event.state is ScreenState.READY else None

    def shutdown(self) -> bool:
        """End the agent: its own exit command if it has one, else (or then) a hang-up.

        False when an agent with an exit command ignored it and had to be killed.
        """
        if self.exited is not None:
            return True
        if self.profile.exit_command is None or not self._wait_settled():
            self._kill()
            return self.profile.exit_command is None
        self._typist.command(self.profile.exit_command)
        deadline = self._clock() + self.timings.exit
        try:
            while self.exited is None and self._next(deadline) is not None:
                pass
        except AgentExited:
            return True
        self._kill()
        return False

    # -- internals -------------------------------------------------------------------
    def _api_error_detail(self, event: HookEvent) -> str:
        """The hook's error kind plus the message on screen, which may show a reset time.

        The hook can fire before the `API Error` line is drawn, so wait briefly for it.
        """
        kind = str(event.payload.get("error", "") or "api error")
        deadline = self._clock() + self.timings.landed
        while (shown := self.profile.api_error(self.snapshot())) is None:
            if self._next(deadline) is None:
                break
        return f"{kind}: {shown}" if shown else kind

    def _screen_turn_end(self) -> TurnEnd:
        snap = self.snapshot()
        error = self.profile.api_error(snap)
        if error:
            return TurnEnd(TurnEndKind.API_ERROR, error)
        return TurnEnd(TurnEndKind.SCREEN, self.activity.last_message)

    def _wait_settled(self) -> bool:
        """Before typing into a hooked agent, let it get back to its input box.

        A dialog left open is dismissed first (Esc: Claude Code rejects the tool and waits
        for an instruction): typed text must never answer a dialog, since a digit there
        approves. False if the dialog would not go away (nothing may be typed then).
        """
        if not self.profile.uses_hooks:
            return True
        deadline = self._clock() + self.timings.confirm
        if self.profile.screen_state(self.snapshot()) is ScreenState.DIALOG:
            self._log.emit("dialog_dismissed", screen=self.snapshot().text()[-1500:])
            self._typist.key(self.profile.dismiss_key)
        while self.state is not ScreenState.READY and self._clock() < deadline:
            self._next(deadline)
        if self.profile.screen_state(self.snapshot()) is ScreenState.DIALOG:
            self._log.emit("warning", message="a dialog is still open; nothing was typed")
            return False
        self._clear_leftover_input(deadline)
        return True

    def _clear_leftover_input(self, deadline: float) -> None:
        """Text already in the input box would be sent along with ours: an interrupted
        prompt that Claude Code put back, or a person's half-typed line. Log it (so it is
        not lost), then clear the box."""
        snap = self.snapshot()
        if not self.profile.input_has_text(snap) or not self.profile.clear_input_keys:
            return
        self._log.emit(
            "warning",
            message="the input box held text; cleared it before typing",
            text=snap.text()[-500:],
        )
        for key in self.profile.clear_input_keys:
            self._typist.key(key)
            self._typist.pause()
        while self.profile.input_has_text(self.snapshot()) and self._next(deadline) is not None:
            pass

    def _wait_landed(self) -> None:
        """Observed with Claude Code 2.1.197: for about a second after its input box first
        appears, an Enter that follows a paste within 0.1 s is dropped. Waiting until the
        pasted text shows in the box makes the Enter count."""
        deadline = self._clock() + self.timings.landed
        # Other events (the SessionStart hook comes ~0.25 s after the box is drawn) are
        # kept for later but do not end the wait: ending it let Enter follow the paste at
        # once, and Claude Code dropped it (the "typed text not confirmed" flake).
        kept: list[AgentEvent] = []
        try:
            while not self.profile.input_has_text(self.snapshot()) and self._clock() < deadline:
                event = self._next(deadline)
                if event is not None and not isinstance(event, ScreenUpdate):
                    kept.append(event)
        finally:
            self._pushback.extend(kept)

    def _confirm_turn_started(self) -> bool:
        deadline = self._clock() + self.timings.confirm
        while (event := self._next(deadline)) is not None:
            if isinstance(event, HookEvent) and event.name in ("UserPromptSubmit", "Stop"):
                if event.name == "Stop":
                    self._pushback.append(event)
                return True
            if isinstance(event, ScreenUpdate) and (
                event.state is ScreenState.WORKING or not self.profile.uses_hooks
            ):
                return True
        return False

    def _next(self, deadline: float) -> AgentEvent | None:
        """The next event before `deadline`, after updating state; None on time-out."""
        if self._pushback:
            return self._pushback.popleft()
        timeout = max(0.0, deadline - self._clock())
        try:
            event = self._queue.get(timeout=timeout)
        except queue.Empty:
            return None
        self._observe(event)
        return event

    def _observe(self, event: AgentEvent) -> None:
        if isinstance(event, ScreenUpdate):
            self.state = event.state
            self.last_output = event.ts
        elif isinstance(event, HookEvent):
            self._record_hook(event)
        elif isinstance(event, AgentExit):
            self.exited = event
            raise AgentExited(event.status)
        elif isinstance(event, StopRequest):
            raise Interrupted(event.signum)

    def _record_hook(self, event: HookEvent) -> None:
        p = event.payload
        target = _summary(p["tool_input"]) if p.get("tool_input") else None
        self._log.emit(
            "hook",
            name=event.name,
            session_id=p.get("session_id"),
            **{k: p[k] for k in _HOOK_FIELDS if k in p},
            **({"target": target} if target else {}),
        )
        if event.name in ("PostToolUse", "PostToolUseFailure"):
            status = "failed" if event.name == "PostToolUseFailure" else "ok"
            self.activity.tools.append(
                f"{p.get('tool_name', '?')}({_summary(p.get('tool_input'))}) → {status}"
                + _result(p)
            )
        elif event.name == "PermissionRequest":
            self.activity.tools.append(
                f"permission dialog for {p.get('tool_name', '?')}({_summary(p.get('tool_input'))})"
            )
        elif event.name == "Stop":
            self.activity.last_message = str(p.get("last_assistant_message", ""))


# Small fields of a hook payload worth keeping in the event log.
_HOOK_FIELDS = ("source", "reason", "tool_name", "error", "notification_type")


def _summary(tool_input: Any, limit: int = 200) -> str:
    if isinstance(tool_input, dict):
        for key in ("command", "file_path", "path", "pattern", "url", "description"):
            if key in tool_input:
                return _clip(str(tool_input[key]), limit)
    return _clip(str(tool_input or ""), limit)


def _result(payload: dict[str, Any]) -> str:
    response = payload.get("tool_response") or payload.get("error")
    if not response:
        return ""
    if isinstance(response, dict):
        response = response.get("stdout") or response.get("stderr") or response.get("type") or ""
    text = _clip(str(response), 300)
    return f": {text}" if text else ""


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
