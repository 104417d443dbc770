"""The screen the supervisor is shown at a turn end is Claude Code's final frame for that
turn, not one drawn while its Stop hook still ran (real Claude Code, many turns)."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from ptysup.testing.fakemodel import RequestKind
from tests.e2e.conftest import Rig

pytestmark = pytest.mark.e2e

TURNS = 12


def test_every_decision_sees_the_turn_s_final_frame(rig: Callable[..., Rig]) -> None:
    # Higher steps first: `step 1` is in `step 11`, and every earlier reply stays on screen.
    steps = range(TURNS - 1, 0, -1)
    agent = [{"regex": f"step {n}$", "reply": f"Finished step {n}."} for n in steps]
    supervisor = [
        {"match": f"Finished step {n}.", "reply": f"[CONTINUE] step {n + 1}"} for n in steps
    ]
    supervisor[0]["reply"] = "[COMPLETE] all done"
    r: Rig = rig({"agent": agent, "supervisor": supervisor})
    run = r.run("step 1", "--max-iter", str(TURNS + 2), timeout=300)
    assert run.code == 0, run.events
    prompts = [req.human_text for req in r.model.requests_of(RequestKind.SUPERVISOR)]
    assert len(prompts) == TURNS - 1
    for n, prompt in enumerate(prompts, start=1):
        screen = prompt[prompt.index("The agent's screen now:") :]
        assert "running stop hook" not in screen, screen
        # The turn's last lines: its reply, Claude Code's `✻ <Verb>ed for Ns`, the idle box.
        tail = screen[screen.index(f"● Finished step {n}.") :]
        assert re.search(r"✻ \w+ for \d+s", tail), screen
