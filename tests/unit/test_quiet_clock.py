"""A generic agent's turn ends on the quiet of the bytes the relay moves, not of the screen
model's updates (which lag the relay under a flood on a loaded machine), and the screen
it ends on shows every one of those bytes."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator

import pytest

from ptysup.agents.events import TurnEnd, TurnEndKind
from ptysup.agents.generic.profile import GenericProfile
from ptysup.agents.session import AgentSession, Timings
from ptysup.events import EventLog
from ptysup.terminal.inject import Typist
from ptysup.terminal.relay import OutputTime, Relay, RelayHandlers
from ptysup.terminal.screen import ScreenFeeder
from tests.helpers import EventList, GatedModel
from tests.pty.test_relay import PipeAgent

IDLE = 0.3  # the agent's quiet that ends its turn (--idle)
LINES = 60
LAST = b"the last line\r\n"


class Rig:
    """The relay moving a pipe's output to a feeder whose model is stuck until the gate
    opens: a screen model that lags the relay as far as a model can."""

    def __init__(self) -> None:
        self.agent = PipeAgent()
        self.model = GatedModel(24, 80)
        self.feeder = ScreenFeeder(self.model, lambda: None)
        self.moved = OutputTime()
        self._wake_r, self._wake_w = os.pipe()
        self._sig_r, self._sig_w = os.pipe()
        handlers = RelayHandlers(
            self.feeder.put, lambda: None, lambda _s: None, lambda _r, _c: None
        )
        self._relay = Relay(
            self.agent, handlers, signal_fd=self._sig_r, wake_fd=self._wake_r, moved=self.moved
        )
        self._thread = threading.Thread(target=self._relay.run)

    def start(self) -> None:
        self.feeder.start()
        self._thread.start()

    def close(self) -> None:
        os.write(self._wake_w, b"x")
        self._thread.join(timeout=10)
        self.model.gate.set()
        self.feeder.stop()
        for fd in (self.agent.fd, self.agent.w, self._wake_r, self._wake_w):
            os.close(fd)
        for fd in (self._sig_r, self._sig_w):
            os.close(fd)


@pytest.fixture
def rig() -> Iterator[Rig]:
    made = Rig()
    made.start()
    yield made
    made.close()


def print_for_a_while(agent: PipeAgent, ended: list[float]) -> None:
    """The agent: a line every 20 ms for over a second (four times --idle), then its last."""
    for n in range(LINES):
        os.write(agent.w, b"line %d\r\n" % n)
        time.sleep(0.02)  # the agent's own pace, not a wait of the test
    os.write(agent.w, LAST)
    ended.append(time.monotonic())


@pytest.mark.parametrize("catches_up", [True, False], ids=["model-catches-up", "model-stuck"])
def test_a_quiet_turn_end_waits_for_the_relays_quiet_and_the_models_last_byte(
    rig: Rig, catches_up: bool
) -> None:
    def caught_up(timeout: float) -> bool:
        if catches_up:
            rig.model.gate.set()  # the model lagged until the turn's end was near
        return rig.feeder.caught_up(timeout)

    events = EventList()
    session = AgentSession(
        GenericProfile(),
        Typist(lambda _b: None, pause=lambda s: None),
        rig.model.snapshot,
        EventLog([events]),
        Timings(idle=IDLE, catch_up=0.5),
        moved=rig.moved,
        caught_up=caught_up,
    )
    ended: list[float] = []
    agent = threading.Thread(target=print_for_a_while, args=(rig.agent, ended))
    agent.start()
    try:
        turn = session.wait_turn_end()
        at = time.monotonic()
    finally:
        agent.join()
    assert turn == TurnEnd(TurnEndKind.QUIET)
    assert ended and at >= ended[0] + IDLE  # never while the agent still printed
    shown = session.snapshot().text()
    warnings = [e.fields["message"] for e in events.events if e.event == "warning"]
    if catches_up:
        assert shown.endswith("line 59\nthe last line"), shown
        assert warnings == []
    else:  # the supervisor is told nothing wrong silently: the run says so
        assert "the last line" not in shown
        assert warnings == [
            "the screen model had not caught up with the agent's output after 0.5s: "
            "the supervisor sees an older screen"
        ]
