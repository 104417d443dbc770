"""Hardening against the real Claude Code and the fake model: a SIGKILLed ptysup, shell
metacharacters everywhere, and a permission dialog nobody answers."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ptysup.terminal.record import output_bytes, read_cast
from ptysup.testing.fakemodel import RequestKind
from tests.e2e.conftest import Rig
from tests.helpers import DIALOG_STALL_S, assert_dialog_turn_end, wait_for

pytestmark = pytest.mark.e2e

SIMPLE_AGENT = [{"reply": "Done with that."}]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    """Every line of the event log, each of which must be one complete JSON object."""
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n"), "the log ends in a partial line"
    return [json.loads(line) for line in text.split("\n")[:-1]]


# -- SIGKILL -----------------------------------------------------------------------------


def test_sigkill_mid_turn_leaves_no_agent_and_a_whole_log(rig: Callable[..., Rig]) -> None:
    r = rig({"agent": [{"delay": 120, "reply": "slow"}], "supervisor": [{"reply": "[COMPLETE]"}]})
    proc = r.popen("a slow task")
    try:
        r.model.wait_for(lambda req: req.kind is RequestKind.AGENT, timeout=60)
        # Mid-turn: the agent waits on the model, and ptysup has logged the turn's start.
        wait_for(lambda: '"UserPromptSubmit"' in r.log.read_text(), 30, "the turn's start")
        agent = r.leftovers()
        assert agent, "the agent should be running"
        flushed = r.log.read_text(encoding="utf-8")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    # The agent lost its terminal (the PTY's master died with ptysup) and exits.
    wait_for(lambda: not r.leftovers(), 20, "Claude Code to exit after losing its terminal")
    events = _jsonl(r.log)
    assert r.log.read_text(encoding="utf-8").startswith(flushed)  # nothing flushed was lost
    names = [e["event"] for e in events]
    # (protect: what the run guards, said before the agent starts)
    assert names[:4] == ["run_start", "protect", "agent_start", "agent_ready"]
    assert "inject" in names and "run_end" not in names
    assert any(e["event"] == "hook" and e["name"] == "UserPromptSubmit" for e in events)
    # The recording's writer (gone with the leftovers) completed the file after ptysup died.
    cast = Path(events[0]["record"])  # next to the --log-file, named after the run
    assert cast.name == f"events.{events[0]['run_id']}.cast"
    assert cast.read_text(encoding="utf-8").endswith("\n")
    header, recorded = read_cast(cast)
    assert header["version"] == 2
    assert ("i", "a slow task") in [(kind, data) for _, kind, data in recorded]
    assert b"a slow task" in output_bytes(cast)  # Claude Code showed the prompt


def test_sigkill_while_the_supervisor_thinks_leaves_no_supervisor(
    rig: Callable[..., Rig],
) -> None:
    r = rig({"agent": SIMPLE_AGENT, "supervisor": [{"delay": 120, "reply": "[COMPLETE]"}]})
    assert r.signalled("t", signal.SIGKILL, RequestKind.SUPERVISOR) == -signal.SIGKILL
    # Neither the agent nor the supervisor (`claude -p`, in its own process group so that
    # a time-out kills it whole) outlives ptysup, though nothing of ptysup could clean up.
    wait_for(lambda: not r.leftovers(), 20, "the agent and the supervisor to be gone")
    _jsonl(r.log)


# -- no shell anywhere -------------------------------------------------------------------


def _hostile(marker_dir: Path, name: str) -> str:
    """Text full of shell syntax; run by any shell, it would create files in marker_dir."""
    d = marker_dir
    return (
        f"$(touch {d}/{name}-dollar) `touch {d}/{name}-tick` ; touch {d}/{name}-semi "
        f"&& touch {d}/{name}-and | tee {d}/{name}-pipe > {d}/{name}-redirect "
        f"'single' \"double\" back\\slash * ~ $HOME ${{HOME}} !! !$ end"
    )


def test_shell_syntax_arrives_verbatim_and_nothing_runs(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    task = _hostile(markers, "task")
    instruction = "!" + _hostile(markers, "instruction")  # a leading ! is a shell command
    r = rig(
        {
            "agent": SIMPLE_AGENT,
            "supervisor": [
                {"times": 1, "reply": f"[CONTINUE] {instruction}"},
                {"reply": "[COMPLETE] ok"},
            ],
        }
    )
    run = r.run(task)
    assert run.code == 0, run.stdout + run.stderr
    texts = r.human_texts()
    assert texts[0] == task
    # The documented change: a leading space, so Claude Code never runs it as a command.
    assert texts[1] == " " + instruction
    assert [e["text"] for e in run.named("inject")][:2] == [task, " " + instruction]
    # The supervisor got the task verbatim too: in its system prompt, from a file (never
    # argv, never a shell).
    system = r.model.requests_of(RequestKind.SUPERVISOR)[0].body["system"]
    assert any(task in str(block.get("text", "")) for block in system)
    assert run.named("run_start")[0]["task"] == task
    assert list(markers.iterdir()) == []  # nothing ran it (see the control below)


def test_an_instruction_ending_in_a_backslash_is_still_submitted(
    rig: Callable[..., Rig],
) -> None:
    # Claude Code reads `\` + Enter as "insert a newline": the Enter must still submit.
    r = rig(
        {
            "agent": SIMPLE_AGENT,
            "supervisor": [
                {"times": 1, "reply": "[CONTINUE] use C:\\temp\\"},
                {"reply": "[COMPLETE] ok"},
            ],
        }
    )
    run = r.run("t")
    assert run.code == 0, run.stdout + run.stderr
    assert r.human_texts()[1] == "use C:\\temp\\"  # the space ptysup added was trimmed
    injected = run.named("inject")[1]
    assert (injected["confirmed"], injected["attempts"]) == (True, 1)  # the first Enter sent it


# -- a permission dialog nobody answers --------------------------------------------------

WRITE_HELLO = {
    "name": "write",
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
INSTEAD = "Do not create any file; just say you are done."


def _stalled_run(rig: Callable[..., Rig], answer: str, *args: str) -> tuple[Rig, Any]:
    r = rig(
        {
            "agent": [WRITE_HELLO, {"reply": "Understood, no file."}],
            "supervisor": [{"times": 1, "reply": answer}, {"reply": "[COMPLETE] ok"}],
        }
    )
    # Default permission mode: the Write opens a dialog, and nobody answers it.
    run = r.run(
        "create hello.txt", "--agent-cmd", "claude", "--turn-timeout", DIALOG_STALL_S, *args
    )
    return r, run


def test_a_dialog_nobody_answers_is_dismissed_never_approved(rig: Callable[..., Rig]) -> None:
    r, run = _stalled_run(rig, f"[CONTINUE] {INSTEAD}")
    assert run.code == 0, run.stdout + run.stderr
    assert_dialog_turn_end(run)
    # The supervisor was asked with the dialog on screen.
    prompt = r.model.requests_of(RequestKind.SUPERVISOR)[0].human_text
    assert "Do you want to create" in prompt and "hello.txt" in prompt
    names = [e["event"] for e in run.events]
    dismissed = names.index("dialog_dismissed")
    instruction = next(
        i for i, e in enumerate(run.events) if e["event"] == "inject" and e["kind"] == "instruction"
    )
    assert names.index("decision") < dismissed < instruction
    assert run.events[instruction]["text"] == INSTEAD and run.events[instruction]["confirmed"]
    assert not (r.project / "hello.txt").exists()  # Esc rejected the Write
    agent_bodies = [json.dumps(q.body) for q in r.model.requests_of(RequestKind.AGENT)]
    assert any(INSTEAD in body for body in agent_bodies)  # the instruction reached the model
    assert run.events[-1]["outcome"] == "complete"


def test_abort_at_an_open_dialog_dismisses_it_and_exits_1(rig: Callable[..., Rig]) -> None:
    r, run = _stalled_run(rig, "[ABORT] the agent is stuck at a dialog")
    assert run.code == 1, run.stdout + run.stderr
    assert_dialog_turn_end(run)
    assert run.named("dialog_dismissed")
    assert not (r.project / "hello.txt").exists()
    assert run.events[-1]["outcome"] == "abort"
    assert not [e for e in run.named("inject") if e["kind"] == "instruction"]


def test_the_hostile_text_really_is_live_shell(tmp_path: Path) -> None:
    # The control for the test above: run by sh, the text creates its marker files, so
    # an empty marker directory there means no shell ever ran it.
    markers = tmp_path / "m"
    markers.mkdir()
    os.system(f"cd {tmp_path} && echo {_hostile(markers, 'sh')} >/dev/null 2>&1")
    assert {p.name for p in markers.iterdir()} >= {"sh-dollar", "sh-tick", "sh-semi"}
