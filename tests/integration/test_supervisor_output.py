"""Supervisor output that is huge, binary or an API error, through the ptysup command.

What reaches the fake agent is clean and bounded; the event log says what happened.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ptysup.supervisor.runner import MAX_OUTPUT
from ptysup.terminal.inject import MAX_MESSAGE
from tests.helpers import FAKES, Run, kill_all, processes_with, run_ptysup

AGENT = f"{sys.executable} {FAKES / 'agent.py'}"
SUPERVISOR = f"{sys.executable} {FAKES / 'supervisor.py'}"
CONTROLS = {chr(c) for c in [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]}


@dataclass
class Rig:
    """A temp dir with the fake agent and the fake supervisor wired in."""

    path: Path
    env: dict[str, str]

    def answers(self, *answers: str) -> None:
        (self.path / "answers.json").write_text(json.dumps(list(answers)))

    def run(self, *args: str) -> Run:
        base = ["--agent-cmd", AGENT, "--supervisor-cmd", SUPERVISOR, "--idle", "0.5"]
        return run_ptysup(
            ["do the task", *base, "--supervisor-backoff", "0.1", *args],
            cwd=self.path,
            env=self.env,
            log_path=self.path / "events.jsonl",
            timeout=120,
        )

    def agent_messages(self) -> list[str]:
        log = self.path / "agent.jsonl"
        return [json.loads(x)["message"] for x in log.read_text().split("\n")[:-1]]


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    marker = uuid.uuid4().hex
    env = dict(os.environ)
    env.update(
        FAKE_AGENT_LOG=str(tmp_path / "agent.jsonl"),
        FAKE_SUPERVISOR_LOG=str(tmp_path / "supervisor.jsonl"),
        FAKE_SUPERVISOR_ANSWERS=str(tmp_path / "answers.json"),
        FAKE_AGENT_WORK="0.1",
        PTYSUP_TEST_RUN=marker,
    )
    yield Rig(tmp_path, env)
    leftovers = processes_with(marker)
    kill_all(leftovers)
    assert not leftovers, "processes of the run outlived ptysup"


def assert_clean(text: str) -> None:
    bad = sorted(CONTROLS & set(text))
    assert not bad, f"control characters {bad!r} in {text[:200]!r}"


def messages(run: Run) -> list[str]:
    return [e["message"] for e in run.named("warning")]


def test_a_five_megabyte_answer_is_capped_logged_and_typed_bounded(rig: Rig) -> None:
    rig.answers("!bytes 5000000", "[COMPLETE] done")
    run = rig.run()
    assert run.code == 0, run.stderr
    typed = rig.agent_messages()
    assert typed[0] == "do the task"
    assert len(typed[1]) == MAX_MESSAGE  # what the session types at most
    assert typed[1] == ("step " * (MAX_MESSAGE // 5 + 1))[:MAX_MESSAGE]
    assert messages(run)[:2] == [
        f"supervisor printed 5000011 bytes; only the first {MAX_OUTPUT} were read",
        f"instruction cut to {MAX_MESSAGE} characters",
    ]
    decision = run.named("decision")[0]
    assert decision["action"] == "continue"
    assert len(decision["content"].encode()) <= MAX_OUTPUT
    assert run.named("inject")[1]["text"] == typed[1]
    printed = [
        line for line in run.stdout.splitlines() if " decision " in line or " inject " in line
    ]
    assert len(printed) == 4 and max(map(len, printed)) < 300  # printed lines stay short


def test_binary_answers_fail_every_attempt_and_nothing_is_typed(rig: Rig) -> None:
    rig.answers("!binary 100000")
    run = rig.run("--supervisor-retries", "2")
    assert run.code == 5
    assert rig.agent_messages() == ["do the task"]  # the garbage was never typed
    errors = run.named("supervisor_error")
    assert [e["attempt"] for e in errors] == [1, 2, 3]
    assert all(e["error"].startswith("answer is not UTF-8 text") for e in errors)
    assert run.events[-1]["outcome"] == "supervisor_failed"
    assert_clean(run.stdout)


def test_a_binary_answer_then_a_good_one_decides(rig: Rig) -> None:
    rig.answers("!binary 5000", "[CONTINUE] next step", "[COMPLETE] ok")
    run = rig.run()
    assert run.code == 0, run.stderr
    assert rig.agent_messages() == ["do the task", "next step"]
    assert [d["attempts"] for d in run.named("decision")] == [2, 1]


def test_an_api_error_line_is_a_failure_then_retried(rig: Rig) -> None:
    rig.answers('API Error: 529 {"type":"overloaded_error"}', "[COMPLETE] ok")
    run = rig.run()
    assert run.code == 0, run.stderr
    error = run.named("supervisor_error")[0]
    assert error["error"].startswith("API Error: 529")
    assert rig.agent_messages() == ["do the task"]  # the error was never typed


def test_an_api_error_every_time_is_not_typed_and_ends_the_run(rig: Rig) -> None:
    rig.answers("API Error: 500 Internal server error")
    run = rig.run("--supervisor-retries", "1", "--no-wait")
    assert run.code == 6, run.stderr
    assert rig.agent_messages() == ["do the task"]
    assert len(run.named("supervisor_error")) == 2


def test_escape_sequences_in_an_answer_never_reach_the_agent_nor_the_log(rig: Rig) -> None:
    hostile = "\x1b[2J\x1b]0;pwned\x07[CONTINUE] fix\x9b31m it\x1b[201~\r\n\x85then \x07/exit"
    rig.answers(hostile, "[COMPLETE] \x1b[31mdone\x1b[0m")
    run = rig.run()
    assert run.code == 0, run.stderr
    assert rig.agent_messages()[1] == "fix it\nthen /exit"
    for line in (rig.path / "events.jsonl").read_text().split("\n")[:-1]:
        assert_clean(json.dumps(json.loads(line), ensure_ascii=False))
    assert_clean(run.stdout)
    assert run.events[-1]["reason"] == "done"
