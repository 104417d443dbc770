"""The interrupt of a hard stop, confirmed by what the agent shows: opencode's second Esc
waits until its screen says the first one armed the interrupt, a press the agent missed is
pressed again, and the agent's own turn end confirms it as its screen does."""

from __future__ import annotations

from pathlib import Path

from ptysup.agents.claude.profile import ClaudeProfile
from ptysup.agents.events import HookEvent, ScreenState, ScreenUpdate
from ptysup.agents.opencode.profile import OpencodeProfile
from ptysup.agents.profile import AgentProfile
from ptysup.agents.session import AgentSession, Timings
from ptysup.events import EventLog
from ptysup.terminal.inject import Typist
from ptysup.terminal.screen import ScreenSnapshot
from tests.helpers import EventList, Tick

SCREENS = Path(__file__).resolve().parents[2] / "fixtures" / "opencode"
ESC = b"\x1b"


def _screen(name: str) -> ScreenSnapshot:
    lines = (SCREENS / f"{name}.txt").read_text(encoding="utf-8").splitlines()
    return ScreenSnapshot(tuple(line.ljust(100) for line in lines), "OC | x", (0, 0))


WORKING = _screen("working")
# opencode 1.18 after a first Esc: the footer asks for a second one.
ARMED = ScreenSnapshot(
    tuple(line.replace("esc interrupt", "esc again to interrupt") for line in WORKING.lines),
    WORKING.title,
    WORKING.cursor,
)
READY = _screen("session_empty")


class Agent:
    """An agent whose screen answers the interrupt key as SCRIPT says, one step per press
    (None: the press was missed, the screen stays as it is)."""

    def __init__(self, script: list[ScreenSnapshot | None], turn_end: bool = False) -> None:
        self.shown = WORKING
        self.script = script
        self.turn_end = turn_end  # the last press ends the turn with the agent's own Stop
        self.written: list[bytes] = []
        self.session: AgentSession | None = None
        self.clock = Tick(0.05)
        self.late: tuple[float, ScreenSnapshot] | None = None  # shown from then on, unasked

    def look(self) -> ScreenSnapshot:
        if self.late is not None and self.clock.t >= self.late[0]:
            self.shown, self.late = self.late[1], None
        return self.shown

    def write(self, data: bytes) -> None:
        self.written.append(data)
        assert self.session is not None
        step = self.script.pop(0) if self.script else None
        if step is not None:
            self.shown = step
            state = self.session.profile.screen_state(step)
            self.session.post(ScreenUpdate(state, self.session.now()))
        if self.turn_end and not self.script:
            self.session.post(HookEvent("Stop", {"last_assistant_message": ""}, 0.0))


def _interrupt(profile: AgentProfile, agent: Agent) -> tuple[bool | None, EventList]:
    events = EventList()
    log = EventLog()
    log.add(events)
    session = AgentSession(
        profile,
        Typist(agent.write, pause=lambda s: None),
        agent.look,
        log,
        Timings(confirm=0.4, settle=0.01, settle_max=0.05),
        clock=agent.clock,
    )
    agent.session = session
    session.in_turn = True
    return session.interrupt(), events


def test_opencode_s_second_esc_waits_for_the_first_to_arm_the_interrupt() -> None:
    # Under load the first Esc is seen late: a second one a fixed moment after it came
    # too soon (opencode read the two as one key, and its turn went on).
    agent = Agent([None, ARMED, READY])  # the first press is missed
    stopped, events = _interrupt(OpencodeProfile(), agent)
    assert stopped is True
    assert agent.written == [ESC, ESC, ESC]  # missed, pressed again, then the second
    (again,) = [e for e in events.events if e.event == "warning"]
    assert "pressed again" in again.fields["message"]


def test_opencode_s_interrupt_is_two_presses_when_none_is_missed() -> None:
    agent = Agent([ARMED, READY])
    assert _interrupt(OpencodeProfile(), agent)[0] is True
    assert agent.written == [ESC, ESC]


def test_a_first_press_drawn_late_is_followed_by_its_second_press_alone() -> None:
    # Starved (CI, under load), opencode drew the first Esc's answer only after the time it
    # was given: pressing both again made three presses, the turn went on armed.
    agent = Agent([None, READY])
    agent.late = (0.3, ARMED)  # after the half of the 0.4 s confirmation, before the end
    stopped, events = _interrupt(OpencodeProfile(), agent)
    assert stopped is True
    assert agent.written == [ESC, ESC]
    assert [e.fields["attempt"] for e in events.events if e.event == "warning"] == [1]


def test_the_agent_s_own_turn_end_confirms_the_interrupt() -> None:
    # The turn stopped, and the agent said so before its screen did.
    agent = Agent([None], turn_end=True)
    agent.shown = ScreenSnapshot(("● Working", "esc to interrupt"), "⠂ Claude Code", (1, 0))
    assert _interrupt(ClaudeProfile(), agent)[0] is True
    assert agent.written == [ESC]  # one key is never pressed twice


def test_a_turn_that_goes_on_is_not_said_stopped() -> None:
    agent = Agent([ARMED, ARMED, ARMED, ARMED])  # every second press is missed
    assert _interrupt(OpencodeProfile(), agent)[0] is False


def test_an_interrupt_waits_until_a_suspended_claude_code_has_its_keyboard_back() -> None:
    # Continued after Ctrl-Z, Claude Code 2.1.332 switches bracketed paste on again only
    # once drawn, about a second later: an Esc before that lands in the terminal's cooked
    # mode, echoed, and the turn goes on.
    looks = iter([False, False])  # bracketed paste still off at the first two looks
    keyboard: list[bool] = []

    def bracketed() -> bool:
        keyboard.append(next(looks, True))
        return keyboard[-1]

    agent = Agent([None], turn_end=True)
    agent.shown = ScreenSnapshot(("● Working", "esc to interrupt"), "⠂ Claude Code", (1, 0))
    written_with: list[bool] = []
    write = agent.write

    def typed(data: bytes) -> None:
        written_with.append(keyboard[-1])
        write(data)

    session = AgentSession(
        ClaudeProfile(),
        Typist(typed, pause=lambda s: None, bracketed=bracketed),
        lambda: agent.shown,
        EventLog(),
        Timings(confirm=0.4, settle=0.01, settle_max=0.05),
        clock=Tick(0.05),
    )
    agent.session = session
    session.in_turn = True
    for _ in range(2):  # the screen drawn again, a frame at a time
        session.post(ScreenUpdate(ScreenState.WORKING, session.now()))
    assert session.interrupt() is True
    assert agent.written == [ESC] and written_with == [True]
