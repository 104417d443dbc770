"""An approval dialog the agent announces: without a person at a terminal it ends the turn
as soon as it is drawn (the supervisor is asked at once); with one, it stays theirs."""

from __future__ import annotations

from ptysup.agents.claude.profile import ClaudeProfile
from ptysup.agents.events import HookEvent, ScreenState, ScreenUpdate, TurnEnd, TurnEndKind
from ptysup.agents.person import Person
from ptysup.agents.session import AgentSession, Timings
from ptysup.events import EventLog
from ptysup.terminal.inject import Typist
from ptysup.terminal.screen import ScreenSnapshot
from tests.helpers import Tick

RULE = "─" * 40
SCREENS = {
    "working": ScreenSnapshot(("● Bash(touch x)", "esc to interrupt"), "⠂ Claude Code", (1, 0)),
    "dialog": ScreenSnapshot(
        ("Do you want to proceed?", "❯ 1. Yes", "  3. No", "Esc to cancel"),
        "✳ Claude Code",
        (3, 0),
    ),
    "ready": ScreenSnapshot((RULE, "❯ ", RULE), "✳ Claude Code", (1, 2)),
}
ASKED = HookEvent(
    "PermissionRequest", {"tool_name": "Bash", "tool_input": {"command": "touch x"}}, 0.0
)


def _session(shown: list[str], person: bool) -> AgentSession:
    clock = Tick(0.01)
    written: list[bytes] = []
    return AgentSession(
        ClaudeProfile(),
        Typist(written.append, pause=lambda s: None),
        lambda: SCREENS[shown[0]],
        EventLog(),
        Timings(turn=0.3, settle=0.02, settle_max=0.1),
        clock=clock,
        person=Person(present=person, clock=clock),
    )


def test_without_a_person_an_announced_dialog_ends_the_turn_once_drawn() -> None:
    shown = ["working"]
    session = _session(shown, person=False)
    session.post(ASKED)  # the hook comes before the dialog is drawn
    session.post(ScreenUpdate(ScreenState.WORKING, 0.0))
    shown[0] = "dialog"
    session.post(ScreenUpdate(ScreenState.DIALOG, 0.0))
    turn = session.wait_turn_end()
    assert turn == TurnEnd(TurnEndKind.DIALOG, dialog=True)
    assert session.activity.tools == ["permission dialog for Bash(touch x)"]
    assert session.now() < 0.3  # before --turn-timeout


def test_without_a_person_a_dialog_already_drawn_ends_the_turn_at_its_hook() -> None:
    shown = ["dialog"]
    session = _session(shown, person=False)
    session.post(ScreenUpdate(ScreenState.DIALOG, 0.0))
    session.post(ASKED)
    turn = session.wait_turn_end()
    assert isinstance(turn, TurnEnd) and (turn.kind, turn.dialog) == (TurnEndKind.DIALOG, True)


def test_a_dialog_answered_before_it_settles_is_no_turn_end() -> None:
    # A hook of the person's own may allow the tool: then the tool runs, and the turn ends
    # on its Stop as usual.
    shown = ["ready"]
    session = _session(shown, person=False)
    session.post(ASKED)
    session.post(ScreenUpdate(ScreenState.DIALOG, 0.0))  # drawn, and gone at once
    session.post(HookEvent("PostToolUse", {"tool_name": "Bash"}, 0.0))
    session.post(HookEvent("Stop", {"last_assistant_message": "ran it"}, 0.0))
    assert session.wait_turn_end() == TurnEnd(TurnEndKind.STOP, "ran it")


def test_a_dialog_on_screen_without_the_agent_s_signal_is_left_to_the_stall() -> None:
    # A picker a question left to the person, say: only an announced approval ends a turn.
    shown = ["dialog"]
    session = _session(shown, person=False)
    session.post(ScreenUpdate(ScreenState.DIALOG, 0.0))
    turn = session.wait_turn_end()
    assert isinstance(turn, TurnEnd) and (turn.kind, turn.dialog) == (TurnEndKind.STALLED, True)


def test_with_a_person_at_the_terminal_the_dialog_stays_theirs() -> None:
    shown = ["dialog"]
    session = _session(shown, person=True)
    session.post(ASKED)
    session.post(ScreenUpdate(ScreenState.DIALOG, 0.0))
    turn = session.wait_turn_end()
    assert isinstance(turn, TurnEnd) and turn.kind is TurnEndKind.STALLED
    assert session.now() >= 0.3  # only --turn-timeout ended it
