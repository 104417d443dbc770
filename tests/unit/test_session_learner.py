"""A run learns the conversation id an agent picked itself (Codex) from its first
SessionStart hook: later ones are /clear's new conversations, not the run's."""

from __future__ import annotations

from ptysup.agents.events import HookEvent
from ptysup.run.app import SessionLearner


def _start(session: str) -> HookEvent:
    return HookEvent("SessionStart", {"session_id": session, "source": "startup"}, 0.0)


def test_only_the_first_session_start_is_news_and_only_when_it_differs() -> None:
    heard: list[str] = []
    learner = SessionLearner("ptysup-placeholder", heard.append)
    learner.hear(HookEvent("UserPromptSubmit", {"session_id": "a"}, 0.0))
    learner.hear(_start("019a-codex"))
    learner.hear(_start("019b-after-clear"))
    assert heard == ["019a-codex"]
    # Claude Code starts the id ptysup picked: nothing to learn.
    same: list[str] = []
    claude = SessionLearner("c1", same.append)
    claude.hear(_start("c1"))
    claude.hear(_start("c2"))
    assert same == []
