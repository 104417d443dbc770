"""A person at the keyboard, in a real terminal (tmux), with the real Claude Code: the escape
key (stop, pause, resume), their typed text kept, their message overtaking a decision."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ptysup.store.runstate import PAUSED, PAUSED_IDLE, YOUR_TEXT
from ptysup.testing.fakemodel import RequestKind
from tests.e2e.conftest import Screen
from tests.helpers import FAKES, wait_for

pytestmark = pytest.mark.e2e


def test_escape_key_stop_ends_a_working_agent_gracefully_with_exit_8(
    screen: Callable[..., Screen],
) -> None:
    s = screen(
        {"agent": [{"delay": 60, "reply": "slow"}], "supervisor": [{"reply": "[COMPLETE]"}]},
        "a slow task",
    )
    s.rig.model.wait_for(lambda req: req.kind is RequestKind.AGENT, timeout=60)
    wait_for(lambda: "Ctrl-] keys" in s.status(), 10, "the escape key's hint in the status line")
    s.tmux.send_keys("C-]")
    wait_for(lambda: "s stop the run" in s.status(), 10, "the escape key's menu")
    s.tmux.send_keys("s")
    result = s.finish()
    assert result.startswith("exit=8"), s.events()
    events = s.events()
    end = events[-1]
    assert (end["event"], end["outcome"], end["exit_code"]) == ("run_end", "stopped", 8)
    assert [e["command"] for e in s.events("person_command")] == ["stop"]
    # Gracefully: the turn was interrupted (Esc), then Claude Code was asked to /exit.
    assert s.events("interrupt")[0]["confirmed"] is True
    assert not [e for e in events if e["event"] == "warning" and "did not exit" in e["message"]]
    assert [h["reason"] for h in s.events("hook") if h["name"] == "SessionEnd"] == [
        "prompt_input_exit"
    ]
    assert not s.rig.model.requests_of(RequestKind.SUPERVISOR)
    wait_for(lambda: not s.rig.leftovers(), 10, "the agent to be gone")


def test_stop_while_the_supervisor_decides_ends_it_and_counts_no_decision(
    screen: Callable[..., Screen],
) -> None:
    supervisor = [{"delay": 120, "reply": "[CONTINUE] never typed"}]
    s = screen({"agent": [{"reply": "Done with that."}], "supervisor": supervisor}, "the task")
    s.rig.model.wait_for(lambda req: req.kind is RequestKind.SUPERVISOR, timeout=60)
    s.tmux.send_keys("C-]", "s")
    result = s.finish(timeout=30)
    assert result.startswith("exit=8"), s.events()
    end = s.events()[-1]
    assert (end["outcome"], end["iterations"]) == ("stopped", 0)
    assert not s.events("decision")
    assert len(s.rig.model.requests_of(RequestKind.SUPERVISOR)) == 1  # ended, not retried
    wait_for(lambda: not s.rig.leftovers(), 10, "the supervisor and the agent to be gone")


def test_pause_hands_the_agent_to_the_person_and_resume_decides_at_once(
    screen: Callable[..., Screen],
) -> None:
    agent = [
        # The person's turn lasts long enough for the test to see it as working: an
        # instant reply can end it between two looks at state.json.
        {"match": "my own message", "delay": 3, "reply": "Done with your message."},
        {"delay": 3, "reply": "Done with the task."},
    ]
    s = screen({"agent": agent, "supervisor": [{"reply": "[COMPLETE] fine"}]}, "the task")
    s.rig.model.wait_for(lambda req: req.kind is RequestKind.AGENT, timeout=60)
    s.tmux.send_keys("C-]", "p")
    s.wait_event("person_command", command="pause")
    wait_for(lambda: "PAUSED" in s.status(), 10, "PAUSED in the status line")
    s.wait_event("turn_end")  # the task's turn ends while paused: no decision
    # `ptysup runs` shows why: the run waits on the person, not on ptysup.
    wait_for(lambda: s.state() == ("needs_input", PAUSED_IDLE), 10, "the paused run's state")
    s.send("my own message")
    prompt = s.wait_event("person_prompt")
    assert prompt["text"] == "my own message"
    wait_for(lambda: s.state() == ("working", PAUSED), 10, "the person's turn as working")

    # While paused the person's turns are theirs: no turn_end, only Claude Code's Stop hook.
    def stops() -> int:
        return len([h for h in s.events("hook") if h["name"] == "Stop"])

    wait_for(lambda: stops() == 2, 60, "the person's turn to end")
    wait_for(lambda: s.state() == ("needs_input", PAUSED_IDLE), 10, "waiting on the person")
    assert "PAUSED" in s.status()
    assert not s.rig.model.requests_of(RequestKind.SUPERVISOR)
    assert not s.events("decision")
    s.tmux.send_keys("C-]", "r")
    # The agent is idle: the supervisor is asked at once, not at some later turn end.
    result = s.finish()
    assert result.startswith("exit=0"), s.events()
    assert [e["command"] for e in s.events("person_command")] == ["pause", "resume"]
    decisions = s.events("decision")
    assert [(d["iteration"], d["action"]) for d in decisions] == [(1, "complete")]
    sup = s.rig.model.requests_of(RequestKind.SUPERVISOR)
    assert len(sup) == 1 and "Done with your message." in sup[0].human_text
    assert s.rig.human_texts() == ["the task", "my own message"]


def test_resume_while_the_agent_works_decides_at_the_end_of_that_turn(
    screen: Callable[..., Screen],
) -> None:
    agent = [
        {"match": "a slow one", "delay": 6, "reply": "Done with the slow one."},
        {"reply": "Done with the task."},
    ]
    s = screen({"agent": agent, "supervisor": [{"reply": "[COMPLETE] fine"}]}, "the task")
    s.rig.model.wait_for(lambda req: req.kind is RequestKind.AGENT, timeout=60)
    s.tmux.send_keys("C-]", "p")
    s.wait_event("person_command", command="pause")
    wait_for(lambda: "PAUSED" in s.status(), 10, "PAUSED in the status line")
    s.wait_event("turn_end")
    s.send("a slow one")
    s.wait_event("person_prompt")
    s.tmux.send_keys("C-]", "r")  # while the person's turn is still running
    s.wait_event("person_command", command="resume")
    assert not s.rig.model.requests_of(RequestKind.SUPERVISOR)
    result = s.finish()
    assert result.startswith("exit=0"), s.events()
    sup = s.rig.model.requests_of(RequestKind.SUPERVISOR)
    assert len(sup) == 1 and "Done with the slow one." in sup[0].human_text
    assert [t["kind"] for t in s.events("turn_end")] == ["stop", "stop"]


def test_the_persons_typed_text_survives_a_turn_end(screen: Callable[..., Screen]) -> None:
    agent = [
        {"match": "keep this text", "reply": "Done with your text."},
        {"delay": 4, "reply": "Done with the task."},
    ]
    s = screen({"agent": agent, "supervisor": [{"reply": "[COMPLETE] fine"}]}, "the task")
    s.rig.model.wait_for(lambda req: req.kind is RequestKind.AGENT, timeout=60)
    s.tmux.send_keys("-l", "keep this text")
    s.wait_event("turn_end")
    s.wait_event("person_input", state="typing")
    wait_for(lambda: "waiting: your text" in s.status(), 10, "the status to say why")
    assert s.state() == ("needs_input", YOUR_TEXT)  # as `ptysup runs` shows it
    # ptysup neither asks the supervisor nor types over the person's text.
    assert "❯ keep this text" in s.text()
    assert not s.rig.model.requests_of(RequestKind.SUPERVISOR)
    s.tmux.send_keys("Enter")
    result = s.finish()
    assert result.startswith("exit=0"), s.events()
    assert s.rig.human_texts() == ["the task", "keep this text"]
    assert [e["state"] for e in s.events("person_input")] == ["typing", "submitted"]
    assert [e["text"] for e in s.events("person_prompt")] == ["keep this text"]
    events = s.events()
    assert not [e for e in events if e["event"] == "warning" and "input box" in e["message"]]
    assert [(d["iteration"], d["action"]) for d in s.events("decision")] == [(1, "complete")]


def test_a_message_queued_while_the_agent_works_is_decided_once_at_the_end_of_its_turn(
    screen: Callable[..., Screen],
) -> None:
    # Sent during a turn, Claude Code queues the message and submits it as the turn ends:
    # two Stops a moment apart. The supervisor decides once, on the queued turn's result,
    # and the instruction it gives gets its own turn end (not the queued turn's Stop).
    agent = [
        {"match": "steer it this way", "reply": "Steered as you said."},
        {"match": "the next step", "delay": 2, "reply": "Did the next step."},
        {"delay": 6, "reply": "Done with the task."},
    ]
    supervisor = [
        {"match": "Did the next step", "reply": "[COMPLETE] fine"},
        {"match": "Steered as you said", "reply": "[CONTINUE] the next step"},
        {"reply": "[ABORT] decided on the wrong turn"},
    ]
    s = screen({"agent": agent, "supervisor": supervisor}, "the task")
    s.rig.model.wait_for(lambda req: req.kind is RequestKind.AGENT, timeout=60)
    s.send("steer it this way")
    result = s.finish()
    assert result.startswith("exit=0"), s.events()
    assert s.rig.human_texts() == ["the task", "steer it this way", "the next step"]
    assert [e["text"] for e in s.events("person_prompt")] == ["steer it this way"]
    decisions = [(d["iteration"], d["action"]) for d in s.events("decision")]
    assert decisions == [(1, "continue"), (2, "complete")]
    assert [t["detail"] for t in s.events("turn_end")] == [
        "Steered as you said.",
        "Did the next step.",
    ]


def test_ctrl_z_does_not_leave_claude_code_suspended_with_no_shell_to_resume_it(
    screen: Callable[..., Screen],
) -> None:
    # Claude Code suspends itself on Ctrl-Z and waits for a `fg`; under ptysup there is no
    # job-control shell (and the kernel drops the stop: an orphaned process group), so it
    # would wait for ever with its keyboard off. ptysup resumes it and says why.
    agent = [{"match": "the task", "delay": 3, "reply": "Done with the task."}]
    s = screen({"agent": agent, "supervisor": [{"reply": "[COMPLETE] fine"}]}, "the task")
    s.rig.model.wait_for(lambda req: req.kind is RequestKind.AGENT, timeout=60)
    s.tmux.send_keys("C-z")
    s.wait_event("warning", message=SUSPENDED_WARNING)
    s.tmux.send_keys("-l", "still mine")
    wait_for(lambda: "❯ still mine" in s.text(), 10, "the person's keys in the input box again")
    s.tmux.send_keys(*["BSpace"] * len("still mine"))
    result = s.finish()
    assert result.startswith("exit=0"), s.events()


SUSPENDED_WARNING = (
    "the agent suspended itself (Ctrl-Z) where no shell can bring it back: resumed it"
)


def test_text_the_person_deletes_lets_supervision_go_on(screen: Callable[..., Screen]) -> None:
    agent = [{"delay": 4, "reply": "Done with the task."}]
    s = screen({"agent": agent, "supervisor": [{"reply": "[COMPLETE] fine"}]}, "the task")
    s.rig.model.wait_for(lambda req: req.kind is RequestKind.AGENT, timeout=60)
    s.tmux.send_keys("-l", "never mind")
    s.wait_event("person_input", state="typing")
    assert not s.rig.model.requests_of(RequestKind.SUPERVISOR)
    s.tmux.send_keys(*["BSpace"] * len("never mind"))
    s.wait_event("person_input", state="cleared")
    result = s.finish()
    assert result.startswith("exit=0"), s.events()
    assert s.rig.human_texts() == ["the task"]
    assert not s.events("person_prompt")
    assert [(d["iteration"], d["action"]) for d in s.events("decision")] == [(1, "complete")]


def test_a_message_sent_while_the_supervisor_decides_cancels_that_decision(
    screen: Callable[..., Screen],
) -> None:
    agent = [{"reply": "Done with that."}]
    supervisor = [
        {"times": 1, "delay": 60, "reply": "[CONTINUE] a stale instruction"},
        {"reply": "[COMPLETE] fine"},
    ]
    s = screen({"agent": agent, "supervisor": supervisor}, "the task")
    s.rig.model.wait_for(lambda req: req.kind is RequestKind.SUPERVISOR, timeout=60)
    s.send("a message of mine")
    cancelled = s.wait_event("decision_cancelled", timeout=20)
    assert cancelled["iteration"] == 1
    result = s.finish()
    assert result.startswith("exit=0"), s.events()
    assert s.rig.human_texts() == ["the task", "a message of mine"]
    assert [e["text"] for e in s.events("person_prompt")] == ["a message of mine"]
    # The cancelled decision counted no iteration; the one after the person's turn is 1.
    assert [(d["iteration"], d["action"]) for d in s.events("decision")] == [(1, "complete")]
    assert s.events()[-1]["iterations"] == 1
    assert "a stale instruction" not in s.text()
    assert len(s.rig.model.requests_of(RequestKind.SUPERVISOR)) == 2


def test_a_line_sent_to_a_generic_agent_while_the_supervisor_decides_cancels_it(
    screen: Callable[..., Screen], tmp_path: Path
) -> None:
    supervisor = [
        {"times": 1, "delay": 60, "reply": "[CONTINUE] a stale instruction"},
        {"reply": "[COMPLETE] fine"},
    ]
    messages = tmp_path / "agent.jsonl"
    agent = f"{sys.executable} {FAKES / 'agent.py'}"
    s = screen(
        {"supervisor": supervisor},
        "the task",
        *("--agent-cmd", agent, "--idle", "1"),
        env={"FAKE_AGENT_LOG": str(messages)},
    )
    s.rig.model.wait_for(lambda req: req.kind is RequestKind.SUPERVISOR, timeout=60)
    # Ctrl-] twice sends Ctrl-] itself on to the agent.
    s.tmux.send_keys("-l", "hello")
    s.tmux.send_keys("C-]", "C-]")
    s.tmux.send_keys("-l", " there")
    s.tmux.send_keys("Enter")
    assert s.wait_event("decision_cancelled", timeout=20)["iteration"] == 1
    result = s.finish()
    assert result.startswith("exit=0"), s.events()
    received = [json.loads(line)["message"] for line in messages.read_text().splitlines()]
    assert received == ["the task", "hello\x1d there"]
    # Without hooks the words are not known, only that the person sent a line.
    assert [e["text"] for e in s.events("person_prompt")] == [None]
    assert [(d["iteration"], d["action"]) for d in s.events("decision")] == [(1, "complete")]
