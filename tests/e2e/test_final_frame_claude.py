"""The screen the supervisor is shown at a turn end is Claude Code's final frame for that
turn, not one drawn while its Stop hook still ran (real Claude Code, many turns), on a
quiet machine and with the agent's core loaded."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from ptysup.testing.fakemodel import RequestKind
from tests.e2e.conftest import Rig
from tests.helpers import loaded_core

pytestmark = pytest.mark.e2e

TURNS = 12


def turns(rig: Callable[..., Rig]) -> Rig:
    """A rig whose agent finishes TURNS steps, one a turn, each step told by the supervisor."""
    # Higher steps first: `step 1` is in `step 11`, and every earlier reply stays on screen.
    steps = range(TURNS - 1, 0, -1)
    agent = [{"regex": f"step {n}$", "reply": f"Finished step {n}."} for n in steps]
    supervisor = [
        {"match": f"Finished step {n}.", "reply": f"[CONTINUE] step {n + 1}"} for n in steps
    ]
    supervisor[0]["reply"] = "[COMPLETE] all done"
    return rig({"agent": agent, "supervisor": supervisor})


def every_decision_sees_the_final_frame(r: Rig, *args: str) -> None:
    """R's run: each decision's screen is the final frame of the turn it decides on."""
    run = r.run("step 1", "--max-iter", str(TURNS + 2), *args, timeout=600)
    assert run.code == 0, run.events
    prompts = [req.human_text for req in r.model.requests_of(RequestKind.SUPERVISOR)]
    assert len(prompts) == TURNS - 1
    for n, prompt in enumerate(prompts, start=1):
        screen = prompt[prompt.index("The agent's screen now:") :]
        assert "running stop hook" not in screen, screen
        # The turn's last lines: its reply, Claude Code's `✻ <Verb>ed for Ns`, the idle box.
        tail = screen[screen.index(f"● Finished step {n}.") :]
        assert re.search(r"✻ \w+ for \d+s", tail), screen
    assert not [w for w in run.named("warning") if "final frame" in w["message"]], run.events


def test_every_decision_sees_the_turn_s_final_frame(rig: Callable[..., Rig]) -> None:
    every_decision_sees_the_final_frame(turns(rig))


@pytest.mark.alone  # it loads the agent's core itself
def test_with_the_agents_core_loaded_every_decision_still_sees_the_final_frame(
    rig: Callable[..., Rig],
) -> None:
    # On a loaded core Claude Code writes its ✳ title in a write of its own, up to 0.3 s
    # before the frame that ends the turn (the screen still shows `running stop hook`),
    # and that frame came more than 1 s after the Stop hook (recorded in
    # fixtures/transcripts/stop_hook_loaded.cast). The agent shares its core with two
    # spinning processes; ptysup runs on the other core(s).
    r = turns(rig)
    with loaded_core() as core:
        r.agent = f"taskset -c {core} {r.agent}"
        every_decision_sees_the_final_frame(r, "--agent", "claude")
