"""opencode supervised end to end: the real pinned binary (1.18.33) in a private home,
ptysup's own fake model speaking OpenAI Chat Completions, `claude -p` as the supervisor."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from ptysup.testing.fakemodel import RecordedRequest, RequestKind
from ptysup.testing.kit import agent_env
from tests.conftest import ClaudeEnvFactory, FakeModelFactory
from tests.e2e.conftest import Rig, rigs
from tests.e2e.test_terminal_left_clean import Pane
from tests.helpers import (
    busy_cores,
    read_events,
    run_ptysup,
    wait_for,
)

pytestmark = pytest.mark.e2e

AGENT = "opencode"
WRITE = {"tool": "write", "input": {"filePath": "{workdir}/out.txt", "content": "hello\n"}}


@pytest.fixture
def rig(
    fake_model: FakeModelFactory,
    claude_env: ClaudeEnvFactory,
    opencode_bin: Path,
    project_dir: Path,
    tmp_path: Path,
) -> Iterator[Callable[[Mapping[str, Any]], Rig]]:
    """Rigs whose agent is the pinned opencode (in a private home) and whose supervisor is
    `claude -p`, both talking to the same fake model."""
    with ExitStack() as stack:

        def env_for(url: str) -> dict[str, str]:
            claude = claude_env(url).env  # the supervisor's, with opencode's on top
            made = agent_env("opencode", url, binary=opencode_bin, base=claude)
            return dict(stack.enter_context(made).env)

        yield from rigs(fake_model, project_dir, tmp_path, env_for, AGENT)


def test_a_task_typed_once_whole_after_ready_ends_its_turn_on_session_idle(
    rig: Callable[..., Rig],
) -> None:
    r = rig(
        {
            "agent": [{"reply": "Hello there."}],
            "supervisor": [{"reply": "[COMPLETE] it said hello"}],
        }
    )
    # A fresh data dir: opencode draws nothing for seconds and drops keys typed before
    # its terminal UI is up. Quiet time alone would end the turn only after 30 s.
    run = r.run("say hello", "--idle", "30", "--max-iter", "2")
    assert run.code == 0, run.stdout + run.stderr
    assert run.named("agent_start")[0]["profile"] == "opencode"
    names = [(e["event"], e.get("name")) for e in run.events]
    # Typed only after opencode said its UI takes keys.
    assert names.index(("hook", "Ready")) < names.index(("inject", None))
    (inject,) = run.named("inject")
    assert (inject["text"], inject["confirmed"]) == ("say hello", True)
    # Typed once, and the model got it once (a loaded opencode may need a second Enter,
    # which `attempts` counts: the message is still one).
    assert r.human_texts() == ["say hello"]
    (turn,) = run.named("turn_end")
    assert turn["kind"] == "stop", turn
    (stop,) = [e for e in run.named("hook") if e["name"] == "Stop"]
    assert stop["tokens"]["total"] > 0
    prompts = [e for e in run.named("hook") if e["name"] == "UserPromptSubmit"]
    assert len(prompts) == 1
    assert not run.named("person_prompt")  # ptysup's own prompt is not the person's
    # The conversation's id is learnt from its first session (for a resume).
    (stored,) = (r.project / ".ptysup" / "runs").glob("*/run.json")
    (start,) = [e for e in run.named("hook") if e["name"] == "SessionStart"]
    assert json.loads(stored.read_text())["session_id"] == start["session_id"]
    assert start["session_id"].startswith("ses_")
    # The supervisor read the turn's last message.
    (sup,) = r.model.requests_of(RequestKind.SUPERVISOR)
    assert "Hello there." in sup.human_text
    # opencode's title request (no tools) was a side request, answered as one.
    assert r.model.requests_of(RequestKind.TITLE)
    assert run.events[-1]["outcome"] == "complete"
    # /exit ended opencode, no signal was needed.
    assert not [w for w in run.named("warning") if "did not exit" in w["message"]]


def test_agent_opencode_supervises_a_wrapper_script_through_its_plugin(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = rig({"agent": [{"reply": "Done."}], "supervisor": [{"reply": "[COMPLETE] done"}]})
    wrapper = tmp_path / "my-agent.sh"
    wrapper.write_text(f'#!/bin/sh\nexec {r.env["PATH"].split(":")[0]}/opencode "$@"\n')
    wrapper.chmod(0o755)
    run = run_ptysup(
        ["a task", "--agent", "opencode", "--agent-cmd", str(wrapper), "--idle", "30"],
        cwd=r.project,
        env=r.env,
        log_path=r.log,
        timeout=60,
    )
    assert run.code == 0, run.stdout + run.stderr
    assert run.named("agent_start")[0]["profile"] == "opencode"
    assert [e["kind"] for e in run.named("turn_end")] == ["stop"]


def _agent_asked_since(started: float, request: RecordedRequest) -> bool:
    return request.kind is RequestKind.AGENT and request.time > started


@pytest.mark.alone  # it loads the machine itself
def test_under_load_budget_ends_interrupt_the_turn_each_time(rig: Callable[..., Rig]) -> None:
    # opencode takes Esc twice to interrupt; under load 1 of 3 budget ends did not stop
    # the turn. Each stop is confirmed by what opencode shows, pressed again if need be.
    late = {**WRITE, "delay": 120}
    r = rig(
        {
            "agent": [{"steps": [late, {"text": "Wrote it."}]}],
            "supervisor": [{"reply": "[COMPLETE]"}],
        }
    )
    for part in (1, 2):
        r.log = r.log.with_name(f"events-{part}.jsonl")
        started = time.time()
        proc = r.popen("write out.txt slowly", "--max-time", "60s")
        try:
            r.model.wait_for(functools.partial(_agent_asked_since, started), 60)
            (agent,) = [e for e in read_events(r.log) if e["event"] == "agent_start"]
            # The turn is under way: the budget ends under load, opencode behind the busy
            # loops for the cores (its process group: it and what it started). Not last in
            # line (nice 19): starved so, on a CI machine that others load too, it did not
            # draw its stopped turn within the 3 s a confirmation is given, fix or no fix.
            os.setpriority(os.PRIO_PGRP, os.getpgid(agent["pid"]), 10)
            with busy_cores(4):
                assert proc.wait(timeout=90) == 3, proc.communicate()
        finally:
            if proc.poll() is None:
                proc.kill()
        (interrupt,) = [e for e in read_events(r.log) if e["event"] == "interrupt"]
        assert interrupt["confirmed"] is True, read_events(r.log)
        wait_for(lambda: not r.leftovers(), 20, "every process of the run to be gone")
    assert not (r.project / "out.txt").exists()


def test_the_persons_own_tui_plugin_still_loads_beside_ptysups(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = rig({"agent": [{"reply": "Hello."}], "supervisor": [{"reply": "[COMPLETE] done"}]})
    mark = tmp_path / "their-plugin-ran"
    plugin = tmp_path / "theirs.js"
    plugin.write_text(
        'import fs from "node:fs"\n'
        f'export default {{ id: "theirs", tui: async () => '
        f'fs.writeFileSync({json.dumps(str(mark))}, "") }}\n'
    )
    tui = Path(r.env["XDG_CONFIG_HOME"]) / "opencode" / "tui.json"
    tui.write_text(json.dumps({"plugin": [plugin.as_uri()]}))
    run = r.run("say hi")
    assert run.code == 0, run.stdout + run.stderr
    assert [e["kind"] for e in run.named("turn_end")] == ["stop"]  # ptysup's own ran
    assert mark.exists()  # and the person's
    assert json.loads(tui.read_text()) == {"plugin": [plugin.as_uri()]}


# -- in a terminal -----------------------------------------------------------------------


def test_the_demo_runs_with_opencode_as_agent_and_supervisor(opencode_bin: Path) -> None:
    repo = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PTYSUP_", "OPENCODE_"))}
    done = subprocess.run(
        ["bash", str(repo / "scripts" / "demo.sh"), "--agent", "opencode"],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
    )
    kept = re.search(r"kept for you to look at: (\S+)", done.stderr)
    if kept:
        shutil.rmtree(kept.group(1), ignore_errors=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "agent: opencode" in done.stderr
    assert "supervisor: opencode run" in done.stdout
    assert "the sample project's tests pass" in done.stderr


def test_in_tmux_a_persons_half_typed_text_is_cleared_before_the_new_session(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = rig({"agent": [{"reply": "Done."}], "supervisor": [{"delay": 4, "reply": "[ABORT] stop"}]})
    tmux = Pane("ptysup-opencode-typed", rows=40)
    done = r.in_terminal(tmux, tmp_path, "say done")
    try:
        r.model.wait_for(lambda q: q.kind is RequestKind.SUPERVISOR, timeout=60)
        tmux.send_keys("-l", "half typed words")
        wait_for(lambda: "┃  half typed words" in tmux.capture(), 10, "the text in the box")
        wait_for(done.exists, 60, "ptysup to finish")
    finally:
        tmux.kill()
    assert done.read_text().startswith("exit=1"), r.log.read_text()
    events = read_events(r.log)
    (cleared,) = [
        e for e in events if e["event"] == "warning" and "input box held text" in e["message"]
    ]
    assert cleared["text"] == "half typed words"
    clears = [e for e in events if e["event"] == "inject" and e["text"] == "/new"]
    assert [c["confirmed"] for c in clears] == [True]
    # The half-typed words never reached the model.
    assert not any("half typed" in q.human_text for q in r.model.requests)


def test_an_api_error_ends_the_turn_once_then_ptysup_waits_and_goes_on(
    rig: Callable[..., Rig],
) -> None:
    r = rig(
        {
            "agent": [{"times": 1, "error": 400}, {"reply": "Worked now."}],
            "supervisor": [{"reply": "[COMPLETE] done"}],
        }
    )
    run = r.run("do it", "--max-iter", "3", "--wait-base", "1")
    assert run.code == 0, run.stdout + run.stderr
    first, second = run.named("turn_end")
    assert first["kind"] == "api_error" and "HTTP 400" in first["detail"], first
    assert (second["kind"], second["detail"]) == ("stop", "Worked now.")
    # One turn end per turn: the failed one's idle is not a second, stale one.
    ends = [e["name"] for e in run.named("hook") if e["name"] in ("Stop", "StopFailure")]
    assert ends == ["StopFailure", "Stop"]
    assert [i["text"] for i in run.named("inject")] == ["do it", "continue"]


def test_doctor_knows_the_pinned_opencode(rig: Callable[..., Rig]) -> None:
    r = rig({"supervisor": [{"reply": "[COMPLETE] ok"}]})
    done = r.ptysup("doctor", "--agent-cmd", AGENT)
    assert "opencode 1.18.33, tested with ptysup" in done.stdout, done.stdout + done.stderr


@pytest.fixture
def team(
    fake_model: FakeModelFactory, opencode_bin: Path, project_dir: Path, tmp_path: Path
) -> Iterator[Callable[[Mapping[str, Any]], Rig]]:
    """Rigs whose agent is opencode and whose supervisor is `opencode run`: a team without
    Claude Code."""
    with ExitStack() as stack:

        def env_for(url: str) -> dict[str, str]:
            made = agent_env("opencode", url, binary=opencode_bin)
            return dict(stack.enter_context(made).env)

        yield from rigs(fake_model, project_dir, tmp_path, env_for, AGENT, TEAM)


TEAM = ("--supervisor-cmd", "opencode run")


def test_opencode_run_supervises_opencode(team: Callable[..., Rig]) -> None:
    r = team(
        {
            "agent": [{"match": "say bye", "reply": "Bye."}, {"reply": "Hello."}],
            "supervisor": [
                {"match": "Bye.", "reply": "[COMPLETE] both said"},
                {"reply": "[CONTINUE] say bye"},
            ],
        }
    )
    run = r.run("say hello", "--max-iter", "3")
    assert run.code == 0, run.stdout + run.stderr
    assert [d["action"] for d in run.named("decision")] == ["continue", "complete"]
    # One request per decision: the judge is titled, so opencode asks for no title.
    sup = r.model.requests_of(RequestKind.SUPERVISOR)
    assert len(sup) == 2
    # The judge ran opencode's read-only plan agent.
    assert all("Plan mode ACTIVE - you are in READ-ONLY phase" in json.dumps(q.body) for q in sup)
    assert r.human_texts() == ["say hello", "say bye"]
    assert run.events[-1]["outcome"] == "complete"


# The judge's model reaches for a shell first: the answer after it is the decision.
LOOK = {"tool": "bash", "input": {"command": "ls", "description": "look"}}


def test_opencode_run_answers_after_its_model_tried_a_tool(team: Callable[..., Rig]) -> None:
    # The rig's opencode.json asks before shell commands, as a careful person's does:
    # `opencode run` refused the ask and ended the call with nothing on stdout.
    r = team(
        {
            "agent": [{"reply": "Hello."}],
            "supervisor": [{"steps": [LOOK, {"text": "[COMPLETE] it said hello"}]}],
        }
    )
    run = r.run("say hello", "--max-iter", "3")
    assert run.code == 0, run.stdout + run.stderr
    (decision,) = run.named("decision")
    assert (decision["action"], decision["content"]) == ("complete", "it said hello")
    # The judge was offered the read-only tools of a Claude Code judge, and no shell.
    offered = [
        sorted(t["function"]["name"] for t in q.body["tools"])
        for q in r.model.requests_of(RequestKind.SUPERVISOR)
    ]
    assert offered == [["glob", "grep", "read"]] * 2


def test_opencode_run_leaves_nothing_in_the_temp_dir(
    team: Callable[..., Rig], tmp_path: Path
) -> None:
    # The doctor's probe asks the supervisor alone (an opencode agent unpacks its own
    # libraries into the temp dir at its start).
    r = team({"supervisor": [{"steps": [LOOK, {"text": "[COMPLETE] ok"}]}]})
    temp = tmp_path / "tmp"
    temp.mkdir()
    r.env["TMPDIR"] = str(temp)
    done = r.ptysup("doctor", "--probe", "--agent-cmd", AGENT, *TEAM)
    assert "ok   supervisor answers" in done.stdout, done.stdout + done.stderr
    # opencode 1.18 unpacked a 5.6 MB library there per call, and left it. (The doctor's
    # `opencode --version` leaves an empty folder of opencode's own.)
    files = [p.name for p in temp.rglob("*") if not p.is_dir()]
    assert not files, files


def test_doctor_probes_an_opencode_run_supervisor(team: Callable[..., Rig]) -> None:
    r = team({"supervisor": [{"reply": "[COMPLETE] ok"}]})
    done = r.ptysup("doctor", "--probe", "--agent-cmd", AGENT, *TEAM)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok   supervisor answers" in done.stdout
    assert len(r.model.requests_of(RequestKind.SUPERVISOR)) == 1
