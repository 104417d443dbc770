"""AgentSession where features meet: a plan's mid-run /clear and the stop key, and the
agent's cost: in a reopened conversation, and reported a moment after a turn ends."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ptysup.agents.claude.profile import ClaudeProfile
from ptysup.agents.events import (
    HookEvent,
    PersonCommand,
    PersonStopped,
    ScreenState,
    ScreenUpdate,
    TimeUp,
    TurnEnd,
    TurnEndKind,
)
from ptysup.agents.gemini.profile import GeminiProfile
from ptysup.agents.hookchannel import STATUS_LINE
from ptysup.agents.session import AgentSession, Timings
from ptysup.events import EventLog
from ptysup.redact import Redactor
from ptysup.terminal.inject import Typist
from ptysup.terminal.keys import KeyCommand
from ptysup.terminal.screen import ScreenSnapshot
from tests.helpers import EventList, Tick

RULE = "─" * 40
READY = ScreenSnapshot((RULE, "❯ ", RULE), "✳ Claude Code", (1, 2))


def _session(written: list[bytes] | None = None, **timings: float) -> AgentSession:
    sink = written if written is not None else []
    return AgentSession(
        ClaudeProfile(),
        Typist(sink.append, pause=lambda s: None),
        lambda: READY,
        EventLog(),
        Timings(confirm=0.2, landed=0.2, settle=0.02, settle_max=0.05, **timings),
        clock=Tick(0.01),
    )


@pytest.mark.parametrize("final", [False, True])
def test_only_a_final_clear_turns_the_stop_key_off(final: bool) -> None:
    written: list[bytes] = []
    session = _session(written)
    cleared = session.clear(final=final)
    assert cleared is not None and cleared.text == "/clear" and b"/clear" in written
    session.post(PersonCommand(KeyCommand.STOP, 0.0))
    if final:  # the run is ending anyway: the key changes nothing more
        session.pause(0.5)
    else:  # a plan's step cleared the context: the person can still stop the run
        with pytest.raises(PersonStopped):
            session.pause(0.5)


def _cost(total: float) -> HookEvent:
    return HookEvent(STATUS_LINE, {"cost": {"total_cost_usd": total}}, 0.0)


def test_the_agent_s_cost_is_the_highest_figure_it_reported() -> None:
    session = _session()
    for total in (0.0, 0.02, 0.05, 0.04):
        session.post(_cost(total))
    session.pause(0.5)
    assert session.cost_usd == 0.05


def test_a_reopened_conversation_counts_only_what_this_part_spends() -> None:
    # Claude Code restores the spend it saved at its last graceful exit on --resume, and
    # shows it before its first prompt; the earlier part counted that already.
    session = _session()
    session.reopened = True
    session.post(_cost(0.30))
    session.post(HookEvent("UserPromptSubmit", {"prompt": "go on"}, 0.0))
    session.post(_cost(0.32))
    session.pause(0.5)
    assert session.cost_usd == pytest.approx(0.02)


def test_a_reopened_conversation_first_seen_after_a_prompt_counts_from_zero() -> None:
    session = _session()
    session.reopened = True
    session.post(HookEvent("UserPromptSubmit", {"prompt": "go on"}, 0.0))
    session.post(_cost(0.01))
    session.pause(0.5)
    assert session.cost_usd == 0.01


def _stop() -> HookEvent:
    return HookEvent("Stop", {"last_assistant_message": "done"}, 0.0)


def _ended_turn(session: AgentSession) -> None:
    """A turn Claude Code ended, its spend so far reported before it."""
    session.post(_cost(0.01))
    session.post(_stop())
    assert session.wait_turn_end() == TurnEnd(TurnEndKind.STOP, "done")
    assert session.cost_usd == 0.01


def test_settle_cost_waits_for_the_report_of_the_turn_and_keeps_other_events() -> None:
    session = _session()
    _ended_turn(session)
    session.post(_stop())  # a later event the wait must not swallow
    session.post(_cost(0.05))  # the turn's last request, reported after its Stop
    session.settle_cost()
    assert session.cost_usd == 0.05
    assert session.wait_turn_end() == TurnEnd(TurnEndKind.STOP, "done")  # kept, in order


def test_settle_cost_gives_up_after_cost_report_seconds() -> None:
    session = _session(cost_report=0.05)
    _ended_turn(session)
    session.settle_cost()  # no report comes: the figure stays as it was
    assert session.cost_usd == 0.01
    session.post(_cost(0.05))
    session.settle_cost()  # nothing pending any more: it does not wait for this one
    assert session.cost_usd == 0.01


def test_an_agent_that_never_reported_its_spend_is_not_waited_for() -> None:
    session = _session()
    session.post(_stop())
    assert session.wait_turn_end().kind is TurnEndKind.STOP  # type: ignore[union-attr]
    session.post(_cost(0.05))
    session.settle_cost()
    assert session.cost_usd == 0.0  # not looked at: nothing was pending


def test_ending_the_agent_collects_the_last_turns_spend_first() -> None:
    # The screen already reads ready, so nothing else waits before /exit is typed: only
    # settling the cost first takes the report in while the agent can still send it.
    typed_at: list[float] = []
    session = AgentSession(
        ClaudeProfile(),
        Typist(lambda b: typed_at.append(session.cost_usd), pause=lambda s: None),
        lambda: READY,
        EventLog(),
        Timings(confirm=0.2, landed=0.2, settle=0.02, settle_max=0.05, exit=0.05),
        clock=Tick(0.01),
    )
    session.post(ScreenUpdate(ScreenState.READY, 0.0))
    _ended_turn(session)
    session.post(_cost(0.05))
    session.shutdown()
    assert typed_at and typed_at[0] == 0.05  # known before `/exit` went to the agent


def _said(text: str) -> HookEvent:
    return HookEvent("Stop", {"last_assistant_message": text}, 0.0)


def _prompt(text: str) -> HookEvent:
    return HookEvent("UserPromptSubmit", {"prompt": text}, 0.0)


def test_a_prompt_queued_during_the_turn_makes_its_turn_the_one_that_ends() -> None:
    # Claude Code submits a message sent during a turn as that turn ends: two Stops.
    session = _session()
    for event in (_said("first turn"), _prompt("steer"), _said("queued turn")):
        session.post(event)
    assert session.wait_turn_end() == TurnEnd(TurnEndKind.STOP, "queued turn")
    turn = TurnEnd(TurnEndKind.STOP, "queued turn")
    assert session.hold(turn) == turn  # nothing left over to end the next turn early


def test_a_prompt_queued_with_its_hook_at_once_makes_its_turn_the_one_that_ends() -> None:
    # Claude Code 2.1.332 fires a queued message's UserPromptSubmit as it is queued, during
    # the turn; the message's own turn follows (no hook marks its start) with a second Stop.
    session = _session()
    events = (_prompt("the task"), _prompt("steer"), _said("first turn"), _said("queued turn"))
    for event in events:
        session.post(event)
    assert session.wait_turn_end() == TurnEnd(TurnEndKind.STOP, "queued turn")
    turn = TurnEnd(TurnEndKind.STOP, "queued turn")
    assert session.hold(turn) == turn
    # Both Stops were read: none is left over to end the next turn at once.
    with pytest.raises(TimeUp):
        session.wait_turn_end(session.now() + 0.5)


def test_a_prompt_arriving_after_the_turn_end_holds_the_decision_back() -> None:
    session = _session()
    session.post(_said("first turn"))
    turn = session.wait_turn_end()
    assert turn == TurnEnd(TurnEndKind.STOP, "first turn")
    session.post(_prompt("steer"))  # queued during the turn, submitted a moment after it
    assert session.hold(turn) is None  # decided at the end of the person's turn
    session.post(_said("queued turn"))
    assert session.wait_turn_end() == TurnEnd(TurnEndKind.STOP, "queued turn")


def test_after_a_signal_the_spend_reported_meanwhile_is_collected() -> None:
    session = _session(cost_report=0.5)
    _ended_turn(session)  # the loop then waited on something else (a verify command)
    session.post(_cost(0.03))  # unread
    session.collect_cost()
    assert session.cost_usd == 0.03
    session.post(_stop())  # a turn that has just ended: its report comes a moment later
    session.post(_cost(0.07))
    session.collect_cost()
    assert session.cost_usd == 0.07


def test_the_input_box_s_text_is_read_whole_only_up_to_its_closing_rule() -> None:
    profile = ClaudeProfile()
    box = (RULE, "❯ first line of mine", "  and the second", RULE, "  ? for shortcuts")
    snap = ScreenSnapshot(box, "✳ Claude Code", (1, 2))
    assert profile.input_text(snap) == "first line of mine\nand the second"
    cut = ScreenSnapshot(box[:3], "✳ Claude Code", (1, 2))  # no closing rule: maybe the footer
    assert profile.input_text(cut) == "first line of mine"
    assert profile.input_text(READY) == ""


def test_the_placeholder_of_an_empty_input_box_is_no_text_in_it() -> None:
    # Claude Code 2.1.332: the empty box shows a dimmed hint after an API error, and
    # while a message the person sent during the turn waits its turn.
    profile = ClaudeProfile()
    for hint in ("Resend your message to try again", "Press up to edit queued messages"):
        box = (RULE, f"❯ {hint}", RULE, "  ⏸ manual mode on")
        snap = ScreenSnapshot(box, "✳ Claude Code", (1, 2))
        assert profile.input_text(snap) == "" and not profile.input_has_text(snap)
    typed = (RULE, "❯ Resend your message to try again, please", RULE)
    assert profile.input_text(ScreenSnapshot(typed, "✳ Claude Code", (1, 2))) == (
        "Resend your message to try again, please"
    )


def test_text_cleared_from_the_input_box_is_kept_in_the_warning() -> None:
    sink = EventList()
    box = (RULE, "❯ half a thought of mine", "  over two lines", RULE, "  ? for shortcuts")
    screens = [ScreenSnapshot(box, "✳ Claude Code", (1, 2))]
    session = AgentSession(
        ClaudeProfile(),
        Typist(lambda b: screens.append(READY) if b == b"\x1b" else None, pause=lambda s: None),
        lambda: screens[-1],
        EventLog([sink]),
        Timings(confirm=0.2, landed=0.2, settle=0.02, settle_max=0.05),
        clock=Tick(0.01),
    )
    session.post(ScreenUpdate(ScreenState.READY, 0.0))
    session.clear()
    [warning] = [e.fields for e in sink.events if e.event == "warning"]
    assert warning["text"] == "half a thought of mine\nover two lines"


KEY = "sk-ant-api03-" + "Rt5Yu7Io9Pa2Sd4Fg6Hj8Kl0Zx" * 3  # made up, 91 characters


def test_a_stalled_turn_s_screen_is_redacted_before_it_is_cut() -> None:
    # The detail is the screen's last 2000 characters: this cut falls 40 into the key.
    filler = ("." * 99 + "\n") * 19 + "." * (2000 - 40 - 1 - 19 * 100)
    screen = ScreenSnapshot((f"● {KEY}", *filler.split("\n")), "✳ Claude Code", (20, 0))
    assert screen.text()[-2000:].startswith(KEY[-40:])
    written: list[bytes] = []
    session = AgentSession(
        ClaudeProfile(),
        Typist(written.append, pause=lambda s: None),
        lambda: screen,
        EventLog(redact=Redactor()),
        Timings(turn=0.5),
        clock=Tick(0.01),
    )
    turn = session.wait_turn_end()
    assert isinstance(turn, TurnEnd) and turn.kind is TurnEndKind.STALLED
    assert KEY[-20:] not in turn.detail and turn.detail.endswith("." * 50), turn.detail[:200]


AIDER_SCREENS = {
    "prompt": ScreenSnapshot((RULE, "diff> ", ""), "", (1, 6)),
    "dialog": ScreenSnapshot(("out.txt", "Create new file? (Y)es/(N)o [Yes]: "), "", (1, 35)),
}


def _aider_session(shown: list[str], written: list[bytes]) -> AgentSession:
    """A session on aider's profile whose screen is AIDER_SCREENS[shown[0]]."""
    from ptysup.agents.aider.profile import AiderProfile

    return AgentSession(
        AiderProfile(),
        Typist(written.append, pause=lambda s: None),
        lambda: AIDER_SCREENS[shown[0]],
        EventLog(),
        Timings(confirm=0.3, settle=0.02, settle_max=0.05),
        clock=Tick(0.01),
    )


def test_a_stop_that_leaves_a_dialog_on_screen_ends_the_turn_with_the_dialog_open() -> None:
    # aider signals a confirmation as it signals its prompt: the screen tells them apart.
    shown = ["dialog"]
    written: list[bytes] = []
    session = _aider_session(shown, written)
    session.post(HookEvent("Stop", {}, 0.0))
    assert session.wait_turn_end() == TurnEnd(TurnEndKind.STOP, "", dialog=True)
    shown[0] = "prompt"
    session.post(HookEvent("Stop", {}, 0.0))
    assert session.wait_turn_end() == TurnEnd(TurnEndKind.STOP, "")
    assert written == []  # nothing typed at the dialog


@pytest.mark.parametrize(
    ("frames", "dismissals"),
    [
        # The dialog closes, another opens (aider: the new file, then the command).
        ([ScreenState.WORKING, ScreenState.DIALOG, ScreenState.READY], 2),
        # The same dialog drawn on (Codex animates under one), then closed: once only.
        ([ScreenState.DIALOG, ScreenState.DIALOG, ScreenState.READY], 1),
    ],
)
def test_dialogs_one_after_another_are_each_dismissed_the_same_one_once(
    frames: list[ScreenState], dismissals: int
) -> None:
    from ptysup.agents.aider.profile import AiderProfile

    written: list[bytes] = []
    sessions: list[AgentSession] = []

    def screen() -> ScreenSnapshot:  # the frames the session has read so far
        ready = sessions and sessions[0].state is ScreenState.READY
        return AIDER_SCREENS["prompt" if ready else "dialog"]

    session = AgentSession(
        AiderProfile(),
        Typist(written.append, pause=lambda s: None),
        screen,
        EventLog(),
        Timings(confirm=0.3, landed=0.05),
        clock=Tick(0.01),
    )
    sessions.append(session)
    for frame in frames:
        session.post(ScreenUpdate(frame, 0.0))
    session.command("/clear")  # typed, then unconfirmed: no screen comes after it here
    assert written[:dismissals] == [b"n\r"] * dismissals
    assert b"".join(written[dismissals:]).startswith(b"/clear")


def test_a_dialog_after_the_enter_is_a_turn_started_and_gets_no_second_enter() -> None:
    from ptysup.agents.aider.profile import AiderProfile

    written: list[bytes] = []
    typed = ScreenSnapshot((RULE, "diff> summarise it", ""), "", (1, 18))
    sessions: list[AgentSession] = []

    def write(data: bytes) -> None:
        written.append(data)
        if data == b"\r":  # aider asks about the URL at once, before any model call
            sessions[0].post(ScreenUpdate(ScreenState.DIALOG, 0.0))

    session = AgentSession(
        AiderProfile(),
        Typist(write, pause=lambda s: None),
        lambda: typed,
        EventLog(),
        Timings(confirm=0.3, landed=0.05),
        clock=Tick(0.01),
    )
    sessions.append(session)
    session.post(ScreenUpdate(ScreenState.READY, 0.0))
    result = session.submit("summarise it")
    assert (result.confirmed, result.attempts) == (True, 1)
    assert written.count(b"\r") == 1


GEMINI_SCREENS = Path(__file__).resolve().parents[2] / "fixtures" / "gemini"


def _gemini_answered(title: str) -> ScreenSnapshot:
    """Gemini CLI 0.61's screen with its reply drawn (captured), under `title`."""
    text = (GEMINI_SCREENS / "answered_done.txt").read_text(encoding="utf-8")
    return ScreenSnapshot(tuple(text.splitlines()), title, (0, 0))


def _gemini_session(snapshot: Callable[[], ScreenSnapshot]) -> AgentSession:
    # A quiet window far longer than the turn end may take: it must not be waited for.
    timings = Timings(confirm=0.2, landed=0.2, settle=5.0, settle_max=10.0)
    written: list[bytes] = []
    return AgentSession(GeminiProfile(), Typist(written.append), snapshot, EventLog(), timings)


def test_a_gemini_turn_end_is_taken_from_its_hook_once_the_screen_reads_ready() -> None:
    # Gemini CLI has drawn its reply when AfterAgent runs: no quiet screen is waited for.
    session = _gemini_session(lambda: _gemini_answered("◇  Ready (project)"))
    session.post(_said("Hello there."))
    start = time.monotonic()
    assert session.wait_turn_end() == TurnEnd(TurnEndKind.STOP, "Hello there.")
    assert time.monotonic() - start < 2.5  # half the quiet window


def test_a_gemini_hook_before_the_ready_screen_waits_for_that_screen_only() -> None:
    # Seen with 0.61: the title says it works while its hooks run; the Ready frame, the
    # one the supervisor must see, follows once they ran.
    ready = _gemini_answered("◇  Ready (project)")
    working = _gemini_answered("✦  Working… (project)")
    holder: list[AgentSession] = []
    session = _gemini_session(lambda: ready if holder[0].state is ScreenState.READY else working)
    holder.append(session)
    session.state = ScreenState.WORKING
    session.post(_said("Hello there."))
    session.post(ScreenUpdate(ScreenState.READY, time.monotonic()))
    start = time.monotonic()
    assert session.wait_turn_end() == TurnEnd(TurnEndKind.STOP, "Hello there.")
    assert session.state is ScreenState.READY  # the Ready frame was read before it
    assert time.monotonic() - start < 2.5


def test_a_gemini_turn_end_waits_for_its_hooks_line_to_go() -> None:
    # Under load the Ready frame came with `Executing Hooks: ptysup, ptysup` still on its
    # footer, erased a moment later: the supervisor must see the frame after.
    running = ScreenSnapshot(
        tuple((GEMINI_SCREENS / "answered.txt").read_text(encoding="utf-8").splitlines()),
        "◇  Ready (project)",
        (0, 0),
    )
    done = _gemini_answered("◇  Ready (project)")
    erased = threading.Event()
    session = _gemini_session(lambda: done if erased.is_set() else running)

    def erase() -> None:
        erased.set()
        session.post(ScreenUpdate(ScreenState.READY, time.monotonic()))

    session.post(_said("Hello there."))
    timer = threading.Timer(0.3, erase)
    timer.start()
    try:
        assert session.wait_turn_end() == TurnEnd(TurnEndKind.STOP, "Hello there.")
        assert erased.is_set()  # not taken on the frame with the hooks line
    finally:
        timer.cancel()
