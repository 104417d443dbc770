"""Plans, resume and the runs listing against the real Claude Code and the fake model."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ptysup.testing.fakemodel import RequestKind
from tests.e2e.conftest import AGENT, Rig
from tests.helpers import Run, ptysup_argv

pytestmark = pytest.mark.e2e

PLAN = """\
goal: Build the two files
max-iter: 12
steps:
  - id: first
    do: Create a.txt
    verify: test -f a.txt
  - id: second
    do: Create b.txt
    verify: [test -f a.txt, test -f b.txt]
    clear: true
"""

# Step 2's first turn writes nothing: the supervisor's early [COMPLETE] fails the step's
# gate, and only the verification message makes the agent write b.txt.
TWO_STEPS: dict[str, Any] = {
    "agent": [
        {
            "match": "Verification failed",
            "steps": [
                {"tool": "Write", "input": {"file_path": "{workdir}/b.txt", "content": "b\n"}},
                {"text": "Wrote b.txt."},
            ],
        },
        {
            "match": "Step 1/2",
            "steps": [
                {"tool": "Write", "input": {"file_path": "{workdir}/a.txt", "content": "a\n"}},
                {"text": "Wrote a.txt."},
            ],
        },
        {"match": "Step 2/2", "reply": "Looking at step 2."},
        {"reply": "Okay."},
    ],
    "supervisor": [{"reply": "[COMPLETE] the step is done"}],
}


def _run(r: Rig, *args: str, timeout: float = 180) -> Run:
    proc = subprocess.run(
        ptysup_argv(*args),
        cwd=r.project,
        env=r.env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr, r.log)


def _plan(r: Rig, text: str = PLAN) -> str:
    (r.project / "plan.yaml").write_text(text)
    return "plan.yaml"


def test_a_two_step_plan_gates_each_step_and_clears_before_the_second(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = rig(TWO_STEPS)
    summary = tmp_path / "summary.json"
    plan = _plan(r)
    run = _run(
        r,
        "--plan", plan, "--agent-cmd", AGENT, "--log-file", str(r.log),
        "--summary-json", str(summary),
    )  # fmt: skip
    assert run.code == 0, run.stdout + run.stderr
    starts = run.named("step_start")
    assert [(s["id"], s["index"], s["of"]) for s in starts] == [("first", 1, 2), ("second", 2, 2)]
    ends = run.named("step_end")
    assert [(e["id"], e["outcome"]) for e in ends] == [
        ("first", "complete"),
        ("second", "complete"),
    ]
    assert [e["iterations"] for e in ends] == [1, 2]
    # The step's own gate held the early [COMPLETE] of step 2 back.
    verifies = [(v["command"], v["passed"]) for v in run.named("verify")]
    assert verifies == [
        (["test", "-f", "a.txt"], True),
        (["test", "-f", "a.txt"], True),
        (["test", "-f", "b.txt"], False),
        (["test", "-f", "a.txt"], True),
        (["test", "-f", "b.txt"], True),
    ]
    # The agent got the steps in order, with the goal; /clear reached Claude Code between them.
    texts = r.human_texts()
    assert texts[0] == "Build the two files\n\nStep 1/2 (first): Create a.txt"
    # (Claude Code puts its note about the /clear command before the next prompt.)
    assert texts[1].endswith("\nBuild the two files\n\nStep 2/2 (second): Create b.txt")
    assert texts[2].startswith("Verification failed: `test -f b.txt` exited 1")
    events = run.events
    where = {
        "first done": (("step_end", "first"),),
        "clear": (("hook", "SessionStart"), ("source", "clear")),
        "step 2 typed": (("inject", "step"), ("text", texts[1][-43:])),
    }

    def at(what: str) -> int:
        ((event, name), *more) = where[what]
        return next(
            i
            for i, e in enumerate(events)
            if e["event"] == event
            and name in (e.get("id"), e.get("name"), e.get("kind"))
            and all(str(e.get(k, "")).endswith(v) for k, v in more)
        )

    assert at("first done") < at("clear") < at("step 2 typed")
    assert [i["confirmed"] for i in run.named("inject") if i["text"] == "/clear"] == [True]
    # A fresh context: the step-2 request no longer holds step 1's message.
    step2 = next(q for q in r.model.requests_of(RequestKind.AGENT) if "Step 2/2" in q.human_text)
    assert "Step 1/2" not in json.dumps(step2.body["messages"])
    # The supervisor saw the plan with each step's state and the current step's gate.
    sup = [q.human_text for q in r.model.requests_of(RequestKind.SUPERVISOR)]
    assert "- step 1/2 first: current" in sup[0] and "- step 2/2 second: pending" in sup[0]
    assert "- step 1/2 first: done" in sup[1] and "Current step (second): Create b.txt" in sup[1]
    assert "Its last verification: `test -f b.txt` exited 1" in sup[2]
    data = json.loads(summary.read_text())
    assert [(s["id"], s["outcome"]) for s in data["steps"]] == [
        ("first", "complete"),
        ("second", "complete"),
    ]


def test_a_steps_max_iter_used_up_exits_3_naming_the_step(rig: Callable[..., Rig]) -> None:
    r = rig({"agent": [{"reply": "Hmm."}], "supervisor": [{"reply": "[CONTINUE] keep going"}]})
    plan = _plan(r, "steps:\n  - id: stuck\n    do: Try it\n    max_iter: 2\n  - do: never\n")
    run = _run(r, "--plan", plan, "--agent-cmd", AGENT, "--log-file", str(r.log))
    assert run.code == 3, run.stdout + run.stderr
    end = run.events[-1]
    assert end["outcome"] == "budget" and "step 'stuck' used its 2 iteration(s)" in end["reason"]
    assert len(run.named("decision")) == 2
    assert [(e["id"], e["outcome"]) for e in run.named("step_end")] == [("stuck", "budget")]


def test_check_accepts_a_good_plan_and_points_at_the_bad_line(rig: Callable[..., Rig]) -> None:
    r = rig({"agent": [{"reply": "x"}]})
    _plan(r)
    good = _run(r, "check", "plan.yaml")
    assert good.code == 0 and "2 step(s): first, second" in good.stdout
    _plan(r, PLAN.replace("    clear: true", "    claer: true"))
    bad = _run(r, "check", "plan.yaml")
    assert bad.code == 2
    assert bad.stderr == (
        "ptysup: plan.yaml:10: unknown key `claer` in step 2 (did you mean `clear`?)\n"
    )
    # A run loads the plan with the same loader: the same line, nothing started.
    run = _run(r, "--plan", "plan.yaml", "--agent-cmd", AGENT, "--log-file", str(r.log))
    assert run.code == 2 and "plan.yaml:10: unknown key `claer`" in run.stderr
    assert not r.log.exists() and not r.model.requests_of(RequestKind.AGENT)
