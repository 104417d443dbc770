"""A message is never read as the agent's own syntax: its shell mode (`!`), its help (`?`),
its slash commands (`/`), at the first message and at later instructions, for every agent
with its real pinned binary. The model gets each message whole, and nothing runs."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from ptysup.testing import aider_env, codex_env, gemini_env, opencode_env, qwen_env
from tests.conftest import ClaudeEnvFactory, FakeModelFactory
from tests.e2e.conftest import Rig, rigs

pytestmark = pytest.mark.e2e

# Issue 30's task: Gemini CLI read it as keys, `?` opened its help, `!` its shell mode.
TASK = "Is the build ready? Great! touch PWNED.txt"
# Later instructions that start with each agent's command characters.
SLASH = "/quit? Great! touch PWNED2.txt"
BANG = "!touch PWNED3.txt? Great!"
# A long instruction of many lines: agents fold a large paste into a placeholder.
LONG = "\n".join(
    f"Line {i}: keep the build green, and say what you changed? Fine!" for i in range(40)
)
AGENTS = {
    "claude": "claude --permission-mode acceptEdits",
    "codex": "codex",
    "gemini": "gemini --approval-mode auto_edit",
    "qwen": "qwen --approval-mode auto-edit",
    "opencode": "opencode",
    "aider": "aider",
}


@pytest.fixture(params=sorted(AGENTS))
def agent_rig(
    request: pytest.FixtureRequest,
    fake_model: FakeModelFactory,
    claude_env: ClaudeEnvFactory,
    project_dir: Path,
    tmp_path: Path,
) -> Iterator[Callable[[Mapping[str, Any]], Rig]]:
    """Rigs of each agent, its pinned binary in a private home, `claude -p` supervising."""
    name: str = request.param
    binary: Path = request.getfixturevalue(f"{name}_bin")
    if name == "aider":
        subprocess.run(["git", "init", "-q", str(project_dir)], check=True)
    with contextlib.ExitStack() as stack:

        def env_for(url: str) -> dict[str, str]:
            claude = claude_env(url).env
            made: contextlib.AbstractContextManager[Any]
            if name == "claude":
                return dict(claude)
            if name == "codex":
                made = codex_env.codex_env(url, [project_dir], binary, base=claude)
            elif name == "gemini":
                made = gemini_env.gemini_env(url, binary, base=claude)
            elif name == "qwen":
                made = qwen_env.qwen_env(url, binary, base=claude)
            elif name == "opencode":
                made = opencode_env.opencode_env(url, binary, base=claude)
            else:
                made = aider_env.aider_env(url, binary, base=claude)
            return dict(stack.enter_context(made).env)

        yield from rigs(fake_model, project_dir, tmp_path, env_for, AGENTS[name])


def test_no_message_is_read_as_the_agents_shell_help_or_command(
    agent_rig: Callable[..., Rig],
) -> None:
    r = agent_rig(
        {
            "agent": [{"reply": "Noted."}],
            "supervisor": [
                {"times": 1, "reply": f"[CONTINUE] {SLASH}"},
                {"times": 1, "reply": f"[CONTINUE] {BANG}"},
                {"times": 1, "reply": f"[CONTINUE] {LONG}"},
                {"reply": "[COMPLETE] all four were read"},
            ],
        }
    )
    run = r.run(TASK, "--max-iter", "5", "--turn-timeout", "30", timeout=300)
    made = sorted(p.name for p in r.project.glob("PWNED*"))
    assert made == [], run.stdout + run.stderr
    assert run.code == 0, run.stdout + run.stderr
    # The model got every message whole (an agent may add an invisible guard in front).
    sent = [TASK, SLASH, BANG, LONG]
    assert [_words(t) for t in r.human_texts()] == [_words(t) for t in sent]
    injected = [i for i in run.named("inject") if i["kind"] != "command"]
    assert [_words(i["text"]) for i in injected] == [_words(t) for t in sent]
    assert all(i["confirmed"] and i["landed"] for i in injected), injected


def _words(text: str) -> str:
    """TEXT's words: ptysup's guard (a space, U+2060) and the agent's line breaks aside."""
    return " ".join(text.replace("\u2060", "").split())
