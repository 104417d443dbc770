"""opencode supervised end to end: the real pinned binary (1.18.33) in a private home,
ptysup's own fake model speaking OpenAI Chat Completions, `claude -p` as the supervisor."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from ptysup.testing import opencode_env as opencode_env_module
from ptysup.testing.fakemodel import RequestKind
from ptysup.testing.wires import chat
from tests.conftest import ClaudeEnvFactory, FakeModelFactory
from tests.e2e.conftest import Rig, rigs
from tests.e2e.test_terminal_left_clean import LISTED, check_mirrored_and_restored
from tests.helpers import read_events, wait_for

pytestmark = pytest.mark.e2e

AGENT = "opencode"
RESUMED = "has just been resumed"
WRITE = {"tool": "write", "input": {"filePath": "{workdir}/out.txt", "content": "hello\n"}}
SHELL = {"tool": "bash", "input": {"command": "echo hi > shell.txt", "description": "w"}}


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
            made = opencode_env_module.opencode_env(url, opencode_bin, base=claude)
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
    assert (inject["text"], inject["confirmed"], inject["attempts"]) == ("say hello", True, 1)
    assert r.human_texts() == ["say hello"]
    (turn,) = run.named("turn_end")
    assert turn["kind"] == "stop", turn
    (stop,) = [e for e in run.named("hook") if e["name"] == "Stop"]
    assert turn["ts"] - stop["ts"] < 1.0
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
    assert run.events[-1]["outcome"] == "complete"
