"""A message is never read as the agent's own syntax: its shell mode (`!`), its help (`?`),
its slash commands (`/`), at the first message and at later instructions, for every agent
with its real pinned binary. The model gets each message whole, and nothing runs."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.e2e.conftest import Rig

pytestmark = pytest.mark.e2e

# Issue 30's task: Gemini CLI read it as keys, `?` opened its help, `!` its shell mode.
TASK = "Is the build ready? Great! touch PWNED.txt"
# Later instructions that start with each agent's command characters.
SLASH = "/quit? Great! touch PWNED2.txt"
BANG = "!touch PWNED3.txt? Great!"
# Paragraphs: a blank line inside the input box ended the box's text for Codex CLI, Gemini
# CLI and Qwen Code, so a message with one (a failed check's output) never counted as landed.
PARAGRAPHS = "The check failed:\n\n  FAIL: test_add\n\nFix calc.py? Then say so!"
# A long instruction of many lines: agents fold a large paste into a placeholder.
LONG = "\n".join(
    f"Line {i}: keep the build green, and say what you changed? Fine!" for i in range(40)
)


def test_no_message_is_read_as_the_agents_shell_help_or_command(
    every_agent_rig: Callable[..., Rig],
) -> None:
    r = every_agent_rig(
        {
            "agent": [{"reply": "Noted."}],
            "supervisor": [
                {"times": 1, "reply": f"[CONTINUE] {SLASH}"},
                {"times": 1, "reply": f"[CONTINUE] {BANG}"},
                {"times": 1, "reply": f"[CONTINUE] {LONG}"},
                {"times": 1, "reply": f"[CONTINUE] {PARAGRAPHS}"},
                {"reply": "[COMPLETE] all five were read"},
            ],
        }
    )
    run = r.run(TASK, "--max-iter", "6", "--turn-timeout", "30", timeout=300)
    made = sorted(p.name for p in r.project.glob("PWNED*"))
    assert made == [], run.stdout + run.stderr
    assert run.code == 0, run.stdout + run.stderr
    # The model got every message whole (an agent may add an invisible guard in front).
    sent = [TASK, SLASH, BANG, LONG, PARAGRAPHS]
    assert [_words(t) for t in r.human_texts()] == [_words(t) for t in sent], run.stdout
    injected = [i for i in run.named("inject") if i["kind"] != "command"]
    assert [_words(i["text"]) for i in injected] == [_words(t) for t in sent]
    assert all(i["confirmed"] and i["landed"] for i in injected), injected


def _words(text: str) -> str:
    """TEXT's words: ptysup's guard (a space, U+2060) and the agent's line breaks aside."""
    return " ".join(text.replace("\u2060", "").split())
