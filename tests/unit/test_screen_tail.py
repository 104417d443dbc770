"""The agent's last screen in a failed run's CI log (`agent_screen`): its last lines that
show something, the blank rows of a full-screen agent's middle folded to one."""

from __future__ import annotations

from ptysup.run.wiring import SCREEN_TAIL, screen_tail

# Claude Code 2.1.332 on 40 rows, as it stood when a supervisor aborted the run: the
# conversation at the top, the input box at the bottom, 23 blank rows between them.
FULL_SCREEN = "\n".join(
    [
        " ▐▛███▛█   Claude Code v2.1.332",
        "",
        "❯ fix the tests",
        "",
        "● I deleted the tests to make them pass.",
        *[""] * 23,
        "─" * 40,
        "❯",
        "─" * 40,
        "  ⏵⏵ accept edits on (shift+tab to cycle)",
        "",
        "",
    ]
)


def test_a_full_screen_agents_conversation_shows_above_its_input_box() -> None:
    # The last 25 rows of that screen held only the input box: the CI log missed the
    # conversation that the run failed on.
    lines = screen_tail(FULL_SCREEN)
    assert "● I deleted the tests to make them pass." in lines
    assert lines[-1] == "  ⏵⏵ accept edits on (shift+tab to cycle)"  # no blank tail
    assert lines.count("") == 3  # each run of blank rows is one


def test_a_long_screen_keeps_its_last_lines() -> None:
    text = "\n".join(f"line {n}" for n in range(60))
    assert screen_tail(text) == [f"line {n}" for n in range(60 - SCREEN_TAIL, 60)]


def test_a_blank_screen_shows_nothing() -> None:
    assert screen_tail("\n\n   \n") == []
