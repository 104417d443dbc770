"""A command ptysup types (/exit, /clear) is submitted only once it shows alone in the input
box: never sent with a prompt Claude Code put back there."""

from __future__ import annotations

from ptysup.agents.claude.profile import ClaudeProfile
from ptysup.agents.session import AgentSession, Timings
from ptysup.events import EventLog
from ptysup.terminal.inject import Typist
from ptysup.terminal.screen import ScreenSnapshot
from tests.helpers import EventList, Tick

RULE = "─" * 40
ESC = b"\x1b"


class Box:
    """Claude Code's input box as a keyboard changes it: Esc Esc empties it (unless stuck),
    typed keys go after what it holds, Enter submits it."""

    def __init__(self, text: str = "", stuck: bool = False, restored: str = "") -> None:
        self.text = text
        self.stuck = stuck
        self.restored = restored  # put back in the box the moment ptysup types
        self.submitted: list[str] = []
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(data)
        if data == ESC:
            self.text = self.text if self.stuck else ""
        elif data == b"\r":
            self.submitted.append(self.text)
            self.text = ""
        else:
            self.text = self.restored + self.text + data.decode()
            self.restored = ""

    def snapshot(self) -> ScreenSnapshot:
        return ScreenSnapshot((RULE, f"❯ {self.text}", RULE), "✳ Claude Code", (1, 2))


def _session(box: Box, sink: EventList) -> AgentSession:
    return AgentSession(
        ClaudeProfile(),
        Typist(box.write, pause=lambda s: None),
        box.snapshot,
        EventLog([sink]),
        Timings(confirm=0.2, landed=0.2, exit=0.2, settle=0.02, settle_max=0.05),
        clock=Tick(0.01),
        kill=lambda: box.submitted.append("<killed>"),
    )


def test_a_prompt_put_back_in_the_box_is_cleared_and_kept_before_exit() -> None:
    box, sink = Box("implement feature X"), EventList()
    _session(box, sink).shutdown()
    # This fake does not exit on it. The space closes Claude Code's slash-command menu.
    assert box.submitted == ["/exit ", "<killed>"]
    [warning] = [e.fields for e in sink.events if e.event == "warning"]
    assert warning["text"] == "implement feature X"


def test_a_command_that_landed_beside_other_text_is_cleared_and_typed_again() -> None:
    # The prompt came back between the look at the empty box and the keys.
    box, sink = Box(restored="implement feature X"), EventList()
    assert _session(box, sink).command("/clear") is False  # no SessionStart in this fake
    assert box.submitted == ["/clear"]
    [warning] = [e.fields for e in sink.events if e.event == "warning"]
    assert warning["text"] == "implement feature X/clear"


def test_nothing_is_typed_into_a_box_that_will_not_clear() -> None:
    box, sink = Box("implement feature X", stuck=True), EventList()
    assert _session(box, sink).shutdown() is False
    assert box.submitted == ["<killed>"]
    assert not [w for w in box.writes if b"/exit" in w]
    messages = [e.fields["message"] for e in sink.events if e.event == "warning"]
    assert "the input box would not clear; /exit was not typed" in messages
