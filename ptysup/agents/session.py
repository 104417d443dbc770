"""The agent as the run loop sees it: ready, take a message, end a turn, clear, exit.

Every other thread (relay, screen feeder, hook channel) only posts events to this
session's queue; the run loop's thread consumes them here, in order, waiting on the
queue with deadlines instead of polling.
"""

from __future__ import annotations

import collections
import functools
import queue
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ptysup.agents.events import (
    AgentEvent,
    AgentExit,
    AgentExited,
    CostUp,
    Halted,
    HaltRequest,
    HookEvent,
    Interrupted,
    PersonCommand,
    PersonStopped,
    ScreenState,
    ScreenUpdate,
    StopRequest,
    TimeUp,
    TurnEnd,
    TurnEndKind,
)
from ptysup.agents.firstrun import AgentBlocked
from ptysup.agents.hookchannel import STATUS_LINE
from ptysup.agents.landing import same_prompt, shows
from ptysup.agents.person import Person
from ptysup.agents.profile import AgentProfile
from ptysup.agents.questions import ASK_TOOL, Ask, person_answers
from ptysup.agents.settle import settle_output
from ptysup.events import EventLog
from ptysup.terminal.inject import MAX_MESSAGE, Typist, as_message
from ptysup.terminal.keys import KeyCommand
from ptysup.terminal.relay import OutputTime
from ptysup.terminal.screen import ScreenSnapshot

RECHECK_S = 1.0  # while waiting on the person, look at the input box at least this often
SUBMIT_GRACE_S = 1.0  # the person's Enter → Claude Code's UserPromptSubmit hook
MAX_DISMISSED = 5  # dialogs dismissed one after another before typing, at most
# Typed before the next instruction where the agent does not tell its model itself.
REFUSED_NOTE = (
    "Your request for approval ({asked}) was refused, and it did not run: in this session "
    "nobody approves it. Do not ask for it again; go on as follows."
)


@dataclass(frozen=True)
class Timings:
    """How long to wait for what (seconds)."""

    ready: float = 60.0  # agent start → ready for input (--start-timeout)
    blocked: float | None = None  # a first-run screen on screen this long ends the start;
    # None: a person is there to answer it
    landed: float = 2.0  # paste → the text shows in the agent's input box
    # A message pasted once → it shows whole in the input box, at most: a loaded agent
    # draws late, and a message is never pasted twice (both would land).
    pasted: float = 10.0
    confirm: float = 3.0  # Enter → the agent shows a turn started (then Enter once more)
    idle: float = 3.0  # quiet time that ends a turn for agents without hooks
    screen_grace: float = 3.0  # screen back to ready, yet no Stop hook: a turn end anyway
    turn: float = 300.0  # no output and no turn end this long: the turn is stalled
    exit: float = 5.0  # graceful exit → the agent is gone
    settle: float = 0.05  # after a turn-end hook, output quiet this long: the final frame
    settle_max: float = 3.0  # ... or this long after the hook at most (a loaded machine)
    # A quiet turn end → the screen model shows all the output: a flood of millions of
    # lines left it 84k lines behind 2 s after the quiet on a loaded machine (CI run).
    catch_up: float = 5.0
    cost_report: float = 1.0  # Stop hook → Claude Code's report of the turn's spend, at most


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
    superseded: bool = False  # the person submitted their own message first: nothing typed
    # The message showed whole in the agent's input box (else Enter was never pressed) and,
    # where the agent reports the prompt it got, reached it whole.
    landed: bool = True


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
        person: Person | None = None,
        *,
        moved: OutputTime | None = None,
        caught_up: Callable[[float], bool] = lambda timeout: True,
    ) -> None:
        self.profile = profile
        # The agent's quiet is timed on the bytes the relay moves (`moved`); the screen
        # the supervisor reads is the model's once it shows all of them (`caught_up`).
        self._moved = moved or OutputTime()
        self._caught_up = caught_up
        self.person = person or Person(present=False, clock=clock)
        self._ending = False  # the agent is being ended: a stop key changes nothing more
        self.in_turn = False  # a prompt was submitted and its Stop has not come yet (hooks)
        # Prompts submitted while a turn went on, each to get a turn (and a Stop) of its own
        # after it: Claude Code 2.1.332 fires a queued message's UserPromptSubmit at once.
        self._queued = 0
        self._kill = kill
        self._typist = typist
        self._snapshot = snapshot
        self._log = log
        self.timings = timings
        self._clock = clock
        self._queue: queue.SimpleQueue[AgentEvent] = queue.SimpleQueue()
        self._pushback: collections.deque[AgentEvent] = collections.deque()
        # Questions wait here whichever wait consumed their hook, so none is left unanswered.
        self._asks: collections.deque[Ask] = collections.deque()
        self._asked: dict[str, Ask] = {}  # by tool_use_id, until the tool call finished
        self.state = ScreenState.UNKNOWN
        self._screen_output = clock()  # the last screen update's time
        self.activity = Activity()
        self.exited: AgentExit | None = None
        self.cost_usd = 0.0  # the agent's own spend (Claude Code's status line data)
        # A reopened conversation (--resume) may start from the spend Claude Code saved at
        # its last graceful exit: what it shows before its first prompt is not this part's.
        self.reopened = False
        self._cost_base: float | None = None
        self._prompted = False  # a prompt reached the agent (UserPromptSubmit)
        self._ready_heard = False  # the profile's ready hook came (if it has one)
        self._hooks_heard = False  # any hook came from the agent
        self._hooks_said = False  # the warning that none did was given
        self._approval: str | None = None  # what the agent asks approval for, while it waits
        self._refused: str | None = None  # an approval ptysup dismissed, not told the model yet
        self.cost_cap: float | None = None  # wait_turn_end raises CostUp at this spend
        self.on_spend: list[Callable[[float], None]] = []  # hear cost_usd when it rises
        self._reports_cost = False  # the agent reports its spend (Claude Code's status line)
        self._turn_ended_at: float | None = None  # a Stop whose spend is not reported yet
        self.last_screen: ScreenSnapshot | None = None  # before ptysup ended the agent
        # Called in the thread that saw the agent exit: a decision being made is dropped
        # at once, not waited for (the run loop is busy waiting for the supervisor).
        self.on_exit: list[Callable[[], object]] = []

    # -- posted from other threads -------------------------------------------------
    def post(self, event: AgentEvent) -> None:
        """Queue an event for the run loop (any thread)."""
        if isinstance(event, HookEvent) and event.name == "UserPromptSubmit":
            # Seen here, in the hook's thread, so that a decision being made now can be
            # cancelled at once (the run loop is busy waiting for the supervisor).
            prompt = str(event.payload.get("prompt", ""))
            if self.person.submitted(prompt):
                self._log.emit("person_prompt", text=prompt)
        self._queue.put(event)
        if isinstance(event, AgentExit):
            for callback in list(self.on_exit):
                callback()

    def now(self) -> float:
        """The session clock (the clock events are stamped with)."""
        return self._clock()

    @property
    def last_output(self) -> float:
        """When the agent last printed: the relay's time for the last bytes it moved, or
        the screen model's last update, whichever is later."""
        return max(self._screen_output, self._moved.at)

    @last_output.setter
    def last_output(self, at: float) -> None:
        self._screen_output = at

    # -- consumed by the run loop ----------------------------------------------------
    def snapshot(self) -> ScreenSnapshot:
        """The agent's screen as it stands."""
        return self._snapshot()

    def wait_ready(self) -> None:
        """Return once the agent waits for input (Claude: its screen; others: quiet; an
        agent with a ready hook: that hook and its screen, never a quiet spell).

        Raises AgentBlocked when a first-run screen or dialog waits for a person who is not
        there (`timings.blocked` set), TimeoutError after `timings.ready` seconds. With a
        person, the time a dialog stays open does not count: they are answering it.
        """
        deadline = self._clock() + self.timings.ready
        blocked_since: float | None = None
        try:
            while not self._ready():
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
                    why = self._no_ready_hook()
                    raise TimeoutError(f"agent not ready after {self.timings.ready:.0f}s{why}")
        except AgentExited:
            # An agent that quits at a first-run screen (onboarding offline): say which.
            blocker = self.profile.blocker(self.snapshot())
            if blocker is None:
                raise
            raise AgentBlocked(blocker) from None

    def _no_ready_hook(self) -> str:
        """Why an agent with a ready hook is not ready, when it is that the hook never came
        (opencode without ptysup's plugin)."""
        hook = self.profile.ready_hook
        if hook is None or self._ready_heard or self._hooks_heard:
            return ""
        return f": its {hook} hook never came (ptysup's hooks did not reach it)"

    def _ready(self) -> bool:
        """The screen reads ready, the agent said so where it has a ready hook, and it
        takes a paste where nothing else may be typed (Gemini CLI draws its input box
        before it switches bracketed paste on)."""
        heard = self.profile.ready_hook is None or self._ready_heard
        pastes = not self.profile.paste_only or self._typist.pastes()
        return heard and pastes and self.state is ScreenState.READY

    def submit(self, text: str, deadline: float | None = None) -> InjectResult:
        """Type `text` as one message and confirm the agent started a turn on it.

        `deadline` (the time budget) bounds only the wait for the person's text to go."""
        profile = self.profile
        message = as_message(text, profile.command_leaders, profile.command_guard)
        if len(message) > MAX_MESSAGE:
            self._log.emit("warning", message=f"instruction cut to {MAX_MESSAGE} characters")
            message = message[:MAX_MESSAGE]
        if not self._wait_person_input(deadline):
            return InjectResult(message, False, 0, superseded=True)
        self.activity.reset()
        if not self._wait_settled():
            return InjectResult(message, False, 0, landed=False)
        # The agent waits: a turn ended without a Stop (a dialog turned down, a stall) is
        # over, and the prompt typed now is no message queued behind it.
        self._turn_over()
        refused = self._refused
        message = self._with_refusal(message)
        if not self._type_message(message):
            self._refused = refused  # never told: the next message that lands says it
            return InjectResult(message, False, 0, landed=False)
        self._typist.enter()
        for attempt in (1, 2):
            started = self._confirm_turn_started()
            if started is not None:
                return InjectResult(
                    message, True, attempt, landed=self._got_whole(message, started)
                )
            if attempt == 1 and self._shows(message):
                self._log.emit("warning", message="no turn started after injection; Enter again")
                self._typist.enter()
        return InjectResult(message, False, 2)

    def _type_message(self, message: str) -> bool:
        """Paste MESSAGE into the agent's input box, once; whether it shows there whole, so
        that Enter sends it as the agent's message. One that did not land (a paste the
        agent dropped, or read as keys) is cleared from the box, never submitted."""
        if self.profile.paste_only and not self._wait_pastes():
            self._log.emit("warning", message="the agent takes no paste now; nothing was typed")
            return False
        self.person.ptysup_types(message)
        self._typist.paste(message, plain=not self.profile.paste_only)
        if self._wait_landed(message):
            return True
        snap = self.snapshot()
        self._log.emit(
            "warning",
            message="the message did not show whole in the agent's input box; not sent",
            text=self.profile.input_text(snap) or self._screen_tail(500, snap),
        )
        if self.profile.input_has_text(snap):
            self._clear_input(self._clock() + self.timings.confirm)
        return False

    def _wait_pastes(self) -> bool:
        """Wait (at most `timings.confirm`) for the agent to take a bracketed paste."""
        deadline = self._clock() + self.timings.confirm
        while not self._typist.pastes():
            if self._next(deadline) is None and self._clock() >= deadline:
                return False
        return True

    def _got_whole(self, message: str, started: HookEvent | ScreenUpdate) -> bool:
        """Whether the prompt the agent reports (UserPromptSubmit's `prompt`, where it has
        one) is MESSAGE; a turn seen started only on screen tells nothing more."""
        if not isinstance(started, HookEvent) or started.name != "UserPromptSubmit":
            return True
        prompt = started.payload.get("prompt")
        if not isinstance(prompt, str):
            return True
        if same_prompt(message, prompt):
            return True
        self._log.emit(
            "warning", message="the agent got another message than ptysup typed", text=prompt
        )
        return False

    def _with_refusal(self, message: str) -> str:
        """MESSAGE, told first that the approval ptysup dismissed was refused, where the
        agent itself does not tell its model (Gemini CLI 0.61 drops the call from the
        conversation: the model would ask again, or take the instruction for an answer)."""
        refused, self._refused = self._refused, None
        if refused is None:
            return message
        return f"{REFUSED_NOTE.format(asked=refused)}\n\n{message}"[:MAX_MESSAGE]

    def command(self, command: str, deadline: float | None = None) -> bool:
        """Type a slash command such as /clear and wait briefly for it to take effect;
        whether it did (without hooks: whether it was typed). `deadline` caps every wait."""
        settled = self._wait_settled(deadline)
        self._refused = None  # a fresh conversation or the end: no message to say it in
        if not settled or not self._type_command(command, deadline):
            return False
        deadline = self._cap(self._clock() + self.timings.confirm, deadline)
        while (event := self._next(deadline)) is not None:
            if not self.profile.uses_hooks:
                return True  # any sign of life: the screen changed
            if isinstance(event, HookEvent) and event.name == "SessionStart":
                return True
            if (
                isinstance(event, ScreenUpdate)
                and not self.profile.clear_starts_session
                and self.profile.input_text(self.snapshot()) == ""
            ):
                return True  # the box let the command go (it showed there alone)
        return not self.profile.uses_hooks  # typed; without hooks nothing more is known

    def pause(self, seconds: float) -> None:
        """Wait `seconds` while still noticing the agent's exit and stop signals."""
        deadline = self._clock() + seconds
        while self._clock() < deadline:
            self._next(deadline)

    def settle_cost(self, deadline: float | None = None) -> None:
        """Wait until the agent has reported what its last turn cost, so `cost_usd`
        includes it. Observed with Claude Code 2.1.197: its status line runs when the
        conversation changes, at most every 300 ms, so the turn's last request shows up
        0.4-0.5 s after the Stop hook; a decision comes sooner. Only for an agent that
        reports its spend, only while a Stop came after the last report, and at most
        `timings.cost_report` after that Stop. Every other event is kept for later."""
        if self._turn_ended_at is None:
            return
        until = self._cap(self._turn_ended_at + self.timings.cost_report, deadline)
        kept: list[AgentEvent] = []
        try:
            while self._turn_ended_at is not None and (event := self._next(until)) is not None:
                kept.append(event)
        finally:
            self._pushback.extendleft(reversed(kept))
        self._turn_ended_at = None  # not reported in time: the figure stays as it is

    def collect_cost(self) -> None:
        """Once the run has ended on a signal (no other thread reads the events now): the
        spend the agent reported that nobody read yet, and a just-ended turn's late report
        (at most `timings.cost_report` after its Stop), so that run_end's cost is whole.
        Nothing raises; every event is kept."""
        until = self._clock()
        if self._turn_ended_at is not None:
            until = self._turn_ended_at + self.timings.cost_report
        for event in self._pushback:
            if isinstance(event, HookEvent) and event.name == STATUS_LINE:
                self._record_cost(event.payload)
        while True:
            try:
                event = self._queue.get(timeout=max(0.0, until - self._clock()))
            except queue.Empty:
                return
            self._pushback.append(event)
            if not isinstance(event, HookEvent):
                continue
            if event.name == STATUS_LINE:
                self._record_cost(event.payload)
                until = self._clock()  # in: the rest only if already queued
            elif event.name == "Stop" and self._reports_cost:
                until = self._clock() + self.timings.cost_report

    def wait_turn_end(self, deadline: float | None = None) -> TurnEnd | Ask:
        """Block until the current turn ends (hook, screen, quiet time or stall), or the
        agent asks a question (which the caller must answer).

        Raises TimeUp once the session clock passes `deadline` (the run's time budget).
        """
        ended = self._wait_turn_end(deadline)
        if isinstance(ended, TurnEnd):
            self._check_hooks()
        return ended

    def _check_hooks(self) -> None:
        """At a turn end: say once when no hook at all has come from an agent that sends
        them (its first one comes before a turn can end), and that ptysup goes on with the
        agent's screen alone. A turn that ended on its screen is seconds past the prompt,
        so an agent that is merely slow (Gemini CLI queues the first prompt while it
        starts) has sent its first hook by then."""
        first = self.profile.first_hook
        if first is None or self._hooks_heard or self._hooks_said:
            return
        self._hooks_said = True
        self._log.emit(
            "warning",
            message=(
                f"no hook came from {self.profile.name} (its {first} never did): "
                "ptysup's hooks do not reach it. Going on with its screen alone: turn ends "
                "come seconds late, and a question or dialog waits --turn-timeout before "
                "the supervisor sees it (questions are not answered for it). "
                "`ptysup doctor` says why where it knows"
            ),
            agent=self.profile.name,
            missing=first,
        )

    def _wait_turn_end(self, deadline: float | None) -> TurnEnd | Ask:
        ready_since: float | None = None
        # A dialog open this long stalls the turn even while the agent keeps drawing
        # (Codex animates its screen under an approval dialog; Claude Code goes quiet).
        dialog_since: float | None = None
        approval: HookEvent | None = None  # the agent said it asks for approval
        while True:
            if self._asks:
                return self._asks.popleft()
            now = self._clock()
            if deadline is not None and now >= deadline:
                raise TimeUp()
            wakes = [self.last_output + self.timings.turn]
            if deadline is not None:
                wakes.append(deadline)
            if ready_since is not None:
                wakes.append(ready_since + self.timings.screen_grace)
            if dialog_since is not None:
                wakes.append(dialog_since + self.timings.turn)
            if not self.profile.uses_hooks:
                wakes.append(self.last_output + self.timings.idle)
            event = self._next(min(wakes))
            now = self._clock()
            if self.cost_cap is not None and self.cost_usd >= self.cost_cap:
                raise CostUp()
            if dialog_since is not None and now >= dialog_since + self.timings.turn:
                return TurnEnd(TurnEndKind.STALLED, self._screen_tail(2000), True)
            if event is None:
                if not self.profile.uses_hooks and now >= self.last_output + self.timings.idle:
                    self._catch_up()
                    return TurnEnd(TurnEndKind.QUIET)
                if ready_since is not None and now >= ready_since + self.timings.screen_grace:
                    return self._screen_turn_end()
                if now >= self.last_output + self.timings.turn:
                    dialog = self.state is ScreenState.DIALOG
                    return TurnEnd(TurnEndKind.STALLED, self._screen_tail(2000), dialog)
                continue
            if isinstance(event, HookEvent):
                approval = _approval_after(approval, event, self.person.present)
                if event.name == "Stop":
                    self._settle(quiet=self.profile.draws_after_stop)
                    self._drain()
                    if self._turn_went_on() or self._queued_turn_follows():
                        continue  # decided at the end of the turn that followed
                    # An agent that signals every wait alike (aider) may wait on a dialog.
                    dialog = self.profile.screen_state(self.snapshot()) is ScreenState.DIALOG
                    return TurnEnd(TurnEndKind.STOP, self.activity.last_message, dialog)
                if event.name == "StopFailure":
                    return TurnEnd(TurnEndKind.API_ERROR, self._api_error_detail(event))
            elif isinstance(event, ScreenUpdate):
                ready_since = ready_since or event.ts if event.state is ScreenState.READY else None
                dialog_since = (
                    dialog_since or event.ts if event.state is ScreenState.DIALOG else None
                )
            if approval is not None and self.state is ScreenState.DIALOG:
                turn = self._approval_turn_end()
                if turn is not None:
                    return turn
                approval = None  # the dialog went (a hook of the person's answered it)

    def _approval_turn_end(self) -> TurnEnd | None:
        """With no person at a terminal, the approval dialog the agent announced is the
        turn's end as soon as it is drawn: nobody but the supervisor can act on it (ptysup
        never approves it), so waiting for --turn-timeout only wasted the time. None if
        the dialog is gone once the screen settled."""
        t = self.timings
        dialog = functools.partial(_dialog_drawn, self.profile, self.snapshot)
        held = settle_output(
            self._next, lambda: self.last_output, self._clock, t.settle, t.settle_max, dialog
        )
        self._pushback.extend(held.held)
        if not dialog():
            return None
        # The activity names what is asked (the PermissionRequest); the detail is no message.
        return TurnEnd(TurnEndKind.DIALOG, dialog=True)

    def clear(self, deadline: float | None = None, final: bool = True) -> InjectResult | None:
        """Clear the agent's conversation (Claude Code: /clear, confirmed by its new session);
        None when the agent has no such command (generic agents never get /clear).

        `final`: the run is ending (a stop key changes nothing more). A clear in the middle
        of a run (a plan's step) first waits for the person's text in the input box, and
        is not typed when their message went first."""
        text = self.profile.clear_command
        if text is None:
            return None
        if final:
            self._ending = True
            self._keep_last_screen()
        elif not self._wait_person_input(deadline):
            return InjectResult(text, False, 0)
        return InjectResult(text, self.command(text, deadline), 1)

    def interrupt(self, deadline: float | None = None) -> bool | None:
        """Stop the turn the agent is working on (Claude Code: Esc) until its screen or its
        own turn end shows it stopped; None when it was not working or has no interrupt
        key. An interrupt of several presses is pressed again while the turn goes on (one
        key is never lost; a second aider Ctrl+C would end aider)."""
        key = self.profile.interrupt_key
        if not key or self.exited is not None:
            return None
        if self.profile.paste_only and not self._typist.pastes():
            # Its keyboard is not its own yet: Claude Code switches bracketed paste off as
            # it suspends itself (Ctrl-Z) and on again once drawn after the SIGCONT, ~1 s
            # later under load. An Esc before that lands in the terminal's cooked mode,
            # echoed, and 2.1.332 (which goes on with its turn) never sees it.
            self._wait_pastes()
        state = self.profile.screen_state(self.snapshot())
        # A dialog is dismissed (and logged) by _wait_settled before anything is typed.
        if state is ScreenState.DIALOG or not (state is ScreenState.WORKING or self.in_turn):
            return None
        self._ending = True
        retried = self.profile.interrupt_armed is not None
        # An interrupt of several presses has the time of one confirmation per press: a
        # starved agent draws each press's answer late (opencode 1.18 under load, CI).
        presses = self.profile.interrupt_presses if retried else 1
        deadline = self._cap(self._clock() + self.timings.confirm * presses, deadline)
        attempts = 1
        while True:
            # Half the time the agent has to show the turn stopped, then pressed again.
            until = min(deadline, self._clock() + self.timings.confirm / 2) if retried else deadline
            if self._press_interrupt(key, until) and self._stopped(until):
                return True
            if self._clock() >= deadline:
                return False
            self._log.emit(
                "warning",
                message="the turn went on after the interrupt; pressed again",
                attempt=attempts,
            )
            attempts += 1

    def _press_interrupt(self, key: bytes, until: float) -> bool:
        """Press the interrupt key as often as the agent takes it, each press after the
        first once the screen shows that the one before armed it (opencode 1.18: two Escs
        a fixed moment apart were read as one under load, and the turn went on). A press
        the screen shows armed already is not pressed again: a first press drawn late, after
        the time it was given, and its second are two presses, never three. False when a
        press was not seen by `until`."""
        armed = self.profile.interrupt_armed
        first = 1 if armed is not None and armed in self.snapshot().text() else 0
        for press in range(first, self.profile.interrupt_presses):
            if press and armed is None:
                self._typist.pause()  # a TUI must see separate presses
            elif press and not self._drawn(armed or "", until):
                return False
            self._typist.key(key)
        return True

    def _drawn(self, text: str, until: float) -> bool:
        """Wait until the screen shows TEXT; whether it did by `until`."""
        while text not in self.snapshot().text():
            if self._next(until) is None:
                return False
        return True

    def _stopped(self, until: float) -> bool:
        """Whether the turn stopped by `until`: a repaint after the key that reads as ready
        (the screen may not show the turn yet when the hook came first; Claude Code sends
        no hook then), or the agent's own turn end."""
        while (event := self._next(until)) is not None:
            stopped = isinstance(event, HookEvent) and event.name in ("Stop", "StopFailure")
            if stopped or (isinstance(event, ScreenUpdate) and event.state is ScreenState.READY):
                self._turn_over()
                # Claude Code puts the interrupted prompt back into its input box a moment
                # after the first frame that reads ready: typed text must see it (else a
                # /clear was appended to it and submitted as a prompt).
                self._settle()
                return True
        return False

    def _turn_went_on(self) -> bool:
        """Whether a prompt went in after the turn end just read: a message the person sent
        during the turn, which Claude Code queues and submits the moment the turn ends
        (observed with 2.1.197: its turn's Stop follows the first one ~0.1 s later). Every
        event after that Stop is in the pushback (held while settling, or drained)."""
        return any(
            isinstance(e, HookEvent) and e.name == "UserPromptSubmit" for e in self._pushback
        )

    def _turn_over(self) -> None:
        """The turn is over, and no queued message has a turn to come."""
        self.in_turn = False
        self._queued = 0

    def _queued_turn_follows(self) -> bool:
        """Whether the Stop just read ends a turn that a queued message follows: Claude Code
        2.1.332 fires the message's UserPromptSubmit as it is queued, during the turn, then
        gives it a turn of its own (no hook marks its start) that ends with the next Stop."""
        if not self._queued:
            return False
        self._queued -= 1
        self.in_turn = True
        return True

    def _settle(self, quiet: bool = True) -> None:
        """Wait for the agent's output to settle on its final frame (see settle.py): the
        model shows every byte moved so far (else the batch that catches up posts a
        screen update, which wakes the wait) and reads as waiting; without `quiet`, with
        no quiet window: an agent that drew its reply before its hook draws its final frame
        when it is done with its hooks."""
        t = self.timings
        settled = settle_output(
            self._next,
            lambda: self.last_output,
            self._clock,
            t.settle if quiet else 0.0,
            t.settle_max,
            lambda: self._caught_up(0) and self._waits_now() and not self._hooks_shown(),
        )
        self._pushback.extend(settled.held)
        if not settled.done:
            self._log.emit(
                "warning",
                message=f"the agent's screen did not settle on the turn's final frame within "
                f"{t.settle_max:g}s: the supervisor sees it as it was",
            )

    def _catch_up(self) -> None:
        """Wait until the screen model shows all the output the relay moved (it may lag
        by seconds after a flood on a loaded machine), at most `timings.catch_up`."""
        if not self._caught_up(self.timings.catch_up):
            self._log.emit(
                "warning",
                message=f"the screen model had not caught up with the agent's output after "
                f"{self.timings.catch_up:g}s: the supervisor sees an older screen",
            )

    def hold(self, turn: TurnEnd, deadline: float | None = None) -> TurnEnd | None:
        """Before a decision, wait while the person has the agent: supervision paused, or
        their text in the input box. The turn end to decide on, or None when a turn
        started meanwhile (then the decision waits for its end).

        Raises TimeUp at `deadline`: the time budget runs on while the person has the agent.
        """
        self._drain()  # a stop key pressed while the supervisor was deciding ends it here
        if not self.person.paused and self._turn_went_on():
            return None
        if self.person.paused:
            while self.person.paused:
                self._wait_a_while(deadline)
            if not self._idle():
                return None
        if not self._wait_person_input(deadline):
            return None
        return turn

    def wait_turn_start(self, deadline: float | None = None) -> None:
        """Block (no stall time-out: a person may take long) until a turn starts that the
        person typed, or the agent asks; raises TimeUp at `deadline`."""
        while not self._asks:
            if deadline is not None and self._clock() >= deadline:
                raise TimeUp()
            event = self._next(deadline if deadline is not None else self._clock() + 3600)
            if isinstance(event, HookEvent) and event.name == "UserPromptSubmit":
                return
            if isinstance(event, ScreenUpdate) and (
                event.state is ScreenState.WORKING or not self.profile.uses_hooks
            ):
                return

    def shutdown(self, deadline: float | None = None) -> bool:
        """End the agent: its own exit command if it has one, else (or then) a hang-up.

        False when an agent with an exit command ignored it and had to be killed.
        """
        self._ending = True
        self._keep_last_screen()
        if self.exited is not None:
            return True
        try:
            self.settle_cost(deadline)  # the last turn's spend is in the run's figures
        except AgentExited:
            return True
        command = self.profile.exit_command
        if command is None or not self._wait_settled(deadline):
            self._kill()
            return command is None
        if not self._type_command(command, deadline):
            self._kill()
            return False
        deadline = self._cap(self._clock() + self.timings.exit, deadline)
        try:
            while self.exited is None and self._next(deadline) is not None:
                pass
        except AgentExited:
            return True
        self._kill()
        return False

    def _screen_tail(self, size: int, snap: ScreenSnapshot | None = None) -> str:
        """The end of the screen's text, redacted before it is cut: a secret that the cut
        (or a line wrap) split would not be seen in the part."""
        return self._log.redacted((snap or self.snapshot()).text())[-size:]

    def _keep_last_screen(self) -> None:
        """The screen as the run's work left it, before ptysup types /clear or /exit (whose
        menus would fill it): what a CI log shows of a failed run."""
        if self.last_screen is None:
            self.last_screen = self.snapshot()

    # -- internals -------------------------------------------------------------------
    def _answered_by_person(self, payload: dict[str, Any]) -> None:
        """A question ptysup did not answer was answered in the picker: log what."""
        ask = self._asked.pop(str(payload.get("tool_use_id", "")), None)
        if ask is None or not ask.decided:
            self._log.emit("answer", by="person", answers=person_answers(payload))

    def _record_cost(self, payload: dict[str, Any]) -> None:
        """Claude Code reports the session's cumulative cost (observed with 2.1.197: it
        carries on across /clear), so the agent's spend is the highest figure seen."""
        cost = payload.get("cost")
        total = cost.get("total_cost_usd") if isinstance(cost, dict) else None
        if isinstance(total, (int, float)) and not isinstance(total, bool) and total >= 0:
            if self._cost_base is None:
                self._cost_base = float(total) if self.reopened and not self._prompted else 0.0
            spent = float(total) - self._cost_base
            if spent > self.cost_usd:
                self.cost_usd = spent
                for hear in self.on_spend:
                    hear(spent)

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
        # E.g. the person pressed Esc: Claude Code sends no Stop then, and hands the queued
        # messages back to the input box.
        self._turn_over()
        snap = self.snapshot()
        error = self.profile.api_error(snap)
        if error:
            return TurnEnd(TurnEndKind.API_ERROR, error)
        return TurnEnd(TurnEndKind.SCREEN, self.activity.last_message)

    def _drain(self) -> None:
        """Observe every queued event now (a stop raises), keeping them all for later."""
        while True:
            try:
                event = self._queue.get_nowait()
            except queue.Empty:
                return
            self._pushback.append(event)
            self._observe(event)

    def _cap(self, deadline: float, cap: float | None) -> float:
        return deadline if cap is None else min(deadline, cap)

    def _wait_a_while(self, deadline: float | None) -> None:
        """Wait for the next event (at most RECHECK_S); TimeUp once `deadline` passed."""
        now = self._clock()
        if deadline is not None and now >= deadline:
            raise TimeUp()
        self._next(self._cap(now + RECHECK_S, deadline))

    def _idle_now(self) -> bool:
        """Whether the screen reads as waiting for input (always, without hooks: then only
        the quiet time tells)."""
        if not self.profile.uses_hooks:
            return True
        return self.profile.screen_state(self.snapshot()) is ScreenState.READY

    def _hooks_shown(self) -> bool:
        """Whether the screen says the agent's hooks still run (see `hooks_running`)."""
        running = self.profile.hooks_running
        return running is not None and any(running.match(x) for x in self.snapshot().lines)

    def _waits_now(self) -> bool:
        """Whether the screen reads as waiting for input or on a dialog: a turn end's final
        frame (aider signals both alike)."""
        return self._idle_now() or self.profile.screen_state(self.snapshot()) is ScreenState.DIALOG

    def _idle(self) -> bool:
        """Whether the agent waits for input now (no hooks: quiet for the idle time)."""
        if not self.profile.uses_hooks:
            return self._clock() >= self.last_output + self.timings.idle
        if not self._idle_now():
            return False
        # UserPromptSubmit comes before the screen shows the turn: a prompt just sent is a
        # turn in progress, unless the screen has stayed ready since (an Esc sends no Stop).
        return not self.in_turn or self._clock() >= self.last_output + self.timings.screen_grace

    def _wait_person_input(self, deadline: float | None) -> bool:
        """The person's text in the input box is never typed over: wait until they clear
        it (True) or submit it (False: their message started a turn).

        Only in a terminal, and only text typed after ptysup last typed counts as theirs;
        anything else in the box is ptysup's own (see _clear_leftover_input).
        """
        if not self.profile.uses_hooks:
            return True  # nothing can be read off a generic agent's screen
        prompts = self.person.prompts
        waiting = False
        while self.person.owns_input() and self.profile.input_has_text(self.snapshot()):
            if not waiting:
                waiting = True
                self._log.emit("person_input", state="typing")
            self._wait_a_while(deadline)
            if self.person.prompts != prompts:
                self._log.emit("person_input", state="submitted")
                return False
        if waiting:
            # An Enter empties the box a moment before Claude Code's UserPromptSubmit hook
            # arrives: only a box still empty after that moment was cleared by the person.
            grace = self._cap(self._clock() + SUBMIT_GRACE_S, deadline)
            while self.person.prompts == prompts and self._next(grace) is not None:
                pass
        if self.person.prompts != prompts:
            if waiting:
                self._log.emit("person_input", state="submitted")
            return False
        if waiting:
            self._log.emit("person_input", state="cleared")
        return True

    def _wait_settled(self, cap: float | None = None) -> bool:
        """Before typing into a hooked agent, let it get back to its input box.

        A dialog left open is dismissed first (Esc: Claude Code rejects the tool and waits
        for an instruction): typed text must never answer a dialog, since a digit there
        approves. False if the dialog would not go away (nothing may be typed then).
        """
        if not self.profile.uses_hooks:
            return True
        deadline = self._cap(self._clock() + self.timings.confirm, cap)
        for _ in range(MAX_DISMISSED):
            if self.profile.screen_state(self.snapshot()) is not ScreenState.DIALOG:
                break
            self._log.emit("dialog_dismissed", screen=self._screen_tail(1500))
            self._typist.key(self.profile.dismiss_key)
            if not self.profile.dismiss_reported:
                self._refused = self._approval or self._refused
            if not self._next_dialog(deadline):
                break
            deadline = self._cap(self._clock() + self.timings.confirm, cap)
        while self.state is not ScreenState.READY and self._clock() < deadline:
            self._next(deadline)
        if self.profile.screen_state(self.snapshot()) is ScreenState.DIALOG:
            self._log.emit("warning", message="a dialog is still open; nothing was typed")
            return False
        self._clear_leftover_input(deadline)
        return True

    def _next_dialog(self, deadline: float) -> bool:
        """After a dismissal: whether the screen left the dialog and then showed another
        (aider asks its confirmations one after another: a new file, then a command),
        rather than getting back to its input box. A dialog drawn on and on (Codex
        animates under one) is the same dialog until the screen has left it."""
        left = False
        while self.state is not ScreenState.READY and self._clock() < deadline:
            event = self._next(deadline)
            if isinstance(event, ScreenUpdate):
                if event.state is not ScreenState.DIALOG:
                    left = True
                elif left:
                    return True
        return False

    def _clear_leftover_input(self, deadline: float) -> None:
        """Text already in the input box would be sent along with ours: an interrupted
        prompt that Claude Code put back, or, when the run is ending (/clear, /exit), a
        person's half-typed line. Log it (so it is not lost), then clear the box. A
        person's text is never cleared before an instruction: submit() waits for it."""
        snap = self.snapshot()
        if not self.profile.input_has_text(snap) or not self.profile.clear_input_keys:
            return
        self._log.emit(
            "warning",
            message="the input box held text; cleared it before typing",
            text=self.profile.input_text(snap) or self._screen_tail(500, snap),
        )
        self._clear_input(deadline)

    def _clear_input(self, deadline: float) -> None:
        """Clear the input box (Claude Code: Esc Esc) and wait until it shows empty."""
        for key in self.profile.clear_input_keys:
            self._typist.key(key)
            self._typist.pause()
        while self.profile.input_has_text(self.snapshot()) and self._next(deadline) is not None:
            pass

    def _type_command(self, command: str, cap: float | None) -> bool:
        """Type a command into the agent's empty input box and submit it only once it shows
        there alone: text left in the box (a prompt Claude Code put back after an
        interrupt) would be sent with it as one prompt. Cleared and typed again once if it
        landed beside other text. False when nothing was submitted."""
        self.person.ptysup_types(command)
        if not self.profile.uses_hooks:
            self._typist.command(command)  # nothing can be read off a generic agent's box
            return True
        named = command.strip()
        for attempt in (1, 2):
            if self.profile.input_has_text(self.snapshot()):
                self._log.emit(
                    "warning",
                    message=f"the input box would not clear; {named} was not typed",
                    text=self.profile.input_text(self.snapshot()),
                )
                return False
            self._typist.keys(command)
            shown = self._shown_in_box(command, cap)
            if shown in (None, "", command.rstrip()):
                # Unreadable, or not drawn yet: an Enter in an empty box sends nothing.
                self._typist.enter()
                return True
            self._log.emit(
                "warning",
                message=f"{named} landed beside other text in the input box; cleared it",
                text=shown,
                attempt=attempt,
            )
            self._clear_input(self._cap(self._clock() + self.timings.confirm, cap))
        return False

    def _shown_in_box(self, command: str, cap: float | None) -> str | None:
        """The input box's text once it is more than a part of `command` just typed, or
        what it shows after `timings.landed`."""
        deadline = self._cap(self._clock() + self.timings.landed, cap)
        kept: list[AgentEvent] = []  # kept for later, as in _wait_landed
        command = command.rstrip()  # a trailing space (`/exit `) does not show on screen
        try:
            while (shown := self.profile.input_text(self.snapshot())) is not None:
                if not command.startswith(shown) or shown == command:
                    return shown
                if (event := self._next(deadline)) is None:
                    return shown
                if not isinstance(event, ScreenUpdate):
                    kept.append(event)
            return None
        finally:
            self._pushback.extend(kept)

    def _wait_landed(self, message: str) -> bool:
        """Wait until MESSAGE shows whole in the input box (at most `timings.pasted`);
        whether it does. Observed with Claude Code 2.1.197: for about a second after its
        input box first appears, an Enter that follows a paste within 0.1 s is dropped, so
        Enter waits for the text to show. Nothing can be read off a generic agent's box."""
        deadline = self._clock() + self.timings.pasted
        # Other events (the SessionStart hook comes ~0.25 s after the box is drawn) are
        # kept for later but do not end the wait: ending it let Enter follow the paste at
        # once, and Claude Code dropped it (the "typed text not confirmed" flake).
        kept: list[AgentEvent] = []
        try:
            while not self._shows(message):
                if self._clock() >= deadline:
                    return False
                event = self._next(deadline)
                if event is not None and not isinstance(event, ScreenUpdate):
                    kept.append(event)
            return True
        finally:
            self._pushback.extend(kept)

    def _shows(self, message: str) -> bool:
        """Whether the agent's input box shows MESSAGE, as the agent draws it (always, for
        an agent whose box cannot be read)."""
        if not self.profile.uses_hooks:
            return True
        shown = self.profile.input_text(self.snapshot())
        return shows(message, shown, self.profile.paste_placeholder)

    def _confirm_turn_started(self) -> HookEvent | ScreenUpdate | None:
        """The event that shows the agent started a turn on what was submitted, or None
        after `timings.confirm`."""
        deadline = self._clock() + self.timings.confirm
        while (event := self._next(deadline)) is not None:
            if isinstance(event, HookEvent) and event.name in ("UserPromptSubmit", "Stop"):
                if event.name == "Stop":
                    self._pushback.append(event)
                return event
            if isinstance(event, ScreenUpdate) and (
                # A dialog took the message (aider asks about a URL in it before the model
                # is called): another Enter would answer it.
                event.state in (ScreenState.WORKING, ScreenState.DIALOG)
                or not self.profile.uses_hooks
            ):
                return event
        return None

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
            if event.reply is not None:
                ask = self.profile.ask(event)
                if ask is not None:
                    self._asks.append(ask)
                    self._asked[ask.tool_use_id] = ask
                else:
                    event.reply.send("")  # a request nobody here answers: no opinion
        elif isinstance(event, AgentExit):
            self.exited = event
            raise AgentExited(event.status)
        elif isinstance(event, StopRequest):
            raise Interrupted(event.signum)
        elif (
            isinstance(event, PersonCommand)
            and event.command is KeyCommand.STOP
            and not self._ending
        ):
            raise PersonStopped()
        elif isinstance(event, HaltRequest) and not self._ending:
            raise Halted(event.reason)

    def _record_hook(self, event: HookEvent) -> None:
        self._hooks_heard = True
        p = event.payload
        if event.name == STATUS_LINE:
            self._record_cost(p)
            self._reports_cost = True
            self._turn_ended_at = None  # the spend so far is in
            return  # several per turn: not worth an event each
        if event.name == "Stop" and self._reports_cost:
            self._turn_ended_at = self._clock()  # its spend is reported a moment later
        if event.name in _APPROVAL_SETTLED:
            self._approval = None
        if event.name == "UserPromptSubmit":
            self._prompted = True
            if self.in_turn:
                self._queued += 1
        if event.name == self.profile.ready_hook:
            self._ready_heard = True
        if event.name in ("UserPromptSubmit", "Stop", "StopFailure"):
            self.in_turn = event.name == "UserPromptSubmit"
        target = _summary(p["tool_input"]) if p.get("tool_input") else None
        self._log.emit(
            "hook",
            name=event.name,
            session_id=p.get("session_id"),
            **{k: p[k] for k in _HOOK_FIELDS if k in p},
            **({"target": target} if target else {}),
        )
        if event.name == "PostToolUse" and p.get("tool_name") == ASK_TOOL:
            self._answered_by_person(p)
        if event.name in ("PostToolUse", "PostToolUseFailure"):
            status = "failed" if event.name == "PostToolUseFailure" else "ok"
            self.activity.tools.append(
                f"{p.get('tool_name', '?')}({_summary(p.get('tool_input'))}) → {status}"
                + _result(p)
            )
        elif event.name == "PermissionRequest":
            self._approval = f"{p.get('tool_name', '?')}({_summary(p.get('tool_input'))})"
            self.activity.tools.append(f"permission dialog for {self._approval}")
        elif event.name == "Stop":
            self.activity.last_message = str(p.get("last_assistant_message", ""))


def _approval_after(approval: HookEvent | None, event: HookEvent, person: bool) -> HookEvent | None:
    """The approval the agent waits on after hook EVENT: its PermissionRequest (only
    without a person at the terminal, whose dialog it stays), until the tool ran or the
    turn moved on."""
    if event.name == "PermissionRequest":
        return None if person else event
    if event.name in _APPROVAL_SETTLED:
        return None
    return approval


# The hooks after which no approval is waiting any more.
_APPROVAL_SETTLED = frozenset(
    {"PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "Stop", "StopFailure"}
)


def _dialog_drawn(profile: AgentProfile, snapshot: Callable[[], ScreenSnapshot]) -> bool:
    """Whether the agent's screen shows its dialog, drawn as a person would see it (Qwen
    Code's title says so ~0.15 s before the dialog's choices are drawn)."""
    snap = snapshot()
    return profile.screen_state(snap) is ScreenState.DIALOG and profile.blocker(snap) is not None


# Small fields of a hook payload worth keeping in the event log.
_HOOK_FIELDS = ("source", "reason", "tool_name", "error", "notification_type", "tokens")


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
