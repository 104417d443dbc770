"""Codex CLI in a real terminal (tmux, a private server): at every turn end the supervisor
is shown the screen the person sees, and after the run the terminal is as it was
(Codex draws on the alternate screen, with synchronized output, keyboard protocols and
focus reporting)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ptysup.testing.fakemodel import RequestKind
from tests.e2e.conftest import Rig
from tests.e2e.test_supervisor_sees_the_screen import ROWS, Watcher, assert_each_turn_end_shown
from tests.e2e.test_terminal_left_clean import Pane, fresh_pane
from tests.helpers import read_events, wait_for

pytestmark = pytest.mark.e2e

REPLY = "Here is the part you asked for:\n\n- alpha\n- beta\n- gamma\n\nThat is all for now."
SCENARIO = {
    "agent": [{"reply": REPLY}],
    "supervisor": [
        # Slow enough that the pane is captured between the turn end and the decision.
        {"times": 1, "delay": 2, "reply": "[CONTINUE] next part please"},
        {"delay": 2, "reply": "[COMPLETE] ok"},
    ],
}


def test_codex_s_screen_is_the_supervisor_s_and_the_terminal_is_restored(
    codex_rig: Callable[..., Rig], tmp_path: Path
) -> None:
    fresh_flags, fresh_stty = fresh_pane(tmp_path)
    r = codex_rig(SCENARIO)
    pane = Pane("ptysup-codex", rows=ROWS)
    done = r.in_terminal(pane, tmp_path, "give me part one")
    watcher = Watcher(pane)
    asked: list[float] = []
    alternate: list[str] = []
    try:
        for n in (1, 2):
            wait_for(
                lambda n=n: len(r.model.requests_of(RequestKind.SUPERVISOR)) >= n,
                60,
                f"supervisor request {n}",
            )
            asked.append(time.time())
            alternate.append(pane.display("#{alternate_on}"))
        wait_for(done.exists, 60, "ptysup to finish")
        flags = pane.flags()
    finally:
        watcher.stop()
        pane.kill()
    result = done.read_text()
    assert result.startswith("exit=0"), r.log.read_text()
    assert alternate == ["1", "1"]  # Codex's screen was the alternate one while it ran
    events = read_events(r.log)
    assert events[-1]["outcome"] == "complete"
    (start,) = [e for e in events if e["event"] == "agent_start"]
    assert start["interactive"] is True
    turn_ends = [e["ts"] for e in events if e["event"] == "turn_end"]
    requests = r.model.requests_of(RequestKind.SUPERVISOR)
    assert len(turn_ends) == len(requests) == 2
    assert_each_turn_end_shown(turn_ends, requests, asked, watcher, "That is all for now.")
    # Alternate screen off, cursor shown, mouse and keypad modes off, the tty cooked.
    assert flags == fresh_flags
    assert result.split("\n", 1)[1].split() == fresh_stty.split()


def test_a_turn_the_person_interrupts_with_esc_ends_without_a_stop_hook(
    codex_rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = codex_rig(
        {
            "agent": [{"delay": 30, "reply": "too late"}],
            "supervisor": [{"reply": "[COMPLETE] the person stopped it"}],
        }
    )
    pane = Pane("ptysup-codex-esc", rows=ROWS)
    done = r.in_terminal(pane, tmp_path, "take your time")
    try:
        r.model.wait_for(lambda q: q.kind is RequestKind.AGENT, timeout=60)
        wait_for(lambda: "esc to interrupt" in pane.capture(), 20, "Codex working")
        pane.send_keys("Escape")
        wait_for(done.exists, 30, "ptysup to finish")
    finally:
        pane.kill()
    assert done.read_text().startswith("exit=0"), r.log.read_text()
    events = read_events(r.log)
    # Codex went working → idle with no Stop (OSC 7501): the screen ended the turn.
    (turn,) = [e for e in events if e["event"] == "turn_end"]
    assert turn["kind"] == "screen"
    assert not [e for e in events if e["event"] == "hook" and e["name"] == "Stop"]
    assert events[-1]["outcome"] == "complete"
