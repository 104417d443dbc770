"""Spinning against the real Claude Code and the fake model: the same instruction getting
the same answer is said to the supervisor, then escalated (exit 7, or a wait for the
person at a terminal); files changing between rounds is progress, never spinning."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ptysup.testing.fakemodel import RequestKind
from tests.e2e.conftest import Rig, Screen
from tests.e2e.test_questions import note_sink
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

TRY_AGAIN = "Please try again to find config.yaml"
CANNOT = "I cannot find config.yaml anywhere in this project."
SPINNING = {"agent": [{"reply": CANNOT}], "supervisor": [{"reply": f"[CONTINUE] {TRY_AGAIN}"}]}


def test_the_same_answer_to_the_same_instruction_escalates_with_exit_7(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = rig(SPINNING)
    sink, notes = note_sink(tmp_path)
    run = r.run("print the contents of config.yaml", "--notify", sink)
    assert run.code == 7, run.stdout + run.stderr
    # The task, then the same instruction got the same answer at turns 2, 3 and 4: three
    # decisions, and the fourth turn escalated without one.
    prompts = [q.human_text for q in r.model.requests_of(RequestKind.SUPERVISOR)]
    assert len(prompts) == 3
    assert not any("Repeating:" in p for p in prompts[:2])
    assert "Repeating: the same instruction got the same answer 2 times in a row" in prompts[2]
    assert f'"{TRY_AGAIN}"' in prompts[2] and f'"{CANNOT}"' in prompts[2]
    assert "One more identical round ends the run as an escalation" in prompts[2]
    assert r.human_texts()[-1] == TRY_AGAIN
    end = run.events[-1]
    assert (end["outcome"], end["exit_code"], end["iterations"]) == ("escalated", 7, 3)
    assert end["reason"].startswith("spinning: the same instruction got the same answer 3 times")
    assert TRY_AGAIN in end["reason"] and CANNOT in end["reason"]
    # No /clear: the agent keeps its context for the person.
    assert "/clear" not in [i["text"] for i in run.named("inject")]
    repeats = run.named("repeat")
    assert [(e["count"], e["max_repeats"]) for e in repeats] == [(2, 3), (3, 3)]
    assert repeats[0]["what"] == ["instruction", "answer", "decision"]
    (escalation,) = run.named("escalation")
    assert (escalation["at"], escalation["waiting"]) == ("repeat", False)
    assert "2x the same round (of 3 allowed): same instruction, answer, decision" in run.stdout
    # The person is told as for any escalation.
    got = [json.loads(line) for line in notes.read_text().splitlines()]
    assert [n["kind"] for n in got] == ["escalation", "run_end"]
    assert got[0]["message"] == f"waiting for you: {end['reason']}"
    replay = r.ptysup("replay", str(r.log))
    assert replay.returncode == 0, replay.stderr
    assert "repeat: 3x the same round (of 3 allowed)" in replay.stdout
    assert "escalation (repeat): spinning: the same instruction" in replay.stdout


def test_files_changing_between_rounds_is_progress_not_spinning(rig: Callable[..., Rig]) -> None:
    # The same answer every turn, but each turn writes another line of notes.
    writes = [
        {
            "times": 1,
            "steps": [
                {
                    "tool": "Write",
                    "input": {"file_path": "{workdir}/notes.txt", "content": f"looked in {d}\n"},
                },
                {"text": CANNOT},
            ],
        }
        for d in ("src", "lib", "docs", "tests")
    ]
    r = rig({"agent": writes, "supervisor": SPINNING["supervisor"]})
    subprocess.run(("git", "init", "-q"), cwd=r.project, check=True)
    run = r.run("print the contents of config.yaml", "--max-iter", "4")
    assert run.code == 3, run.stdout + run.stderr
    assert (r.project / "notes.txt").read_text() == "looked in tests\n"  # the 4th turn
    assert run.events[-1]["outcome"] == "budget" and not run.named("repeat")
    prompts = [q.human_text for q in r.model.requests_of(RequestKind.SUPERVISOR)]
    assert len(prompts) == 4 and not any("Repeating:" in p for p in prompts)


def test_spinning_in_a_terminal_waits_for_the_person_then_supervises_again(
    screen: Callable[..., Screen],
) -> None:
    scenario = {
        "agent": [
            {"match": "it is in conf/", "reply": "Found it: conf/config.yaml says hello."},
            {"reply": CANNOT},
        ],
        "supervisor": [
            {"match": "Found it: conf/config.yaml", "reply": "[COMPLETE] found it"},
            {"reply": f"[CONTINUE] {TRY_AGAIN}"},
        ],
    }
    s = screen(scenario, "print config.yaml")
    wait_for(
        lambda: "waiting for you: spinning: the same instruction" in s.status(),
        120,
        "the status line asking for the person",
    )
    escalation = s.wait_event("escalation")
    assert (escalation["at"], escalation["waiting"]) == ("repeat", True)
    assert not s.done.exists()  # the run waits for the person, it did not end
    s.send("it is in conf/")
    assert s.finish().startswith("exit=0"), s.rig.log.read_text()
    decisions = [e["action"] for e in s.events("decision")]
    assert decisions == ["continue"] * 3 + ["complete"]
    # ptysup typed nothing after the escalation: the message was the person's.
    assert [e["kind"] for e in s.events("inject")] == ["task"] + ["instruction"] * 3


def test_the_same_api_error_after_every_continue_escalates(rig: Callable[..., Rig]) -> None:
    r = rig({"agent": [{"error": 529}], "supervisor": [{"reply": "[COMPLETE]"}]})
    run = r.run("t", "--wait-base", "0.2", "--max-waits", "9")
    assert run.code == 7, run.stdout + run.stderr
    end = run.events[-1]
    assert end["reason"].startswith("spinning: the agent hit the same API error 3 times in a row")
    # The task and two `continue`s met the same error; the third `continue` got it again,
    # and that one was not waited out.
    assert [i["text"] for i in run.named("inject")] == ["t"] + ["continue"] * 3
    assert len(run.named("wait")) == 3
    assert [e["what"][1] for e in run.named("repeat")] == ["api_error"] * 2
    assert not r.model.requests_of(RequestKind.SUPERVISOR)
