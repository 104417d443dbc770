"""A run learns the id of the conversation its agent is in from its SessionStart hooks: one
the agent picked itself (Codex), and the new one each /clear starts, so that a resume
reopens the conversation the run was in last."""

from __future__ import annotations

from ptysup.agents.events import HookEvent
from ptysup.run.app import SessionLearner


def _start(session: str, source: str = "startup") -> HookEvent:
    return HookEvent("SessionStart", {"session_id": session, "source": source}, 0.0)


def test_each_new_conversation_is_learnt_once() -> None:
    heard: list[str] = []
    learner = SessionLearner("ptysup-placeholder", heard.append)
    learner.hear(HookEvent("UserPromptSubmit", {"session_id": "a"}, 0.0))
    learner.hear(_start("019a-codex"))
    learner.hear(_start("019a-codex", "resume"))
    learner.hear(_start("019b-after-clear", "clear"))
    learner.hear(_start("", "clear"))  # no id: nothing to keep
    assert heard == ["019a-codex", "019b-after-clear"]


def test_the_id_ptysup_picked_is_no_news_but_a_clear_s_new_one_is() -> None:
    # Claude Code, Gemini CLI and Qwen Code start the id ptysup picked; /clear starts another.
    heard: list[str] = []
    claude = SessionLearner("c1", heard.append)
    claude.hear(_start("c1"))
    claude.hear(_start("c2", "clear"))
    assert heard == ["c2"]
