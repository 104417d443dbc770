"""An agent whose hooks never reach ptysup is noticed and said, once, and the run goes on
with its screen (issue 30: Gemini CLI skipped ptysup's settings file without a word)."""

from __future__ import annotations

import threading

from ptysup.agents.events import HookEvent, ScreenState, ScreenUpdate, TurnEnd, TurnEndKind
from ptysup.agents.gemini.profile import GeminiProfile
from ptysup.agents.session import AgentSession, Timings
from ptysup.events import EventLog
from ptysup.terminal.inject import Typist
from tests.helpers import EventList
from tests.unit.test_session_landing import TASK, FakeGemini


class Unhooked(FakeGemini):
    """Gemini CLI that reads no hook settings: Enter starts a turn on its screen only,
    which ends on its screen a moment later."""

    def write(self, data: bytes) -> None:
        if data != b"\r" or not self.box:
            super().write(data)
            return
        assert self.session is not None
        session = self.session
        self.enters.append(self.box)
        self.box = ""
        session.post(ScreenUpdate(ScreenState.WORKING, session.now()))
        session.post(ScreenUpdate(ScreenState.READY, session.now()))


def _session(agent: FakeGemini) -> tuple[AgentSession, EventList]:
    sink = EventList()
    session = AgentSession(
        GeminiProfile(),
        Typist(agent.write, pause=lambda s: None, bracketed=lambda: True),
        agent.snapshot,
        EventLog([sink]),
        Timings(landed=0.3, confirm=0.3, screen_grace=0.6),
    )
    agent.session = session
    session.state = ScreenState.READY
    return session, sink


def _said(sink: EventList) -> list[dict[str, object]]:
    return [e.fields for e in sink.events if e.event == "warning" and "missing" in e.fields]


def test_no_hook_after_the_first_prompt_is_said_once_and_the_screen_ends_turns() -> None:
    agent = Unhooked()
    session, sink = _session(agent)
    assert session.submit(TASK).confirmed  # its screen showed the turn
    turn = session.wait_turn_end()
    assert isinstance(turn, TurnEnd) and turn.kind is TurnEndKind.SCREEN  # the screen's
    [warning] = _said(sink)
    assert (warning["agent"], warning["missing"]) == ("gemini", "SessionStart")
    assert "its screen alone" in str(warning["message"])
    session.submit("again")
    session.wait_turn_end()
    assert len(_said(sink)) == 1  # said once


def test_an_agent_whose_hooks_come_is_not_warned_about() -> None:
    agent = FakeGemini()  # its Enter sends UserPromptSubmit
    session, sink = _session(agent)
    assert session.submit(TASK).confirmed
    turn = session.wait_turn_end()
    assert isinstance(turn, TurnEnd) and turn.kind is TurnEndKind.SCREEN
    assert _said(sink) == []


class SlowToStart(Unhooked):
    """Gemini CLI under load: it queues the first prompt while it starts, so its first
    hooks come seconds after its screen showed the turn, yet before the turn ends."""

    def write(self, data: bytes) -> None:
        if data == b"\r" and self.box:
            assert self.session is not None
            session = self.session
            late = HookEvent("SessionStart", {"session_id": "s"}, session.now())
            threading.Timer(0.4, session.post, (late,)).start()
        super().write(data)


def test_a_first_hook_that_comes_late_but_before_the_turn_ends_is_no_warning() -> None:
    agent = SlowToStart()
    session, sink = _session(agent)
    assert session.submit(TASK).confirmed
    session.wait_turn_end()
    assert _said(sink) == []
