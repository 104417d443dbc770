"""Gemini CLI supervised end to end: the real pinned binary (0.61.0), ptysup's own fake model
speaking the Gemini API, `gemini -p` as the supervisor (a team without Claude Code)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from ptysup.agents.gemini import testkit as gemini_kit
from ptysup.agents.private import agents_dir
from ptysup.testing.fakemodel import RequestKind
from ptysup.testing.kit import agent_env
from tests.conftest import FakeModelFactory
from tests.e2e.conftest import (
    MID_TURN,
    RESUMED,
    UNSAVED,
    Rig,
    demo_run,
    killed_mid_turn_then_resumed,
    rigs,
)
from tests.helpers import (
    Tmux,
    ptysup_argv,
    read_events,
    run_ptysup,
    wait_for,
)
from tests.otheruser import other_user

pytestmark = pytest.mark.e2e

AGENT = "gemini --approval-mode auto_edit"
SUPERVISOR = 'gemini -p ""'
SUPERVISED = ("--supervisor-cmd", SUPERVISOR)
WRITE = {"tool": "write_file", "input": {"file_path": "{workdir}/out.txt", "content": "hello\n"}}


@pytest.fixture
def rig(
    fake_model: FakeModelFactory, gemini_bin: Path, project_dir: Path, tmp_path: Path
) -> Iterator[Callable[[Mapping[str, Any]], Rig]]:
    """Rigs whose agent is the pinned Gemini CLI (in a private home) and whose supervisor
    is `gemini -p`: a team without Claude Code."""
    with ExitStack() as stack:

        def env_for(url: str) -> dict[str, str]:
            return dict(stack.enter_context(agent_env("gemini", url, binary=gemini_bin)).env)

        yield from rigs(fake_model, project_dir, tmp_path, env_for, AGENT, SUPERVISED)


def test_a_task_completes_with_turn_ends_from_the_after_agent_hook(
    rig: Callable[..., Rig],
) -> None:
    r = rig(
        {
            "agent": [{"steps": [{"text": "Writing it.", **WRITE}, {"text": "I wrote out.txt."}]}],
            "supervisor": [
                {"when": {"file_exists": "out.txt"}, "reply": "[COMPLETE] out.txt exists"},
                {"reply": "[CONTINUE] write out.txt"},
            ],
        }
    )
    # Quiet time alone would end the turn only after 30 s: the hook ends it at once.
    run = r.run("write out.txt", "--idle", "30", "--max-iter", "3")
    assert run.code == 0, run.stdout + run.stderr
    assert (r.project / "out.txt").read_text() == "hello\n"
    assert run.named("agent_start")[0]["profile"] == "gemini"
    (turn,) = run.named("turn_end")
    assert turn["kind"] == "stop", turn
    hooks = [(e["name"], e.get("tool_name")) for e in run.named("hook")]
    assert ("UserPromptSubmit", None) in hooks and ("PostToolUse", "write_file") in hooks
    (stop,) = [e for e in run.named("hook") if e["name"] == "Stop"]
    # Gemini CLI counts tokens, not dollars: the turn end logs the conversation's.
    assert stop["tokens"]["total"] == stop["tokens"]["input"] + stop["tokens"]["output"] > 0
    started = run.named("inject")[0]["ts"]
    assert turn["ts"] - started < 15  # far from the 30 s of quiet
    # Gemini CLI runs the conversation ptysup chose up front (so a resume can reopen it).
    (stored,) = (r.project / ".ptysup" / "runs").glob("*/run.json")
    chosen = json.loads(stored.read_text())["session_id"]
    assert {e["session_id"] for e in run.named("hook")} == {chosen}
    end = run.events[-1]
    assert (end["event"], end["outcome"]) == ("run_end", "complete")
    # The routing call before each prompt is a side request, never an agent turn.
    assert r.model.requests_of(RequestKind.TITLE)
    assert len(r.model.requests_of(RequestKind.SUPERVISOR)) == 1


def test_agent_gemini_supervises_a_wrapper_script_through_its_hooks(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = rig({"agent": [{"reply": "Done."}], "supervisor": [{"reply": "[COMPLETE] done"}]})
    wrapper = tmp_path / "my-agent.sh"
    wrapper.write_text(f'#!/bin/sh\nexec {r.env["PATH"].split(":")[0]}/gemini "$@"\n')
    wrapper.chmod(0o755)
    run = run_ptysup(
        ["a task", "--agent", "gemini", "--agent-cmd", str(wrapper), "--idle", "30", *SUPERVISED],
        cwd=r.project,
        env=r.env,
        log_path=r.log,
        timeout=60,
    )
    assert run.code == 0, run.stdout + run.stderr
    assert run.named("agent_start")[0]["profile"] == "gemini"
    assert [e["kind"] for e in run.named("turn_end")] == ["stop"]


ASK = {
    "tool": "ask_user",
    "input": {
        "questions": [
            {
                "question": "Which color should the button be?",
                "header": "Color",
                "type": "choice",
                "options": [
                    {"label": "Red", "description": "warm"},
                    {"label": "Blue", "description": "calm"},
                ],
            }
        ]
    },
}


def test_after_a_kill_mid_turn_the_next_instruction_reaches_the_model_alone(
    rig: Callable[..., Rig],
) -> None:
    r = rig(MID_TURN)
    after = killed_mid_turn_then_resumed(r, "Gemini CLI", "--agent-cmd", AGENT, *SUPERVISED)
    assert after and {q.human_text for q in after} == {"now do part three"}, after
    # The reopened conversation still holds part one, and no longer the unanswered part two.
    for q in after:
        said = [p.get("text", "") for c in q.body["contents"] for p in c["parts"]]
        assert "Part one done." in said and "now do part two" not in said, said


def test_after_a_kill_in_the_first_turn_a_new_conversation_gets_the_next_instruction(
    rig: Callable[..., Rig],
) -> None:
    # The unanswered task was all the conversation held: nothing to reopen.
    r = rig({**MID_TURN, "agent": [MID_TURN["agent"][0], {"delay": 120, "reply": "never"}]})
    after = killed_mid_turn_then_resumed(
        r, "Gemini CLI", "--agent-cmd", AGENT, *SUPERVISED, at="part one"
    )
    assert after and {q.human_text for q in after} == {"now do part three"}, after
    for q in after:
        assert "do part one" not in json.dumps(q.body["contents"])
    # run.json keeps the new conversation, for a later resume.
    starts = [e for e in read_events(r.log) if e.get("name") == "SessionStart"]
    (stored,) = (r.project / ".ptysup" / "runs").glob("*/run.json")
    assert starts[-1]["source"] == "startup" and starts[-1]["session_id"] != starts[0]["session_id"]
    assert json.loads(stored.read_text())["session_id"] == starts[-1]["session_id"]
    note = next(q for q in r.model.requests_of(RequestKind.SUPERVISOR) if RESUMED in q.human_text)
    assert "started again and started afresh" in note.human_text


# -- in a terminal -----------------------------------------------------------------------

ROWS = 40


def test_in_tmux_a_persons_half_typed_text_is_cleared_before_the_clear(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = rig({"agent": [{"reply": "Done."}], "supervisor": [{"delay": 4, "reply": "[ABORT] stop"}]})
    tmux = Tmux("ptysup-gemini-typed", rows=ROWS)
    done = r.in_terminal(tmux, tmp_path, "say done")
    try:
        r.model.wait_for(lambda q: q.kind is RequestKind.SUPERVISOR, timeout=60)
        tmux.send_keys("-l", "half typed words")
        wait_for(lambda: " > half typed words" in tmux.capture(), 10, "the text in the box")
        wait_for(done.exists, 60, "ptysup to finish")
    finally:
        tmux.kill()
    assert done.read_text().startswith("exit=1"), r.log.read_text()
    events = read_events(r.log)
    (cleared,) = [
        e for e in events if e["event"] == "warning" and "input box held text" in e["message"]
    ]
    assert cleared["text"] == "half typed words"
    clears = [e for e in events if e["event"] == "inject" and e["text"] == "/clear"]
    assert [c["confirmed"] for c in clears] == [True]
    # The half-typed words never reached the model with the /clear.
    assert not any("half typed" in q.human_text for q in r.model.requests)


def test_a_question_left_to_the_person_opens_gemini_clis_dialog(
    rig: Callable[..., Rig],
) -> None:
    r = rig(
        {
            "agent": [{"steps": [ASK, {"text": "Painted it."}]}],
            "supervisor": [{"reply": "[ESCALATE] the dialog needs a person"}],
        }
    )
    run = r.run("paint the button", "--questions", "person", "--turn-timeout", "5")
    assert run.code == 7, run.stdout + run.stderr
    (question,) = run.named("question")
    assert question["to"] == "person" and not run.named("answer")
    (turn,) = run.named("turn_end")
    assert (turn["kind"], turn["dialog"]) == ("stalled", True)
    (sup,) = r.model.requests_of(RequestKind.SUPERVISOR)
    assert "Answer Questions" in sup.human_text and "Which color" in sup.human_text
    # The dialog's notification is no approval request.
    assert not [e for e in run.named("hook") if e["name"] == "PermissionRequest"]
    assert run.events[-1]["outcome"] == "escalated"


def test_doctor_probes_a_gemini_supervisor_as_a_run_starts_it(
    rig: Callable[..., Rig],
) -> None:
    r = rig({"supervisor": [{"reply": "[COMPLETE] ok"}]})
    done = r.ptysup("doctor", "--probe", "--agent-cmd", AGENT, "--supervisor-cmd", SUPERVISOR)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "gemini 0.61.0, tested with ptysup" in done.stdout
    assert "ok   supervisor answers" in done.stdout
    # Headless Gemini CLI refuses an untrusted folder: the probe got --skip-trust, as a run.
    assert len(r.model.requests_of(RequestKind.SUPERVISOR)) == 1


def test_the_demo_runs_with_gemini_as_agent_and_supervisor(gemini_bin: Path) -> None:
    with demo_run("gemini", "GEMINI_") as (done, _):
        assert done.returncode == 0, done.stdout + done.stderr
        assert "agent: gemini --approval-mode auto_edit" in done.stderr
        assert "supervisor: gemini -p ''" in done.stdout
        assert "the sample project's tests pass" in done.stderr


def test_the_persons_own_gemini_hooks_still_run_beside_ptysups(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    # ptysup's hooks come in a system settings file: the person's AfterAgent hook in
    # their own settings.json must still run (removes nothing the person configured).
    r = rig({"agent": [{"reply": "Hello."}], "supervisor": [{"reply": "[COMPLETE] done"}]})
    mark = tmp_path / "user-after-agent-hook-ran"
    settings_path = Path(r.env["GEMINI_CLI_HOME"]) / ".gemini" / "settings.json"
    settings = json.loads(settings_path.read_text())
    mine = {"type": "command", "name": "mine", "command": f"touch {mark}"}
    settings["hooks"] = {"AfterAgent": [{"matcher": "", "hooks": [mine]}]}
    settings_path.write_text(json.dumps(settings))
    run = r.run("say hi")
    assert run.code == 0, run.stdout + run.stderr
    assert [e["kind"] for e in run.named("turn_end")] == ["stop"]  # ptysup's own ran
    assert mark.exists()  # and the person's


# The person's own Gemini CLI allows `touch` (a policy) and the shell tool (settings).
PERMISSIVE_POLICY = """\
[[rule]]
toolName = "run_shell_command"
commandPrefix = "touch"
decision = "allow"
priority = 100
"""


def test_the_readmes_gemini_p_supervisor_is_read_only_and_keeps_no_session(
    rig: Callable[..., Rig],
) -> None:
    r = rig(
        {
            "agent": [{"reply": "Done."}],
            "supervisor": [
                {
                    "steps": [
                        {
                            "tool": "run_shell_command",
                            "input": {"command": "touch SUPERVISOR.txt", "description": "x"},
                        },
                        {"text": "[COMPLETE] done"},
                    ]
                }
            ],
        }
    )
    gemini = Path(r.env["GEMINI_CLI_HOME"]) / ".gemini"
    (gemini / "policies").mkdir()
    (gemini / "policies" / "mine.toml").write_text(PERMISSIVE_POLICY)
    settings = json.loads((gemini / "settings.json").read_text())
    settings["tools"] = {"allowed": ["run_shell_command"]}
    (gemini / "settings.json").write_text(json.dumps(settings))
    # `gemini -p` as the README gives it, with no value after -p.
    run = dataclasses.replace(r, options=("--supervisor-cmd", "gemini -p")).run("say done")
    assert run.code == 0, run.stdout + run.stderr
    assert not (r.project / "SUPERVISOR.txt").exists()  # the person's allow did not apply
    (_, answer) = r.model.requests_of(RequestKind.SUPERVISOR)
    (denied,) = [str(x) for x in chat_responses(answer.body)]
    assert "run_shell_command" in denied and "not found" in denied
    # The only session in the person's Gemini history is the agent's own.
    (stored,) = (r.project / ".ptysup" / "runs").glob("*/run.json")
    saved = json.loads(stored.read_text())
    sessions = [
        json.loads(path.read_text().splitlines()[0])["sessionId"]
        for path in gemini.glob("tmp/*/chats/session-*.jsonl")
    ]
    assert sessions == [saved["session_id"]]
    # The judge's own home went with the run.
    assert not list(agents_dir(r.env).glob(f"{saved['run_id']}-*"))


def chat_responses(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The functionResponse parts of a Gemini API request."""
    return [
        part["functionResponse"]
        for content in body["contents"]
        for part in content["parts"]
        if "functionResponse" in part
    ]


def test_with_its_state_folder_under_tmp_gemini_still_gets_ptysups_hooks(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    # Gemini CLI skips a system settings file under a world-writable folder (and any
    # that root does not own): ptysup's settings then go in a home of the run's own.
    r = rig({"agent": [{"reply": "Done."}], "supervisor": [{"reply": "[COMPLETE] done"}]})
    r.env["XDG_STATE_HOME"] = str(tmp_path / "state")  # under /tmp
    run = r.run("say done", "--idle", "30")
    assert run.code == 0, run.stdout + run.stderr
    assert [t["kind"] for t in run.named("turn_end")] == ["stop"]  # the hook, not the screen
    names = {e["name"] for e in run.named("hook")}
    assert {"SessionStart", "UserPromptSubmit", "Stop"} <= names
    assert not [w for w in run.named("warning") if "missing" in w]
    # The conversation went into the person's own history, for a resume to find.
    (stored,) = (r.project / ".ptysup" / "runs").glob("*/run.json")
    session = json.loads(stored.read_text())["session_id"]
    gemini = Path(r.env["GEMINI_CLI_HOME"]) / ".gemini"
    assert [p for p in gemini.glob(f"tmp/*/chats/session-*-{session[:8]}.jsonl")]
    done = r.ptysup("doctor", "--agent-cmd", AGENT, "--supervisor-cmd", SUPERVISOR)
    assert "ok   hooks: from a home of the run's own" in done.stdout, done.stdout


def test_hooks_turned_off_are_said_and_the_run_goes_on_with_the_screen(
    rig: Callable[..., Rig],
) -> None:
    r = rig({"agent": [{"reply": "Done."}], "supervisor": [{"reply": "[COMPLETE] done"}]})
    gemini = Path(r.env["GEMINI_CLI_HOME"]) / ".gemini"
    settings = json.loads((gemini / "settings.json").read_text())
    settings["hooksConfig"] = {"enabled": False}  # the person's choice: no hook runs
    (gemini / "settings.json").write_text(json.dumps(settings))
    run = r.run("say done")
    assert run.code == 0, run.stdout + run.stderr
    assert not run.named("hook")
    (warning,) = [w for w in run.named("warning") if "missing" in w]
    assert (warning["agent"], warning["missing"]) == ("gemini", "SessionStart")
    assert "no hook came from gemini" in run.stdout  # the CI log's line
    assert [t["kind"] for t in run.named("turn_end")] == ["screen"]


def test_a_user_other_than_root_gets_ptysups_hooks_in_gemini_cli(
    fake_model: FakeModelFactory, gemini_bin: Path, tmp_path: Path
) -> None:
    # Gemini CLI 0.61 reads a system settings file only where root owns it and every
    # folder above it: never for another user. Theirs go in a home of the run's own.
    user = other_user(tmp_path)
    project = user.home / "project"
    gemini_home = user.home / "gemini"
    project.mkdir()
    gemini_kit.write_config(gemini_home)
    model = fake_model(
        {"agent": [{"reply": "Done."}], "supervisor": [{"reply": "[COMPLETE] done"}]},
        workdir=project,
    )
    for path in [user.home, *user.home.rglob("*")]:
        os.chown(path, user.uid, user.gid)
    env = gemini_kit.make_env(model.url, gemini_home, gemini_bin, base={})
    env.update(HOME=str(user.home), PATH=f"{gemini_bin.parent}:{os.environ['PATH']}")
    log = user.home / "events.jsonl"
    task = ["say done", "--agent-cmd", AGENT, "--supervisor-cmd", SUPERVISOR, "--idle", "30"]
    done = subprocess.run(
        user.argv(*ptysup_argv(*task, "--log-file", str(log))),
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    events = read_events(log)
    assert [e["kind"] for e in events if e["event"] == "turn_end"] == ["stop"]
    assert "SessionStart" in {e["name"] for e in events if e["event"] == "hook"}


def test_a_run_killed_as_its_task_was_typed_starts_afresh_on_resume(
    rig: Callable[..., Rig],
) -> None:
    # Gemini CLI 0.61.0 saves only its header until the prompt is sent: `--resume <id>`
    # ended it at once ("No previous sessions found for this project"), exit 4, on every
    # resume. A new conversation starts.
    r = rig(UNSAVED)
    r.unsaved_then_resumed(lambda: any(e["event"] == "inject" for e in read_events(r.log)))
