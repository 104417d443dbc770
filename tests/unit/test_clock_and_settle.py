"""The status line's clock ticks; a turn end waits for the agent's final frame."""

from __future__ import annotations

import threading
import time

import pytest

from ptysup.agents.claude.profile import ClaudeProfile
from ptysup.agents.events import (
    AgentEvent,
    HookEvent,
    ScreenState,
    ScreenUpdate,
    TurnEnd,
    TurnEndKind,
)
from ptysup.agents.session import AgentSession, Timings
from ptysup.agents.settle import settle_output
from ptysup.events import EventLog
from ptysup.terminal.inject import Typist
from ptysup.terminal.screen import ScreenSnapshot
from ptysup.terminal.status import StatusLine, StatusSink
from ptysup.terminal.ticker import Ticker
from tests.helpers import EventList, wait_for


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
    settled = settle_output(
        agent.next_event, lambda: agent.last_output, lambda: agent.now, 0.1, 1.0
    )
    assert agent.now == pytest.approx(0.16)  # 0.1 s after the last frame
    assert settled.held == [notice]  # kept for later, in order
    assert settled.done


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

    settled = settle_output(
        agent.next_event, lambda: agent.last_output, lambda: agent.now, 0.1, 1.0, done
    )
    assert agent.now == pytest.approx(0.4)  # the quiet window after the final frame
    assert settled.done


def test_settling_for_a_screen_that_never_reads_done_is_bounded() -> None:
    agent = FakeAgent([(0.02, screen(0.02))])
    settled = settle_output(
        agent.next_event, lambda: agent.last_output, lambda: agent.now, 0.1, 1.0, lambda: False
    )
    assert agent.now == 1.0
    assert not settled.done  # said, so the run can warn


RULE = "─" * 40
# Claude Code under load: its ✳ title written, the frame still that of the running hook.
HOOK_RUNNING = ScreenSnapshot(
    ("● Finished step 2.", "✶ Cascading… (running stop hook · 0s · ↓ 11 tokens)", RULE, "❯ ", RULE),
    "✳ Claude Code",
    (3, 2),
)
FINAL = ScreenSnapshot(
    ("● Finished step 2.", "✻ Churned for 1s", RULE, "❯ ", RULE), "✳ Claude Code", (3, 2)
)


@pytest.mark.parametrize("frame", [HOOK_RUNNING, FINAL], ids=["hook-running", "final"])
def test_a_turn_end_whose_final_frame_never_comes_says_so(frame: ScreenSnapshot) -> None:
    events = EventList()
    session = AgentSession(
        ClaudeProfile(),
        Typist(lambda _b: None, pause=lambda s: None),
        lambda: frame,
        EventLog([events]),
        Timings(settle=0.01, settle_max=0.2),
    )
    session.post(HookEvent("Stop", {"last_assistant_message": "Finished step 2."}, 0.0))
    start = time.monotonic()
    turn = session.wait_turn_end()
    assert isinstance(turn, TurnEnd) and turn.kind is TurnEndKind.STOP
    warnings = [e.fields["message"] for e in events.events if e.event == "warning"]
    if frame is FINAL:
        assert warnings == []
        assert time.monotonic() - start < 0.2
    else:  # waited the whole bound for the frame, then said the supervisor sees this one
        assert time.monotonic() - start >= 0.2
        assert warnings == [
            "the agent's screen did not settle on the turn's final frame within 0.2s: "
            "the supervisor sees it as it was"
        ]
