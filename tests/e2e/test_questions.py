"""The agent's questions (AskUserQuestion) answered through the PreToolUse hook, and
[ESCALATE]: against the real Claude Code and the fake model."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from ptysup.testing.fakemodel import RecordedRequest, RequestKind
from tests.e2e.conftest import AGENT, Rig, Screen
from tests.helpers import (
    DIALOG_STALL_S,
    Tmux,
    ask_step,
    ptysup_argv,
    read_events,
    terminal_script,
    wait_for,
)

pytestmark = pytest.mark.e2e


STORAGE = ask_step("Storage", "Which storage should the cache use?", ["SQLite", "Redis", "Files"])
FEATURES = ask_step("Features", "Which features to add?", ["Logging", "Metrics", "Tracing"], True)
NAME = ask_step("Name", "What should the module be called?", ["cache", "store"])


# The tool result of a question answered from the hook. Claude Code 2.1.332 words it
# "The user answered: …" when an answer is not one of the labels (2.1.197: always the first).
ANSWERED = ("Your questions have been answered:", "The user answered:")


def _asked(header: str) -> str:
    """A regex for the supervisor prompt that asks this question (not a turn end's)."""
    return rf"The agent asks:\nQuestion 1 \[{header}\]"


def tool_results(request: RecordedRequest) -> list[str]:
    """The tool_result texts in the newest message of a request the model received."""
    last: Mapping[str, Any] = request.body["messages"][-1]
    found = []
    for block in last.get("content") or ():
        if isinstance(block, Mapping) and block.get("type") == "tool_result":
            content = block.get("content")
            if isinstance(content, list):
                content = " ".join(str(c.get("text", "")) for c in content)
            found.append(str(content))
    return found


def note_sink(tmp_path: Path) -> tuple[str, Path]:
    """A --notify command that appends what it gets on stdin to a file."""
    notes = tmp_path / "notes.jsonl"
    script = tmp_path / "sink.py"
    script.write_text(f"import sys\nopen({str(notes)!r}, 'a').write(sys.stdin.read())\n")
    return f"python3 {script}", notes


def test_questions_are_answered_by_the_supervisor(rig: Callable[..., Rig]) -> None:
    r = rig(
        {
            "agent": [{"steps": [STORAGE, FEATURES, NAME, {"text": "Built the cache."}]}],
            "supervisor": [
                {"regex": _asked("Storage"), "reply": "[CONTINUE] sqlite"},
                {"regex": _asked("Features"), "reply": "[CONTINUE] logging, METRICS"},
                {"regex": _asked("Name"), "reply": "[CONTINUE] call it memo_cache"},
                {"reply": "[COMPLETE] built"},
            ],
        }
    )
    run = r.run("build the cache", "--max-iter", "10")
    assert run.code == 0, run.stdout + run.stderr
    results = [t for req in r.model.requests_of(RequestKind.AGENT) for t in tool_results(req)]
    answered = [t for t in results if t.startswith(ANSWERED)]
    assert len(answered) == 3, results
    assert '"Which storage should the cache use?"="SQLite"' in answered[0]
    assert '"Which features to add?"="Logging, Metrics"' in answered[1]
    assert '"What should the module be called?"="call it memo_cache"' in answered[2]
    # The supervisor saw each question with its header, options, descriptions and kind.
    sup = r.model.requests_of(RequestKind.SUPERVISOR)
    assert len(sup) == 4
    first = sup[0].human_text
    assert "Question 1 [Storage]: Which storage should the cache use?" in first
    assert "- Redis: about Redis" in first and "choose one" in first
    assert "several may be chosen" in sup[1].human_text
    assert "Iteration 2/10" in sup[1].human_text and "Iteration 4/10" in sup[3].human_text
    questions = run.named("question")
    assert [q["to"] for q in questions] == ["supervisor"] * 3
    assert questions[1]["questions"][0]["multi_select"] is True
    assert questions[0]["questions"][0]["options"] == ["SQLite", "Redis", "Files"]
    answers = run.named("answer")
    assert [a["by"] for a in answers] == ["supervisor"] * 3
    assert answers[0]["answers"] == {"Which storage should the cache use?": "SQLite"}
    assert all(a["delivered"] for a in answers)
    # The CI log says it in one readable line each.
    assert "to supervisor: Which storage should the cache use? [SQLite | Redis | Files]" in (
        run.stdout
    )
    assert "by supervisor: Which features to add? → Logging, Metrics" in run.stdout
    # No picker was left open, nothing was dismissed, and only the task was typed.
    assert not run.named("dialog_dismissed")
    assert [i["kind"] for i in run.named("inject")] == ["task"]
    assert run.events[-1]["iterations"] == 4


def test_escalating_a_question_without_a_terminal_ends_the_run(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = rig(
        {
            "agent": [{"steps": [STORAGE, {"text": "Stopping here."}]}],
            "supervisor": [{"reply": "[ESCALATE] the product owner must choose the storage"}],
        }
    )
    sink, notes = note_sink(tmp_path)
    run = r.run("build the cache", "--notify", sink)
    assert run.code == 7, run.stdout + run.stderr
    assert len(r.model.requests_of(RequestKind.SUPERVISOR)) == 1
    assert "/clear" not in [i["text"] for i in run.named("inject")]
    (escalation,) = run.named("escalation")
    assert (escalation["at"], escalation["waiting"]) == ("question", False)
    end = run.events[-1]
    assert (end["outcome"], end["exit_code"]) == ("escalated", 7)
    assert end["reason"] == "the product owner must choose the storage"
    # The question's hook got a refusal with the reason, so Claude Code never waited on it.
    results = [t for req in r.model.requests_of(RequestKind.AGENT) for t in tool_results(req)]
    refusal = "Only a person can answer this; the run stops here: the product owner must"
    assert any(refusal in t for t in results), results
    kinds = [json.loads(line)["kind"] for line in notes.read_text().splitlines()]
    assert kinds == ["escalation", "run_end"]


def test_escalate_at_a_turn_end_in_ci_exits_7_and_says_why_everywhere(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = rig(
        {
            "agent": [{"reply": "I need the deploy key to go on."}],
            "supervisor": [{"reply": "[ESCALATE] only a person has the deploy key"}],
        }
    )
    step = tmp_path / "step-summary.md"
    r.env.update(GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(step))
    sink, notes = note_sink(tmp_path)
    summary = tmp_path / "summary.json"
    run = r.run("deploy it", "--notify", sink, "--summary-json", str(summary))
    assert run.code == 7, run.stdout + run.stderr
    reason = "only a person has the deploy key"
    # No /clear (the agent keeps its context) and no further supervisor call.
    assert [i["kind"] for i in run.named("inject")] == ["task"]
    assert len(r.model.requests_of(RequestKind.SUPERVISOR)) == 1
    assert [d["action"] for d in run.named("decision")] == ["escalate"]
    end = run.events[-1]
    assert (end["event"], end["outcome"], end["reason"]) == ("run_end", "escalated", reason)
    assert f"::error title=ptysup escalated to a person::{reason}" in run.stdout
    assert "::error title=ptysup escalated::exit 7" in run.stdout
    assert f"**Waiting for a person:** {reason}" in step.read_text()
    data = json.loads(summary.read_text())
    assert (data["outcome"], data["exit_code"], data["escalation"]) == ("escalated", 7, reason)
    got = [json.loads(line) for line in notes.read_text().splitlines()]
    assert [n["kind"] for n in got] == ["escalation", "run_end"]
    assert got[0]["message"] == f"waiting for you: {reason}"
    assert got[0]["run_id"] == run.events[0]["run_id"] and got[0]["task"] == "deploy it"
    assert got[1]["exit_code"] == 7


def test_questions_left_to_a_person_and_a_dialog_nobody_answers(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = rig(
        {
            "agent": [{"steps": [STORAGE, {"text": "Going on."}]}],
            "supervisor": [{"reply": "[ESCALATE] the picker needs a person"}],
        }
    )
    sink, notes = note_sink(tmp_path)
    run = r.run(
        "build the cache",
        "--questions",
        "person",
        "--turn-timeout",
        DIALOG_STALL_S,
        "--notify",
        sink,
    )
    assert run.code == 7, run.stdout + run.stderr
    (question,) = run.named("question")
    assert question["to"] == "person" and not run.named("answer")
    # The picker stayed open; without a terminal nobody but the supervisor can act on it,
    # so it was asked as soon as the picker was drawn (not after --turn-timeout), and saw
    # it on the screen.
    (turn,) = run.named("turn_end")
    assert (turn["kind"], turn["dialog"]) == ("dialog", True)
    (sup,) = r.model.requests_of(RequestKind.SUPERVISOR)
    assert "Which storage should the cache use?" in sup.human_text
    assert "The agent asks:" not in sup.human_text
    assert "A dialog is open on the agent's screen and no one answered it" in sup.human_text
    assert run.named("escalation")[0]["at"] == "turn_end"
    kinds = [json.loads(line)["kind"] for line in notes.read_text().splitlines()]
    assert kinds == ["person", "person", "escalation", "run_end"]


def test_escalate_in_a_terminal_waits_for_the_person_then_supervises_again(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = rig(
        {
            "agent": [
                {"match": "use the staging key", "reply": "Deployed with the staging key."},
                {"reply": "Which key should I deploy with?"},
            ],
            "supervisor": [
                {"match": "Deployed with the staging key", "reply": "[COMPLETE] deployed"},
                {"reply": "[ESCALATE] which deploy key to use"},
            ],
        }
    )
    done = tmp_path / "done"
    argv = ptysup_argv("deploy it", "--agent-cmd", AGENT, "--log-file", str(r.log))
    tmux = Tmux("ptysup-escalate")
    script = terminal_script(tmp_path / "run.sh", r.project, r.env, argv, done)
    # The run waits for a file, so the pane's raw output is piped before ptysup starts.
    go = tmp_path / "go"
    script.write_text(f"while [ ! -e {go} ]; do sleep 0.05; done\n" + script.read_text())
    raw = tmp_path / "raw"
    tmux.start(script)
    try:
        tmux.pipe_to(raw)
        go.touch()

        def status_row() -> str:
            lines = tmux.capture().rstrip("\n").splitlines()
            return lines[-1] if lines else ""

        wait_for(
            lambda: "waiting for you: which deploy key to use" in status_row(),
            90,
            "the status line asking for the person",
        )
        assert not done.exists()  # the run waits for the person, it did not end
        # The bell and both desktop notifications reached the terminal, whole.
        alert = (
            b"\x07\x1b]9;ptysup: waiting for you: which deploy key to use\x07"
            b"\x1b]777;notify;ptysup;waiting for you: which deploy key to use\x07"
        )
        wait_for(lambda: alert in raw.read_bytes(), 10, "the bell and OSC 9/777")
        tmux.send_keys("-l", "use the staging key")
        wait_for(
            lambda: "use the staging key" in tmux.capture().replace("\xa0", " "),
            10,
            "the person's text in the input box",
        )
        tmux.send_keys("Enter")
        wait_for(done.exists, 90, "ptysup to finish")
        result = done.read_text()
    finally:
        tmux.kill()
    assert result.startswith("exit=0"), r.log.read_text()
    events = read_events(r.log)
    decisions = [e["action"] for e in events if e["event"] == "decision"]
    assert decisions == ["escalate", "complete"]
    (escalation,) = [e for e in events if e["event"] == "escalation"]
    assert escalation["waiting"] is True
    # Only the task was typed by ptysup: the second message was the person's own.
    assert [e["kind"] for e in events if e["event"] == "inject"] == ["task"]
    assert r.human_texts()[:2] == ["deploy it", "use the staging key"]
    assert "Iteration 2/50" in r.model.requests_of(RequestKind.SUPERVISOR)[1].human_text
    assert events[-1]["outcome"] == "complete"


def test_a_question_still_waiting_when_the_time_budget_ends_is_refused_first(
    rig: Callable[..., Rig],
) -> None:
    r = rig(
        {
            "agent": [{"steps": [STORAGE, {"text": "Stopped."}]}],
            "supervisor": [{"delay": 120, "reply": "[CONTINUE] sqlite"}],
        }
    )
    run = r.run("build the cache", "--max-time", "8s")
    assert run.code == 3, run.stdout + run.stderr
    assert run.events[-1]["outcome"] == "time" and run.events[-1]["elapsed_s"] < 60
    # The hook got a refusal, so Claude Code never waits on it; the turn is then
    # interrupted (a hard stop), so whether the refusal still reaches the model is a race.
    (refusal,) = run.named("answer")
    assert (refusal["by"], refusal["refused"]) == (
        "ptysup",
        "The run ended before your question was answered.",
    )
    results = [t for req in r.model.requests_of(RequestKind.AGENT) for t in tool_results(req)]
    assert all("Which storage" not in t for t in results)  # never answered
    clear = run.named("inject")[-1]
    assert (clear["text"], clear["confirmed"]) == ("/clear", True)


def _press_until(tmux: Tmux, key: str, shown: str, tries: int = 10) -> None:
    """Claude Code draws its picker a moment before it takes keys: press `key` until the
    pane shows `shown`, waiting after each press so that no press is one too many."""
    for _ in range(tries):
        tmux.send_keys(key)
        try:
            wait_for(lambda: shown in tmux.capture(), 3, shown)
            return
        except AssertionError:
            continue
    raise AssertionError(f"{shown!r} never showed after pressing {key}")


@pytest.mark.parametrize("how", ["--questions person", "escalated"])
def test_in_a_terminal_the_person_answers_the_picker(
    rig: Callable[..., Rig], tmp_path: Path, how: str
) -> None:
    # Left to the person from the start, or after the supervisor escalated the question.
    r = rig(
        {
            "agent": [{"steps": [STORAGE, {"text": "Using what you chose."}]}],
            "supervisor": [
                {"regex": _asked("Storage"), "reply": "[ESCALATE] you own the storage choice"},
                {"reply": "[COMPLETE] done"},
            ],
        }
    )
    done = tmp_path / "done"
    extra = ["--questions", "person"] if how == "--questions person" else []
    argv = ptysup_argv("build the cache", "--agent-cmd", AGENT, "--log-file", str(r.log), *extra)
    tmux = Tmux("ptysup-person")
    tmux.start(terminal_script(tmp_path / "run.sh", r.project, r.env, argv, done))
    try:
        wait_for(lambda: "❯ 1. SQLite" in tmux.capture(), 60, "the picker")
        why = "the agent asks a question" if extra else "you own the storage choice"
        wait_for(
            lambda: f"waiting for you: {why}" in tmux.capture().rstrip("\n").splitlines()[-1],
            10,
            "the status line",
        )
        _press_until(tmux, "Down", "❯ 2. Redis")
        tmux.send_keys("Enter")
        wait_for(done.exists, 60, "ptysup to finish")
        result = done.read_text()
    finally:
        tmux.kill()
    assert result.startswith("exit=0"), r.log.read_text()
    events = read_events(r.log)
    (question,) = [e for e in events if e["event"] == "question"]
    assert question["to"] == ("person" if extra else "supervisor")
    (answer,) = [e for e in events if e["event"] == "answer"]
    assert answer == {**answer, "by": "person"}
    assert answer["answers"] == {"Which storage should the cache use?": "Redis"}
    sup = r.model.requests_of(RequestKind.SUPERVISOR)
    # Only an escalated question was shown to the supervisor; the last call is the turn end.
    asked = [False] if extra else [True, False]
    assert ["The agent asks:" in req.human_text for req in sup] == asked
    assert [d["action"] for d in events if d["event"] == "decision"] == (
        ["complete"] if extra else ["escalate", "complete"]
    )
    results = [t for req in r.model.requests_of(RequestKind.AGENT) for t in tool_results(req)]
    assert any('"Which storage should the cache use?"="Redis"' in t for t in results), results


def test_a_person_who_dismisses_an_escalated_picker_keeps_the_agent_until_their_turn_ends(
    screen: Callable[..., Screen],
) -> None:
    # Esc on the picker ends the agent's turn without a Stop: the run goes on waiting for
    # the person, and decides once, at the end of the turn they start.
    scenario = {
        "agent": [{"steps": [STORAGE, {"text": "Using files as you said."}]}],
        "supervisor": [
            {"regex": _asked("Storage"), "reply": "[ESCALATE] you own the storage choice"},
            {"match": "Using files as you said", "reply": "[COMPLETE] done"},
            {"reply": "[CONTINUE] decided without the person"},
        ],
    }
    s = screen(scenario, "build the cache")
    wait_for(lambda: "❯ 1. SQLite" in s.text(), 60, "the picker")
    wait_for(lambda: "waiting for you" in s.status(), 10, "the status line")
    s.tmux.send_keys("Escape")
    s.wait_event("turn_end", kind="screen", timeout=30)  # the turn the Esc ended
    s.send("use files, I decide")
    assert s.finish().startswith("exit=0"), s.events()
    assert [d["action"] for d in s.events("decision")] == ["escalate", "complete"]
    assert "decided without the person" not in json.dumps(s.events())


def test_sigterm_while_the_supervisor_weighs_a_question_ends_everything(
    rig: Callable[..., Rig],
) -> None:
    r = rig(
        {
            "agent": [{"steps": [STORAGE, {"text": "Stopped."}]}],
            "supervisor": [{"delay": 120, "reply": "[CONTINUE] sqlite"}],
        }
    )
    proc = r.popen("build the cache")
    try:
        wait_for(lambda: r.model.requests_of(RequestKind.SUPERVISOR), 60, "the question's decision")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 143
    finally:
        if proc.poll() is None:
            proc.kill()
    events = read_events(r.log)
    # The question was refused (never answered) before the run ended.
    asked = [e for e in events if e["event"] in ("question", "answer")]
    assert [e["event"] for e in asked] == ["question", "answer"]
    assert (asked[1]["by"], asked[1]["refused"]) == (
        "ptysup",
        "The run ended before your question was answered.",
    )
    assert (events[-1]["event"], events[-1]["outcome"]) == ("run_end", "signal")
    # Neither Claude Code (waiting on the hook) nor its hook client outlives the run.
    wait_for(lambda: not r.leftovers(), 10, "the agent's processes to be gone")
