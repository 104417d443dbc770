"""The status line's clock ticks; a turn end waits for the agent's final frame."""

from __future__ import annotations

import threading

import pytest

from ptysup.agents.events import AgentEvent, HookEvent, ScreenState, ScreenUpdate
from ptysup.agents.settle import settle_output
from ptysup.events import EventLog
from ptysup.terminal.status import StatusLine, StatusSink
from ptysup.terminal.ticker import Ticker
from tests.helpers import wait_for


def test_a_tick_redraws_only_when_the_elapsed_time_changed() -> None:
    pokes: list[int] = []
    line = StatusLine(lambda b: None, 10, 80, clock=lambda: 0.0)
    t = [100.0]
    sink = StatusSink(line, lambda: pokes.append(1), clock=lambda: t[0])
    EventLog([sink]).emit("inject", kind="task", text="x")
    assert line.text.startswith("ptysup 0/0 · 0s · agent working") and len(pokes) == 1
    t[0] = 100.4
    sink.tick()
    assert len(pokes) == 1  # still 0s: nothing to redraw
    t[0] = 117.0
    sink.tick()
    assert "· 17s · agent working" in line.text and len(pokes) == 2


def test_the_ticker_calls_back_until_stopped() -> None:
    ticks: list[int] = []
    ticker = Ticker(lambda: ticks.append(1), interval=0.01)
    ticker.start()
    wait_for(lambda: len(ticks) >= 3, 5, "three ticks")
    ticker.stop()
    after = len(ticks)
    assert not any(t.name == "ptysup-ticker" and t.is_alive() for t in threading.enumerate())
    assert len(ticks) == after


class FakeAgent:
    """A queue of (arrival time, event) read against a fake clock."""

    def __init__(self, events: list[tuple[float, AgentEvent]]) -> None:
        self.now = 0.0
        self.last_output = 0.0
        self._events = events

    def next_event(self, deadline: float) -> AgentEvent | None:
        if self._events and self._events[0][0] <= deadline:
            at, event = self._events.pop(0)
            self.now = max(self.now, at)
            if isinstance(event, ScreenUpdate):
                self.last_output = event.ts
            return event
        self.now = deadline
        return None


def screen(ts: float) -> ScreenUpdate:
    return ScreenUpdate(ScreenState.READY, ts)


def test_settling_waits_for_the_frame_drawn_after_the_hook() -> None:
    notice = HookEvent("Notification", {}, 0.05)
    agent = FakeAgent([(0.03, screen(0.03)), (0.05, notice), (0.06, screen(0.06))])
    held = settle_output(agent.next_event, lambda: agent.last_output, lambda: agent.now, 0.1, 1.0)
    assert agent.now == pytest.approx(0.16)  # 0.1 s after the last frame
    assert held == [notice]  # kept for later, in order


def test_settling_waits_a_quiet_window_even_without_output() -> None:
    agent = FakeAgent([])
    settle_output(agent.next_event, lambda: agent.last_output, lambda: agent.now, 0.1, 1.0)
    assert agent.now == 0.1


def test_settling_is_bounded_for_an_agent_that_keeps_drawing() -> None:
    agent = FakeAgent([(n * 0.05, screen(n * 0.05)) for n in range(1, 100)])
    settle_output(agent.next_event, lambda: agent.last_output, lambda: agent.now, 0.1, 1.0)
    assert agent.now == 1.0


def test_settling_waits_for_the_screen_to_read_as_done() -> None:
    # Claude Code's `running stop hook` frame, then a quiet spell longer than the window
    # while its hook process exits, then the final frame (✳ title, `Worked for`).
    agent = FakeAgent([(0.02, screen(0.02)), (0.3, screen(0.3))])

    def done() -> bool:
        return agent.last_output >= 0.3

    settle_output(agent.next_event, lambda: agent.last_output, lambda: agent.now, 0.1, 1.0, done)
    assert agent.now == pytest.approx(0.4)  # the quiet window after the final frame


def test_settling_for_a_screen_that_never_reads_done_is_bounded() -> None:
    agent = FakeAgent([(0.02, screen(0.02))])
    settle_output(
        agent.next_event, lambda: agent.last_output, lambda: agent.now, 0.1, 1.0, lambda: False
    )
    assert agent.now == 1.0
