"""Steering a live run from another shell with the real agents: `ptysup send` types into
it as the person, `ptysup budget` moves its limits, `ptysup stop` ends it (exit 8), and a
run without a terminal that escalates waits --escalate-wait for an answer sent so."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from ptysup.testing.fakemodel import RequestKind
from tests.e2e.conftest import Rig
from tests.helpers import read_events, wait_for

MakeRig = Callable[[Mapping[str, Any]], Rig]


def events(r: Rig, name: str) -> list[dict[str, Any]]:
    return [e for e in read_events(r.log) if e["event"] == name] if r.log.exists() else []


def state(r: Rig) -> dict[str, Any]:
    run_id = read_events(r.log)[0]["run_id"]
    text = (r.project / ".ptysup" / "runs" / run_id / "state.json").read_text()
    return dict(json.loads(text))


def finish(proc: subprocess.Popen[str]) -> tuple[int, str]:
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out + err


def said(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1, done.stdout
    return lines[0]


# The agent answers, the supervisor thinks long: the person's message overtakes it.
OVERTAKEN = {
    "agent": [
        {"match": "use the blue one", "reply": "Blue one used."},
        {"reply": "Which colour? I picked red."},
    ],
    "supervisor": [
        {"match": "Blue one used.", "reply": "[COMPLETE] blue it is"},
        {"delay": 120, "reply": "[COMPLETE] never given"},
    ],
}


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_a_message_sent_from_another_shell_is_the_persons(
    agent: str, rig: MakeRig, codex_rig: MakeRig
) -> None:
    r = (rig if agent == "claude" else codex_rig)(OVERTAKEN)
    proc = r.popen("the task")
    try:
        r.model.wait_for(lambda q: q.kind is RequestKind.SUPERVISOR, timeout=90)
        line = said(r.ptysup("send", "last", "use the blue one"))
        assert "typed your message into the agent" in line
        code, out = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 0, out
    assert "use the blue one" in r.human_texts()
    acted = events(r, "person_action")
    assert [(a["action"], a["text"]) for a in acted] == [("send", "use the blue one")]
    assert acted[0]["source"].startswith("shell pid ")
    cancelled = events(r, "decision_cancelled")
    assert cancelled and "the person's message" in cancelled[0]["reason"]
    assert "person_action" in out  # the CI log's line


# One decision allowed; the supervisor wants two. Raised while it decides the first.
TWO_ROUNDS = {
    "agent": [
        {"match": "second part", "reply": "Second part done."},
        {"reply": "First part done."},
    ],
    "supervisor": [
        {"match": "Second part done.", "reply": "[COMPLETE] both parts done"},
        {"delay": 8, "reply": "[CONTINUE] now the second part"},
    ],
}


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_a_raised_budget_lets_a_run_go_on_that_would_have_stopped(
    agent: str, rig: MakeRig, codex_rig: MakeRig
) -> None:
    r = (rig if agent == "claude" else codex_rig)(TWO_ROUNDS)
    proc = r.popen("the task", "--max-iter", "1")
    try:
        r.model.wait_for(lambda q: q.kind is RequestKind.SUPERVISOR, timeout=90)
        refused = r.ptysup("budget", "last", "--max-iter", "-1")
        assert refused.returncode == 2
        assert refused.stderr.splitlines() == [
            "ptysup: budget: --max-iter: 0 is below what is used (1)"
        ]
        line = said(r.ptysup("budget", "last", "--max-iter", "+2", "--max-time", "2h"))
        assert "budgets now 3 iterations" in line and "2h" in line
        assert state(r)["budgets"] == {"max_iter": 3, "max_time": 7200.0, "max_cost": None}
        code, out = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 0, out
    assert [d["max_iter"] for d in events(r, "decision")] == [3, 3]
    assert [(b["max_iter"], b["max_time"]) for b in events(r, "budget")] == [(3, 7200.0)]
    listed = r.ptysup("runs")
    assert "2/3" in listed.stdout, listed.stdout


def test_stop_from_another_shell_ends_the_run_as_the_escape_key_does(rig: MakeRig) -> None:
    r = rig({"agent": [{"delay": 120, "reply": "never read"}]})
    proc = r.popen("the task")
    try:
        r.model.wait_for(lambda q: q.kind is RequestKind.AGENT, timeout=90)
        assert "stopping" in said(r.ptysup("stop", "last"))
        code, out = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 8, out
    assert events(r, "run_end")[0]["outcome"] == "stopped"
    assert [a["action"] for a in events(r, "person_action")] == ["stop"]
    after = r.ptysup("stop", "last")  # a finished run
    assert after.returncode == 2
    assert "is not running (it ended: stopped)" in after.stderr


ESCALATES = {
    "agent": [
        {"match": "use sqlite", "reply": "SQLite it is."},
        {"reply": "Should the cache use SQLite or Redis?"},
    ],
    "supervisor": [
        {"match": "SQLite it is.", "reply": "[COMPLETE] cache on SQLite"},
        {"reply": "[ESCALATE] a person must choose the cache's storage"},
    ],
}


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_a_headless_escalation_waits_for_an_answer_sent_from_another_shell(
    agent: str, rig: MakeRig, codex_rig: MakeRig
) -> None:
    r = (rig if agent == "claude" else codex_rig)(ESCALATES)
    proc = r.popen("the task", "--escalate-wait", "5m")
    try:
        wait_for(lambda: events(r, "escalation"), 90, "the escalation")
        escalation = events(r, "escalation")[0]
        run_id = read_events(r.log)[0]["run_id"]
        assert escalation["waiting"] is True and escalation["wait_s"] == 300
        assert escalation["answer_with"] == f'ptysup send {run_id} "your answer"'
        wait_for(lambda: state(r)["waiting"] is not None, 20, "state.json's waiting")
        waiting = state(r)["waiting"]
        assert waiting["kind"] == "escalation" and "cache's storage" in waiting["text"]
        assert waiting["until"] > escalation["ts"] + 290
        said(r.ptysup("send", run_id, "use sqlite"))
        code, out = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 0, out
    assert f'for an answer: ptysup send {run_id} "your answer"' in out  # the CI log says how
    assert "use sqlite" in r.human_texts()
    assert events(r, "run_end")[0]["outcome"] == "complete"


def test_a_headless_escalation_nobody_answers_ends_with_exit_7(rig: MakeRig) -> None:
    r = rig(ESCALATES)
    code, out = finish(r.popen("the task", "--escalate-wait", "3s"))
    assert code == 7, out
    warned = [w["message"] for w in events(r, "warning")]
    assert "nobody answered within --escalate-wait (3s)" in warned
    assert state(r)["waiting"] is None
