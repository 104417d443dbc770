"""An approval dialog the agent announces: without a person at a terminal it ends the turn
as soon as it is drawn (the supervisor is asked at once); with one, it stays theirs. Once
dismissed, the model is told it was refused."""

from __future__ import annotations

from pathlib import Path

from ptysup.agents.claude.profile import ClaudeProfile
from ptysup.agents.events import HookEvent, ScreenState, ScreenUpdate, TurnEnd, TurnEndKind
from ptysup.agents.gemini.profile import GeminiProfile
from ptysup.agents.person import Person
from ptysup.agents.profile import AgentProfile
from ptysup.agents.session import REFUSED_NOTE, AgentSession, Timings
from ptysup.events import EventLog
from ptysup.terminal.inject import PASTE_END, PASTE_START, Typist
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


GEMINI = Path(__file__).resolve().parents[2] / "fixtures" / "gemini"


def _gemini_screen(name: str) -> ScreenSnapshot:
    lines = (GEMINI / f"{name}.txt").read_text(encoding="utf-8").splitlines()
    return ScreenSnapshot(tuple(line.ljust(100) for line in lines), "", (0, 0))


def _typed_screen(text: str) -> ScreenSnapshot:
    """Gemini CLI's screen with TEXT in its input box, one row per line."""
    lines = (GEMINI / "typed.txt").read_text(encoding="utf-8").splitlines()
    box = next(i for i, line in enumerate(lines) if line.strip().startswith("> be slow"))
    wrapped = [
        line[at : at + 90] for line in text.split("\n") for at in range(0, len(line) or 1, 90)
    ]
    rows = [(" > " if i == 0 else "   ") + line for i, line in enumerate(wrapped)]
    lines[box : box + 1] = rows
    return ScreenSnapshot(tuple(line.ljust(100) for line in lines), "", (0, 0))


def _typed_after_a_dismissal(profile: AgentProfile, drops: int = 0) -> bytes:
    """What ptysup types for `go on` after the supervisor's [CONTINUE] at an approval
    dialog that PROFILE's agent announced (the dialog is dismissed first); the agent
    drops the first DROPS pastes (they never show in its box: the message did not land,
    and ptysup types the next instruction, `go on`, after them)."""
    shown = [_gemini_screen("dialog_shell")]
    dropped = [0]
    written: list[bytes] = []
    clock = Tick(0.01)
    pasted: list[str] = []

    def write(data: bytes) -> None:
        written.append(data)
        if data == profile.dismiss_key:  # the dialog closes: the input box is back
            shown[0] = _gemini_screen("ready_empty")
            session.post(ScreenUpdate(ScreenState.READY, 0.0))
        elif data.startswith(PASTE_START) and dropped[0] < drops:
            dropped[0] += 1
        elif data.startswith(PASTE_START):  # the box shows the paste
            pasted.append(data[len(PASTE_START) : -len(PASTE_END)].decode())
            shown[0] = _typed_screen(pasted[-1])
            session.post(ScreenUpdate(ScreenState.READY, 0.0))
        elif data == b"\r":
            session.post(HookEvent("UserPromptSubmit", {"prompt": pasted[-1]}, 0.0))

    session = AgentSession(
        profile,
        Typist(write, pause=lambda s: None),
        lambda: shown[0],
        EventLog(),
        Timings(confirm=0.2, landed=0.05, pasted=0.2, settle=0.02, settle_max=0.1),
        clock=clock,
        person=Person(present=False, clock=clock),
    )
    asked = {"tool_name": "run_shell_command", "tool_input": {"command": "echo hi > f"}}
    session.post(HookEvent("PermissionRequest", asked, 0.0))
    session.post(ScreenUpdate(ScreenState.DIALOG, 0.0))
    assert session.wait_turn_end() == TurnEnd(TurnEndKind.DIALOG, dialog=True)
    for _ in range(drops):
        lost = session.submit("lost")
        assert not lost.confirmed and not lost.landed
    start = len(written)
    typed = session.submit("go on")
    assert typed.confirmed
    return b"".join(written[max(start, written.index(profile.dismiss_key) + 1) :])


def test_an_approval_the_agent_drops_when_dismissed_is_said_refused_in_the_next_message() -> None:
    # Gemini CLI 0.61 drops a call whose dialog got Esc: its model would never know.
    typed = _typed_after_a_dismissal(GeminiProfile()).decode()
    note = REFUSED_NOTE.format(asked="run_shell_command(echo hi > f)")
    assert f"{note}\n\ngo on" in typed


def test_the_refusal_is_said_in_the_next_message_that_lands_not_one_the_agent_dropped() -> None:
    typed = _typed_after_a_dismissal(GeminiProfile(), drops=1).decode()
    note = REFUSED_NOTE.format(asked="run_shell_command(echo hi > f)")
    assert f"{note}\n\ngo on" in typed


def test_an_agent_that_tells_its_model_gets_the_instruction_alone() -> None:
    # Qwen Code answers the call "[Operation Cancelled] Reason: User did not allow tool call".
    typed = _typed_after_a_dismissal(ReportingGemini()).decode()
    assert "go on" in typed and "refused" not in typed


class ReportingGemini(GeminiProfile):
    """Gemini CLI's screens, with an agent that tells its model of the refusal itself."""

    dismiss_reported = True
