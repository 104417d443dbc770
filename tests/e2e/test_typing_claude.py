"""What ptysup types into the real Claude Code lands alone: never after a prompt Claude Code
put back into its input box (a turn interrupted after Ctrl-Z), in a real terminal (tmux)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ptysup.testing.fakemodel import RequestKind
from tests.e2e.conftest import Screen

pytestmark = pytest.mark.e2e

SLOW = {"agent": [{"delay": 60, "reply": "slow"}], "supervisor": [{"reply": "[COMPLETE]"}]}
SUSPENDED_WARNING = (
    "the agent suspended itself (Ctrl-Z) where no shell can bring it back: resumed it"
)


def _suspend_and_resume(s: Screen) -> None:
    """Ctrl-Z while the agent works on the task; ptysup continues it."""
    s.rig.model.wait_for(lambda req: req.kind is RequestKind.AGENT, timeout=60)
    s.tmux.send_keys("C-z")
    s.wait_event("warning", message=SUSPENDED_WARNING)


def _nothing_typed_after_the_prompt(s: Screen, command: str) -> None:
    texts = s.rig.human_texts()
    assert texts == ["implement feature X"], texts  # never `implement feature X/exit`
    assert not [p for p in s.events("person_prompt") if command in (p["text"] or "")]


# Found 5 times in 6 by hand: run it a few times.
@pytest.mark.parametrize("attempt", range(3))
def test_stop_after_ctrl_z_types_exit_alone_and_claude_code_exits(
    screen: Callable[..., Screen], attempt: int
) -> None:
    s = screen(SLOW, "implement feature X")
    _suspend_and_resume(s)
    # Both keys in one write; pressed apart, with the terminal's answers to Claude Code
    # between them, in test_escape_key_claude.py.
    s.tmux.send_keys("C-]", "s")
    s.wait_event("person_command", timeout=10, command="stop")
    result = s.finish()
    assert result.startswith("exit=8"), s.events()
    _nothing_typed_after_the_prompt(s, "/exit")
    # Claude Code exited on /exit, not killed; the prompt it put back was kept in a warning.
    assert [h["reason"] for h in s.events("hook") if h["name"] == "SessionEnd"] == [
        "prompt_input_exit"
    ], s.events()
    kept = [w for w in s.events("warning") if w.get("text") == "implement feature X"]
    assert kept, s.events("warning")


def test_a_time_budget_after_ctrl_z_types_clear_alone(screen: Callable[..., Screen]) -> None:
    s = screen(SLOW, "implement feature X", "--max-time", "8s")
    _suspend_and_resume(s)
    result = s.finish()
    assert result.startswith("exit=3"), s.events()
    _nothing_typed_after_the_prompt(s, "/clear")
    assert [i["confirmed"] for i in s.events("inject") if i["text"] == "/clear"] == [True]
    assert [h["reason"] for h in s.events("hook") if h["name"] == "SessionEnd"][-1] == (
        "prompt_input_exit"
    ), s.events()
