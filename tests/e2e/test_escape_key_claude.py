"""The escape key pressed as a person does, Ctrl-] and a moment later its command key,
with the real Claude Code in a real terminal (tmux): what the terminal says between the
two (answers to Claude Code's queries after Ctrl-Z, a focus event) never cancels it."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from ptysup.testing.fakemodel import RequestKind
from tests.e2e.conftest import Screen
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

SLOW = {"agent": [{"delay": 60, "reply": "slow"}], "supervisor": [{"reply": "[COMPLETE]"}]}
SUSPENDED = "the agent suspended itself (Ctrl-Z) where no shell can bring it back: resumed it"
MENU = "ptysup keys: s stop"
TASK = "implement feature X"


def _menu_shown(s: Screen) -> bool:
    return MENU in s.status()


def _drawn_again(s: Screen) -> bool:
    """Claude Code drew its footer below its last suspend notice: it is back in raw mode."""
    return "accept edits on" in s.tmux.capture(history=True).rsplit("has been suspended", 1)[-1]


def _escape_key(s: Screen) -> None:
    """Ctrl-] alone, as a person presses it, and the menu it shows in the status row."""
    s.tmux.send_keys("C-]")
    wait_for(lambda: _menu_shown(s), 10, "the escape key's menu")


def _stopped(s: Screen) -> None:
    """`s` stopped the run gracefully, and never reached Claude Code's input box."""
    result = s.finish()
    assert result.startswith("exit=8"), s.events()
    assert s.rig.human_texts() == [TASK]
    assert not s.events("person_prompt")


def test_escape_key_after_ctrl_z_is_not_cancelled_by_the_terminals_answers(
    screen: Callable[..., Screen],
) -> None:
    s = screen(SLOW, TASK)
    s.rig.model.wait_for(lambda req: req.kind is RequestKind.AGENT, timeout=60)
    # Continued after Ctrl-Z, Claude Code draws itself again and asks the terminal its name
    # and attributes; tmux answers within a tenth of a second, while the person's Ctrl-]
    # waits for its key (lost 2 times in 2 by hand). The key comes once the person sees
    # the new screen, as they would. Ctrl-Z again for each try, the last one with `s`.
    commands = ["pause", "resume"] * 2 + ["stop"]
    for attempt, command in enumerate(commands, start=1):
        s.tmux.send_keys("C-z")
        wait_for(lambda n=attempt: len(s.events("warning")) >= n, 15, f"resume {attempt}")
        assert [w["message"] for w in s.events("warning")] == [SUSPENDED] * attempt
        _escape_key(s)
        # Also what tells the next Ctrl-Z from one the kernel drops: Claude Code is back
        # in raw mode.
        wait_for(lambda: _drawn_again(s), 15, f"Claude Code drawn again after Ctrl-Z {attempt}")
        s.tmux.send_keys("s" if command == "stop" else "p")
        wait_for(lambda n=attempt: len(s.events("person_command")) >= n, 10, command)
        assert [c["command"] for c in s.events("person_command")] == commands[:attempt]
    _stopped(s)


def test_a_slow_persons_escape_key_outlasts_the_answers_and_a_focus_event(
    screen: Callable[..., Screen],
) -> None:
    s = screen(SLOW, TASK)
    s.rig.model.wait_for(lambda req: req.kind is RequestKind.AGENT, timeout=60)
    s.tmux.send_keys("C-z")
    s.wait_event("warning", message=SUSPENDED)
    _escape_key(s)  # the terminal's answers to Claude Code come while the person reads
    # What a terminal sends when the person looks at another window (Claude Code turned
    # focus events on): tmux sends it only with a client attached, so it is typed here.
    s.tmux.send_keys("-H", "1b", "5b", "4f")
    # A person who reads the menu before choosing: the pause is the behaviour under test
    # (there is nothing to wait for), and the menu must still be there after it.
    time.sleep(1.5)
    assert _menu_shown(s), s.status()
    s.tmux.send_keys("s")
    s.wait_event("person_command", timeout=10, command="stop")
    _stopped(s)
