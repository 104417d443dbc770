"""The agent gone while the supervisor decides (killed, or the person quit it): the run ends
at once as the agent's exit, the supervisor process killed, in a real terminal (tmux)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

import pytest

from ptysup.testing.fakemodel import RequestKind
from tests.e2e.conftest import Screen
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

SUPERVISOR_DELAY_S = 120  # far beyond the wait below: the run must not wait for it


def _deciding(screen: Callable[..., Screen]) -> Screen:
    """A run whose first decision is being made by a slow supervisor."""
    supervisor = [{"delay": SUPERVISOR_DELAY_S, "reply": "[COMPLETE] never seen"}]
    s = screen({"agent": [{"reply": "Done with that."}], "supervisor": supervisor}, "the task")
    s.rig.model.wait_for(lambda req: req.kind is RequestKind.SUPERVISOR, timeout=60)
    return s


def _ended_as_the_agent_s_exit(s: Screen, since: float) -> None:
    result = s.finish(timeout=30)
    assert time.monotonic() - since < 20, "ptysup waited for the supervisor"
    assert result.startswith("exit=4"), s.events()
    end = s.events()[-1]
    assert (end["event"], end["outcome"], end["iterations"]) == ("run_end", "agent_exited", 0)
    assert end["reason"].startswith("agent exited"), end
    assert not s.events("decision")
    [cancelled] = s.events("decision_cancelled")
    assert cancelled["reason"] == "overtaken by the agent's exit", cancelled
    assert len(s.rig.model.requests_of(RequestKind.SUPERVISOR)) == 1  # ended, not retried
    wait_for(lambda: not s.rig.leftovers(), 10, "the supervisor to be gone")


def test_the_agent_killed_during_a_decision_ends_the_run_at_once(
    screen: Callable[..., Screen],
) -> None:
    s = _deciding(screen)
    since = time.monotonic()
    os.kill(s.events("agent_start")[0]["pid"], signal.SIGKILL)
    _ended_as_the_agent_s_exit(s, since)


def test_the_person_quitting_the_agent_during_a_decision_ends_the_run_at_once(
    screen: Callable[..., Screen],
) -> None:
    s = _deciding(screen)
    since = time.monotonic()
    s.send("/exit")
    _ended_as_the_agent_s_exit(s, since)
