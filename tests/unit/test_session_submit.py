"""AgentSession.submit against a scripted Claude screen: the Enter waits for the paste to
land, whatever else the agent reports meanwhile.

The cause of the "typed text not confirmed" flake (issue 11): Claude Code 2.1.197 sends
its SessionStart hook a few hundred ms after its input box is drawn (observed: 0.25 s
after agent_ready). When it arrived while ptysup waited for the pasted task to show, the
wait ended at once, Enter followed the paste within 0.1 s, Claude Code dropped it (its
first second), and only the second Enter, 3 s later, started the turn; under load the
second one could be lost too.
"""

from __future__ import annotations

import threading

from ptysup.agents.claude.profile import ClaudeProfile
from ptysup.agents.events import HookEvent, ScreenState, ScreenUpdate, TurnEnd, TurnEndKind
from ptysup.agents.session import AgentSession, Timings
from ptysup.events import EventLog
from ptysup.terminal.inject import PASTE_START, Typist
from ptysup.terminal.screen import ScreenSnapshot
from tests.helpers import EventList

RULE = "─" * 40
LAND_AFTER_S = 0.3  # how long the scripted agent takes to draw the pasted text


class ScriptedClaude:
    """A Claude Code screen that shows a paste LAND_AFTER_S after it, and a hook that
    fires between the paste and its drawing."""

    def __init__(self) -> None:
        self.session: AgentSession | None = None
        self.box = ""
        self.enters: list[str] = []  # the input box as it stood at each Enter
        self.hook_name = "SessionStart"

    def snapshot(self) -> ScreenSnapshot:
        return ScreenSnapshot((RULE, f"❯ {self.box}"), "✳ Claude Code", (1, 2))

    def write(self, data: bytes) -> None:
        assert self.session is not None
        session = self.session
        if data.startswith(PASTE_START):
            session.post(HookEvent(self.hook_name, {"session_id": "s"}, session.now()))
            text = data[len(PASTE_START) : -6].decode()

            def land() -> None:
                self.box = text
                session.post(ScreenUpdate(ScreenState.READY, session.now()))

            threading.Timer(LAND_AFTER_S, land).start()
        elif data == b"\r":
            self.enters.append(self.box)
            if self.box:  # Claude Code takes the prompt: the turn starts
                session.post(HookEvent("UserPromptSubmit", {}, session.now()))


def _session(agent: ScriptedClaude) -> tuple[AgentSession, EventList]:
    sink = EventList()
    session = AgentSession(
        ClaudeProfile(),
        Typist(agent.write, pause=lambda s: None),
        agent.snapshot,
        EventLog([sink]),
        Timings(landed=5.0, confirm=5.0),
    )
    agent.session = session
    session.state = ScreenState.READY
    return session, sink


def test_a_hook_during_the_paste_does_not_cut_the_wait_for_the_text_to_land() -> None:
    agent = ScriptedClaude()
    session, sink = _session(agent)
    result = session.submit("implement feature X")
    assert agent.enters == ["implement feature X"]  # one Enter, after the text showed
    assert result.confirmed and result.attempts == 1
    assert not [e for e in sink.events if e.event == "warning"]
    # the hook that arrived meanwhile was not lost: it is still there for the session
    names = [e.fields["name"] for e in sink.events if e.event == "hook"]
    assert names.count("SessionStart") == 1


def test_a_prompt_typed_after_a_turn_that_ended_without_a_stop_is_not_a_queued_one() -> None:
    # A stall or a dialog turned down ends a turn with no Stop. The prompt ptysup types
    # next starts the turn that ends at the next Stop: it is no message queued behind the
    # old turn (Claude Code 2.1.332 fires those prompts' hook at once, mid-turn).
    agent = ScriptedClaude()
    session, _ = _session(agent)
    session.post(HookEvent("UserPromptSubmit", {"prompt": "the task"}, session.now()))
    session.wait_turn_start()  # the task's turn: it ends with no Stop
    assert session.submit("go on").confirmed
    session.post(HookEvent("Stop", {"last_assistant_message": "went on"}, session.now()))
    # Read as queued, the prompt's Stop would be skipped for a second that never comes.
    assert session.wait_turn_end(session.now() + 5) == TurnEnd(TurnEndKind.STOP, "went on")
