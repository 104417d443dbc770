"""Qwen Code supervised end to end: the real pinned binary (0.24.4), ptysup's own fake model
speaking OpenAI Chat Completions, `qwen -p` as the supervisor (a team without Claude Code)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ptysup.testing import qwen_env as qwen_env_module
from ptysup.testing.fakemodel import FakeModel, RequestKind
from ptysup.testing.scenario import Scenario
from tests.e2e.conftest import Rig
from tests.helpers import (
    Run,
    kill_all,
    processes_with,
    run_ptysup,
)

pytestmark = pytest.mark.e2e

AGENT = "qwen --approval-mode auto-edit"
SUPERVISOR = 'qwen -p ""'
RESUMED = "has just been resumed"
WRITE = {"tool": "write_file", "input": {"file_path": "{workdir}/out.txt", "content": "hello\n"}}


@pytest.fixture(scope="session")
def qwen_bin() -> Path:
    """The Qwen Code binary; skips (or fails with PTYSUP_REQUIRE_E2E=1) when missing."""
    found = qwen_env_module.find_qwen()
    if found is None or not found.exists():
        message = (
            "Qwen Code not found: run `python -m ptysup.testing.qwen_env install` "
            "or set PTYSUP_QWEN_BIN"
        )
        if os.environ.get("PTYSUP_REQUIRE_E2E") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return found


@dataclass
class QwenRig(Rig):
    """The end-to-end rig with Qwen Code as the agent and `qwen -p` as the supervisor."""

    home: Path = Path()  # the private HOME (its .qwen holds the person's settings)

    def argv(self, task: str, *args: str) -> list[str]:
        return [task, "--agent-cmd", AGENT, "--supervisor-cmd", SUPERVISOR, *args]

    def run(self, task: str, *args: str, timeout: float = 90) -> Run:
        return run_ptysup(
            self.argv(task, *args),
            cwd=self.project,
            env=self.env,
            log_path=self.log,
            timeout=timeout,
        )

    def popen(self, task: str, *args: str) -> subprocess.Popen[str]:
        return self.start(*self.argv(task, "--log-file", str(self.log), *args))

    def leftovers(self) -> list[int]:
        return processes_with(str(self.home))


@pytest.fixture
def rig(
    qwen_bin: Path, project_dir: Path, tmp_path: Path
) -> Iterator[Callable[[Mapping[str, Any]], QwenRig]]:
    made: list[QwenRig] = []
    with ExitStack() as stack:

        def make(scenario: Mapping[str, Any]) -> QwenRig:
            played = Scenario.from_dict(scenario)
            played.seed(project_dir)
            model = stack.enter_context(
                FakeModel(played, project_dir, log_path=tmp_path / "fakemodel.jsonl")
            )
            qe = stack.enter_context(qwen_env_module.qwen_env(model.url, qwen_bin))
            r = QwenRig(project_dir, model, dict(qe.env), tmp_path / "events.jsonl", home=qe.home)
            made.append(r)
            return r

        yield make
        for r in made:
            left = r.leftovers()
            kill_all(left)
            assert not left, f"processes outlived ptysup: {left}"


def test_a_task_completes_with_turn_ends_from_the_stop_hook(rig: Callable[..., QwenRig]) -> None:
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
    assert turn["ts"] - stop["ts"] < 1.0
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
