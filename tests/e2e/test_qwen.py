"""Qwen Code supervised end to end: the real pinned binary (0.24.4), ptysup's own fake model
speaking OpenAI Chat Completions, `qwen -p` as the supervisor (a team without Claude Code)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from ptysup.testing.fakemodel import RequestKind
from ptysup.testing.kit import agent_env
from ptysup.testing.wires import chat
from tests.conftest import FakeModelFactory
from tests.e2e.conftest import (
    MID_TURN,
    UNSAVED,
    Rig,
    demo_run,
    killed_mid_turn_then_resumed,
    rigs,
)
from tests.e2e.test_terminal_left_clean import Pane
from tests.helpers import (
    read_events,
    run_ptysup,
    wait_for,
)

pytestmark = pytest.mark.e2e

AGENT = "qwen --approval-mode auto-edit"
SUPERVISOR = 'qwen -p ""'
SUPERVISED = ("--supervisor-cmd", SUPERVISOR)
WRITE = {"tool": "write_file", "input": {"file_path": "{workdir}/out.txt", "content": "hello\n"}}


@pytest.fixture
def rig(
    fake_model: FakeModelFactory, qwen_bin: Path, project_dir: Path, tmp_path: Path
) -> Iterator[Callable[[Mapping[str, Any]], Rig]]:
    """Rigs whose agent is the pinned Qwen Code (in a private home) and whose supervisor
    is `qwen -p`: a team without Claude Code."""
    with ExitStack() as stack:

        def env_for(url: str) -> dict[str, str]:
            return dict(stack.enter_context(agent_env("qwen", url, binary=qwen_bin)).env)

        yield from rigs(fake_model, project_dir, tmp_path, env_for, AGENT, SUPERVISED)


def test_a_task_completes_with_turn_ends_from_the_stop_hook(rig: Callable[..., Rig]) -> None:
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
    assert run.named("agent_start")[0]["profile"] == "qwen"
    (turn,) = run.named("turn_end")
    assert turn["kind"] == "stop", turn
    hooks = [(e["name"], e.get("tool_name")) for e in run.named("hook")]
    assert ("PostToolUse", "write_file") in hooks
    # The tool result's continuation (an empty UserPromptSubmit) is no prompt.
    assert [n for n, _ in hooks].count("UserPromptSubmit") == 1
    (stop,) = [e for e in run.named("hook") if e["name"] == "Stop"]
    # Qwen Code counts tokens, not dollars: the turn end logs the conversation's.
    assert stop["tokens"]["total"] == stop["tokens"]["input"] + stop["tokens"]["output"] > 0
    started = run.named("inject")[0]["ts"]
    assert turn["ts"] - started < 15  # far from the 30 s of quiet
    # Qwen Code runs the conversation ptysup chose up front (so a resume can reopen it).
    (stored,) = (r.project / ".ptysup" / "runs").glob("*/run.json")
    chosen = json.loads(stored.read_text())["session_id"]
    assert {e["session_id"] for e in run.named("hook")} == {chosen}
    end = run.events[-1]
    assert (end["event"], end["outcome"]) == ("run_end", "complete")
    assert len(r.model.requests_of(RequestKind.SUPERVISOR)) == 1


def test_agent_qwen_supervises_a_wrapper_script_through_its_hooks(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = rig({"agent": [{"reply": "Done."}], "supervisor": [{"reply": "[COMPLETE] done"}]})
    wrapper = tmp_path / "my-agent.sh"
    wrapper.write_text(f'#!/bin/sh\nexec {r.env["PATH"].split(":")[0]}/qwen "$@"\n')
    wrapper.chmod(0o755)
    run = run_ptysup(
        ["a task", "--agent", "qwen", "--agent-cmd", str(wrapper), "--idle", "30", *SUPERVISED],
        cwd=r.project,
        env=r.env,
        log_path=r.log,
        timeout=60,
    )
    assert run.code == 0, run.stdout + run.stderr
    assert run.named("agent_start")[0]["profile"] == "qwen"
    assert [e["kind"] for e in run.named("turn_end")] == ["stop"]


ASK = {
    "tool": "ask_user_question",
    "input": {
        "questions": [
            {
                "question": "Which color should the button be?",
                "header": "Color",
                "multiSelect": False,
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
    after = killed_mid_turn_then_resumed(r, "Qwen Code", "--agent-cmd", AGENT, *SUPERVISED)
    assert after and {q.human_text for q in after} == {"now do part three"}, after
    # The reopened conversation still holds part one, and no longer the unanswered part two.
    for q in after:
        said = [t for m in q.body["messages"] for t in chat.texts(m)]
        assert "Part one done." in said and "now do part two" not in said, said


def test_the_persons_own_qwen_hooks_still_run_beside_ptysups(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    # ptysup's hooks come in a system settings file: the person's Stop hook in their own
    # settings.json must still run (ptysup removes nothing the person configured), and
    # nothing of ptysup's is written into it (Qwen Code itself adds a `$version`).
    r = rig({"agent": [{"reply": "Hello."}], "supervisor": [{"reply": "[COMPLETE] done"}]})
    mark = tmp_path / "user-stop-hook-ran"
    settings_path = Path(r.env["QWEN_HOME"]) / "settings.json"
    settings = json.loads(settings_path.read_text())
    settings["hooks"] = {"Stop": [{"hooks": [{"type": "command", "command": f"touch {mark}"}]}]}
    settings_path.write_text(json.dumps(settings))
    run = r.run("say hi")
    assert run.code == 0, run.stdout + run.stderr
    assert [e["kind"] for e in run.named("turn_end")] == ["stop"]  # ptysup's own ran
    assert mark.exists()  # and the person's
    assert json.loads(settings_path.read_text())["hooks"] == settings["hooks"]


# -- in a terminal -----------------------------------------------------------------------

ROWS = 40


def test_doctor_probes_a_qwen_supervisor_as_a_run_starts_it(rig: Callable[..., Rig]) -> None:
    r = rig({"supervisor": [{"reply": "[COMPLETE] ok"}]})
    done = r.ptysup("doctor", "--probe", "--agent-cmd", AGENT, *SUPERVISED)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "qwen 0.24.4, tested with ptysup" in done.stdout
    assert "ok   supervisor answers" in done.stdout
    assert len(r.model.requests_of(RequestKind.SUPERVISOR)) == 1


def test_the_demo_runs_with_qwen_as_agent_and_supervisor(qwen_bin: Path) -> None:
    with demo_run("qwen", "QWEN_") as (done, _):
        assert done.returncode == 0, done.stdout + done.stderr
        assert "agent: qwen --approval-mode auto-edit" in done.stderr
        assert "supervisor: qwen -p ''" in done.stdout
        assert "the sample project's tests pass" in done.stderr


def test_no_follow_up_suggestion_waits_in_the_box_when_ptysup_types(
    rig: Callable[..., Rig],
) -> None:
    # The person's own settings leave Qwen Code's follow-up suggestions on (its default):
    # ptysup's settings turn them off for the run, so the next message goes in alone.
    r = rig(
        {
            "agent": [
                {"match": "now say bye", "reply": "Bye."},
                {"reply": "Hello."},
            ],
            "supervisor": [
                {"match": "Bye.", "reply": "[COMPLETE] both said"},
                {"reply": "[CONTINUE] now say bye"},
            ],
        }
    )
    settings_path = Path(r.env["QWEN_HOME"]) / "settings.json"
    settings = json.loads(settings_path.read_text())
    settings["ui"]["enableFollowupSuggestions"] = True
    settings_path.write_text(json.dumps(settings))
    run = r.run("say hello", "--max-iter", "3")
    assert run.code == 0, run.stdout + run.stderr
    assert r.human_texts() == ["say hello", "now say bye"]
    assert not [
        q for q in r.model.requests_of(RequestKind.TITLE) if "SUGGESTION MODE" in q.human_text
    ]


def test_in_tmux_a_persons_half_typed_text_is_cleared_before_the_clear(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = rig({"agent": [{"reply": "Done."}], "supervisor": [{"delay": 4, "reply": "[ABORT] stop"}]})
    tmux = Pane("ptysup-qwen-typed", rows=ROWS)
    done = r.in_terminal(tmux, tmp_path, "say done")
    try:
        r.model.wait_for(lambda q: q.kind is RequestKind.SUPERVISOR, timeout=60)
        tmux.send_keys("-l", "half typed words")
        wait_for(lambda: "> half typed words" in tmux.capture(), 10, "the text in the box")
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


def test_a_question_left_to_the_person_opens_qwen_codes_picker(rig: Callable[..., Rig]) -> None:
    r = rig(
        {
            "agent": [{"steps": [ASK, {"text": "Painted it."}]}],
            "supervisor": [{"reply": "[ESCALATE] the picker needs a person"}],
        }
    )
    run = r.run("paint the button", "--questions", "person", "--turn-timeout", "5")
    assert run.code == 7, run.stdout + run.stderr
    (question,) = run.named("question")
    assert question["to"] == "person" and not run.named("answer")
    (turn,) = run.named("turn_end")
    assert (turn["kind"], turn["dialog"]) == ("stalled", True)
    (sup,) = r.model.requests_of(RequestKind.SUPERVISOR)
    assert "Which color should the button be?" in sup.human_text and "1. Red" in sup.human_text
    # The question's own PermissionRequest is no approval.
    assert not [e for e in run.named("hook") if e["name"] == "PermissionRequest"]
    assert run.events[-1]["outcome"] == "escalated"


def test_the_readmes_qwen_p_supervisor_is_read_only_and_keeps_no_chat(
    rig: Callable[..., Rig],
) -> None:
    write = {
        "tool": "write_file",
        "input": {"file_path": "{workdir}/SUPERVISOR.txt", "content": "x"},
    }
    r = rig(
        {
            "agent": [{"reply": "Done."}],
            "supervisor": [{"steps": [write, {"text": "[COMPLETE] done"}]}],
        }
    )
    # The person's Qwen Code allows writing (and the project's settings bring it back).
    settings_path = Path(r.env["QWEN_HOME"]) / "settings.json"
    settings = json.loads(settings_path.read_text())
    settings["permissions"] = {"allow": ["write_file", "edit", "run_shell_command"]}
    settings["tools"]["core"] = ["write_file"]
    settings_path.write_text(json.dumps(settings))
    run = dataclasses.replace(r, options=("--supervisor-cmd", "qwen -p")).run("say done")
    assert run.code == 0, run.stdout + run.stderr
    assert not (r.project / "SUPERVISOR.txt").exists()
    (_, answer) = r.model.requests_of(RequestKind.SUPERVISOR)
    results = [m for m in answer.body["messages"] if m.get("role") == "tool"]
    assert "write_file" in json.dumps(results), results
    # The only conversation Qwen Code saved is the agent's own.
    (stored,) = (r.project / ".ptysup" / "runs").glob("*/run.json")
    chosen = json.loads(stored.read_text())["session_id"]
    saved = sorted(p.stem for p in Path(r.env["QWEN_HOME"]).glob("**/chats/*.jsonl"))
    assert saved == [chosen]


def test_a_run_killed_as_its_task_was_typed_starts_afresh_on_resume(
    rig: Callable[..., Rig],
) -> None:
    # Qwen Code 0.24.4 saves nothing until its prompt is sent: `--resume <id>` ended it
    # at once ("No saved session found with ID …"), exit 4, on every resume. A new
    # conversation starts.
    r = rig(UNSAVED)
    r.unsaved_then_resumed(lambda: any(e["event"] == "inject" for e in read_events(r.log)))
