from __future__ import annotations

import datetime as dt

import pytest

from ptysup.agents.claude.profile import ClaudeProfile
from ptysup.agents.waits import MAX_WAIT_S, WaitPolicy, is_api_error, reset_delay
from ptysup.terminal.screen import ScreenSnapshot

NOW = dt.datetime(2026, 11, 22, 14, 0, tzinfo=dt.timezone.utc)


@pytest.mark.parametrize(
    ("message", "seconds"),
    [
        ("Usage limit reached, resets in 2h 5m", 2 * 3600 + 5 * 60),
        ("rate_limit: try again in 30 seconds", 30),
        ("5-hour limit reached ∙ resets 3pm", 3600 + 30),
        ("limit reached · resets at 15:30", 90 * 60 + 30),
        ("limit reached · resets 1pm", 23 * 3600 + 30),  # already past: tomorrow
        ("limit reached, resets 4pm (UTC)", 2 * 3600 + 30),
    ],
)
def test_reset_times_are_read(message: str, seconds: float) -> None:
    assert reset_delay(message, NOW) == pytest.approx(seconds)


@pytest.mark.parametrize("message", ["API Error: 529 Overloaded", "resets 25pm", ""])
def test_no_reset_time(message: str) -> None:
    assert reset_delay(message, NOW) is None


def test_policy_backs_off_exponentially_and_is_bounded() -> None:
    policy = WaitPolicy(max_waits=3, base_s=10)
    assert [policy.next_wait("API Error: 529", NOW) for _ in range(4)] == [10, 20, 40, None]


def test_policy_prefers_a_shown_reset_time_and_caps_it() -> None:
    policy = WaitPolicy(max_waits=5, base_s=10)
    assert policy.next_wait("resets in 5m", NOW) == 300
    assert policy.next_wait("resets in 99h", NOW) == MAX_WAIT_S


def test_disabled_policy_never_waits() -> None:
    assert WaitPolicy(enabled=False).next_wait("resets in 5m", NOW) is None


@pytest.mark.parametrize(
    ("text", "api"),
    [
        ("API Error: 500", True),
        ("rate_limit", True),
        ("Overloaded", True),
        ("Claude usage limit reached", True),
        ("all tests pass", False),
    ],
)
def test_is_api_error(text: str, api: bool) -> None:
    assert is_api_error(text) is api


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (  # the reset time wrapped onto the next line
            ["● Claude usage limit reached · resets", "  in 2h 5m", "", "─" * 20, "❯ "],
            "Claude usage limit reached · resets in 2h 5m",
        ),
        (
            ["  ⎿  API Error: 529 overloaded · try again in a", "     moment", "", "❯ "],
            "API Error: 529 overloaded · try again in a moment",
        ),
        (  # what follows is another item, not the message
            ["● API Error: 500 internal error", "● Next item", "  ⎿  done"],
            "API Error: 500 internal error",
        ),
    ],
)
def test_an_error_message_is_read_with_the_lines_it_wrapped_onto(
    lines: list[str], message: str
) -> None:
    snap = ScreenSnapshot(tuple(lines), "✳ Claude Code", (0, 0))
    found = ClaudeProfile().api_error(snap)
    assert found == message
    if "resets" in message:
        assert reset_delay(found, NOW) == pytest.approx(2 * 3600 + 5 * 60)
