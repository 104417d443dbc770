"""Steering a live run from another shell with the real agents: `ptysup send` types into
it as the person, `ptysup budget` moves its limits, `ptysup stop` ends it (exit 8), and a
run without a terminal that escalates waits --escalate-wait for an answer sent so."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from ptysup.attach import steer
from ptysup.testing.fakemodel import RequestKind
from tests.e2e.conftest import Rig, Screen
from tests.helpers import read_events, wait_for
from tests.otheruser import OtherUser, other_user

MakeRig = Callable[[Mapping[str, Any]], Rig]


def events(r: Rig, name: str) -> list[dict[str, Any]]:
    return [e for e in read_events(r.log) if e["event"] == name] if r.log.exists() else []


def state(r: Rig) -> dict[str, Any]:
    """The run's state.json; empty until the run has one."""
    runs = r.project / ".ptysup" / "runs"
    found = list(runs.glob("*/state.json")) if runs.is_dir() else []
    return dict(json.loads(found[0].read_text())) if found else {}


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
        wait_for(lambda: state(r).get("waiting") is not None, 20, "state.json's waiting")
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


def as_user(user: OtherUser, run_dir: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    """`ptysup ARGS` as USER, who may look into RUN_DIR: every folder on the way searchable
    (again: another pytest session on the machine makes /tmp/pytest-of-root private at its
    start)."""
    for folder in [run_dir, *run_dir.parents]:
        folder.chmod(folder.stat().st_mode | 0o005)
    return user.ptysup(args)


def test_another_local_user_cannot_steer_a_run(rig: MakeRig, tmp_path: Path) -> None:
    user = other_user(tmp_path)
    r = rig({"agent": [{"delay": 120, "reply": "never read"}]})
    proc = r.popen("the task")
    try:
        r.model.wait_for(lambda q: q.kind is RequestKind.AGENT, timeout=90)
        run_dir = r.project / ".ptysup" / "runs" / read_events(r.log)[0]["run_id"]
        # The other user may even look at the run (its folder, lock and socket's path):
        # the socket's private folder keeps them out all the same...
        for name in ("lock", "attach"):
            (run_dir / name).chmod(0o644)
        asks = (
            ["send", str(run_dir), "hello"],
            ["budget", str(run_dir), "--max-iter", "+5"],
            ["stop", str(run_dir)],
        )
        for ask in asks:
            done = as_user(user, run_dir, ask)
            assert done.returncode == 2, done
            assert done.stderr.startswith(f"ptysup: {ask[0]}: cannot reach run ")
            assert "only the user who started a run may attach to it or steer it" in done.stderr
        # ...and with the socket itself opened to everyone, the run asks the kernel who
        # connected, and closes on them without a word.
        socket_path = Path((run_dir / "attach").read_text().strip())
        folder_mode = socket_path.parent.stat().st_mode
        socket_path.parent.chmod(folder_mode | 0o001)
        socket_path.chmod(0o666)
        try:
            for ask in asks:
                done = as_user(user, run_dir, ask)
                assert done.returncode == 2, done
                assert "closed the connection without an answer" in done.stderr
        finally:
            socket_path.parent.chmod(folder_mode)
        assert not events(r, "person_action")
        assert proc.poll() is None  # the run goes on, its budgets as they were
        assert state(r)["budgets"]["max_iter"] == 50
        said(r.ptysup("stop", "last"))  # its own user may
        code, out = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 8, out


STORAGE = {
    "tool": "AskUserQuestion",
    "input": {
        "questions": [
            {
                "question": "Which storage should the cache use?",
                "header": "Storage",
                "multiSelect": False,
                "options": [{"label": x, "description": f"about {x}"} for x in ("SQLite", "Redis")],
            }
        ]
    },
}


def test_a_question_escalated_in_ci_is_answered_with_ptysup_send(rig: MakeRig) -> None:
    r = rig(
        {
            "agent": [{"steps": [STORAGE, {"text": "Built the cache."}]}],
            "supervisor": [
                {"regex": r"The agent asks:", "reply": "[ESCALATE] only the team knows"},
                {"reply": "[COMPLETE] built"},
            ],
        }
    )
    proc = r.popen("build the cache", "--escalate-wait", "5m")
    try:
        wait_for(lambda: state(r).get("waiting") is not None, 90, "the question held open")
        waiting = state(r)["waiting"]
        assert waiting["kind"] == "question" and waiting["options"] == ["SQLite", "Redis"]
        assert "Which storage should the cache use?" in waiting["text"]
        line = said(r.ptysup("send", "last", "redis"))
        assert "answered the agent's question" in line
        code, out = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 0, out
    (answer,) = events(r, "answer")
    assert answer["by"] == "person"
    assert answer["answers"] == {"Which storage should the cache use?": "Redis"}
    results = [str(q.body["messages"][-1]) for q in r.model.requests_of(RequestKind.AGENT)]
    assert any("Which storage should the cache use?" in t and "Redis" in t for t in results)


WRITE_HELLO = {
    "match": "create hello.txt",
    "steps": [
        {
            "text": "Creating it.",
            "tool": "Write",
            "input": {"file_path": "{workdir}/hello.txt", "content": "hello\n"},
        },
        {"text": "Created hello.txt."},
    ],
}


def test_a_dialog_is_approved_from_elsewhere_only_as_shown(rig: MakeRig) -> None:
    r = rig(
        {
            "agent": [WRITE_HELLO],
            "supervisor": [
                {"times": 1, "reply": "[ESCALATE] a person must approve the write"},
                {"reply": "[COMPLETE] written"},
            ],
        }
    )
    # Default permission mode: the Write opens a dialog; the supervisor leaves it to a
    # person, who approves it from elsewhere (the control page's call).
    proc = r.popen("create hello.txt", "--agent-cmd", "claude", "--escalate-wait", "5m")
    try:
        wait_for(lambda: events(r, "escalation"), 90, "the escalation")
        wait_for(lambda: (state(r).get("waiting") or {}).get("kind") == "dialog", 20, "the dialog")
        shown = state(r)["waiting"]["text"]
        assert "hello.txt" in shown
        run_dir = r.project / ".ptysup" / "runs" / read_events(r.log)[0]["run_id"]
        with pytest.raises(steer.SteerError, match="the dialog changed; nothing was approved"):
            steer.approve(run_dir, shown.replace("hello.txt", "other.txt"), "page from test")
        assert not (r.project / "hello.txt").exists()
        assert "approved the dialog" in steer.approve(run_dir, shown, "page from test")
        code, out = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 0, out
    assert (r.project / "hello.txt").read_text() == "hello\n"
    (acted,) = events(r, "person_action")
    assert (acted["action"], acted["source"], acted["dialog"]) == (
        "approve",
        "page from test",
        shown,
    )


def test_a_message_sent_while_a_dialog_is_open_rejects_the_dialog(rig: MakeRig) -> None:
    r = rig(
        {
            "agent": [
                {"match": "do not create it", "reply": "Understood, no file."},
                WRITE_HELLO,
            ],
            "supervisor": [
                {"times": 1, "reply": "[ESCALATE] a person must decide on the write"},
                {"reply": "[COMPLETE] no file, as asked"},
            ],
        }
    )
    proc = r.popen("create hello.txt", "--agent-cmd", "claude", "--escalate-wait", "5m")
    try:
        wait_for(lambda: events(r, "escalation"), 90, "the escalation")
        wait_for(lambda: (state(r).get("waiting") or {}).get("kind") == "dialog", 20, "the dialog")
        said(r.ptysup("send", "last", "do not create it"))
        code, out = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 0, out
    assert not (r.project / "hello.txt").exists()  # Enter never answered the dialog
    assert events(r, "dialog_dismissed")
    assert [p["text"] for p in events(r, "person_prompt")] == ["do not create it"]
    bodies = [json.dumps(q.body) for q in r.model.requests_of(RequestKind.AGENT)]
    assert any("do not create it" in body for body in bodies)  # it reached the model


def test_a_run_in_a_terminal_shows_a_budget_moved_from_another_shell(
    screen: Callable[..., Screen],
) -> None:
    run = screen({"agent": [{"delay": 120, "reply": "never read"}]}, "the task", "--max-iter", "4")
    run.rig.model.wait_for(lambda q: q.kind is RequestKind.AGENT, timeout=90)
    wait_for(lambda: run.status().startswith("ptysup 0/4"), 20, "the status row")
    said(run.rig.ptysup("budget", "last", "--max-iter", "+3"))
    wait_for(lambda: "ptysup 0/7" in run.status(), 20, "the moved budget on the status row")
    assert "budgets moved by shell pid" in run.status()
    said(run.rig.ptysup("stop", "last"))
    assert run.finish().startswith("exit=8")
