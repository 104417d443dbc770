"""Budgets are hard stops: the turn is interrupted, /clear typed once and confirmed, the agent
ended, all within 5 s of a time budget; generic agents never get Claude Code's /clear."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ptysup.testing.fakemodel import RequestKind
from tests.e2e.conftest import Rig
from tests.helpers import FAKES, assert_interrupted_then_cleared, wait_for

pytestmark = pytest.mark.e2e

GRACE_S = 5.0  # the most a run may take past its time budget


def test_time_budget_interrupts_the_turn_and_no_late_tool_call_runs(
    rig: Callable[..., Rig],
) -> None:
    # The model asks for a Write only after the budget ran out.
    late_write = {
        "tool": "Write",
        "input": {"file_path": "{workdir}/late.txt", "content": "too late"},
        "delay": 14,
    }
    r = rig(
        {
            "agent": [{"steps": [late_write, {"text": "Wrote it."}]}],
            "supervisor": [{"reply": "[COMPLETE]"}],
        }
    )
    run = r.run("write late.txt", "--max-time", "6s")
    assert run.code == 3, run.stdout + run.stderr
    end = run.events[-1]
    assert (end["event"], end["outcome"]) == ("run_end", "time")
    assert end["elapsed_s"] < 6 + GRACE_S, end
    # Interrupt first, and seen to stop; then /clear once, confirmed; then the agent ended.
    assert_interrupted_then_cleared(run)
    assert not [w for w in run.named("warning") if "did not exit" in w["message"]]
    assert not r.model.requests_of(RequestKind.SUPERVISOR)
    # Nothing of the run is left that could still carry out the model's late tool call.
    wait_for(lambda: not r.leftovers(), 10, "every process of the run to be gone")
    assert not (r.project / "late.txt").exists()


def test_time_budget_ends_a_supervisor_that_is_still_deciding(rig: Callable[..., Rig]) -> None:
    r = rig(
        {
            "agent": [{"reply": "Done with that."}],
            "supervisor": [{"delay": 120, "reply": "[CONTINUE] more"}],
        }
    )
    # A budget long enough for the turn to end and the supervisor to be asked, even on a
    # loaded machine; the supervisor then takes far longer than what is left.
    run = r.run("t", "--max-time", "20s")
    assert run.code == 3, run.stdout + run.stderr
    end = run.events[-1]
    assert end["outcome"] == "time" and end["elapsed_s"] < 20 + GRACE_S, end
    assert run.named("turn_end")
    assert len(r.model.requests_of(RequestKind.SUPERVISOR)) == 1  # no retry past the budget
    assert not run.named("decision")
    assert [i["confirmed"] for i in run.named("inject") if i["text"] == "/clear"] == [True]
    wait_for(lambda: not r.leftovers(), 10, "the supervisor and the agent to be gone")


def test_a_generic_agent_never_gets_claude_codes_clear(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = rig({"supervisor": [{"reply": "[CONTINUE] carry on"}]})
    messages = tmp_path / "agent.jsonl"
    r.env["FAKE_AGENT_LOG"] = str(messages)
    agent = f"{sys.executable} {FAKES / 'agent.py'}"
    # Exactly what was decided, without the wind-down (its own tests: test_wind_down.py).
    run = r.run(
        "the task", "--agent-cmd", agent, "--max-iter", "2", "--idle", "0.5", "--wind-down", "off"
    )
    assert run.code == 3, run.stdout + run.stderr
    assert run.events[-1]["outcome"] == "budget"
    received = [json.loads(line)["message"] for line in messages.read_text().splitlines()]
    assert received == ["the task", "carry on"]
    assert not [i for i in run.named("inject") if i["kind"] == "command"]
    assert not run.named("interrupt")


def test_prompts_ptysup_typed_are_never_logged_as_the_persons(rig: Callable[..., Rig]) -> None:
    long_line = "Run the tests again. " * 40  # pasted text Claude Code shows collapsed
    r = rig(
        {
            "agent": [{"reply": "Done with that."}],
            "supervisor": [
                {"times": 1, "reply": "[CONTINUE] /fix this\nStep two.\n\tStep three."},
                {"times": 1, "reply": f"[CONTINUE] {long_line}"},
                {"reply": "[ABORT] enough"},
            ],
        }
    )
    run = r.run("the task")
    assert run.code == 1, run.stdout + run.stderr
    submits = [h for h in run.named("hook") if h["name"] == "UserPromptSubmit"]
    assert len(submits) == 3
    assert not run.named("person_prompt")
    assert not run.named("decision_cancelled")
