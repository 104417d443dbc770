"""A killed part's unanswered prompt, found at the end of Gemini CLI's and Qwen Code's saved
conversations (shaped as the pinned releases write them) and taken out with each agent's
own rewind record, so that a resumed run's next message arrives alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ptysup.agents.gemini import transcript as gemini
from ptysup.agents.profile import Unanswered
from ptysup.agents.qwen import transcript as qwen

SESSION = "dd2e1c5b-a323-41b0-a53c-ec8d52676618"
CONTEXT = {"text": "<session_context>\nThis is the Gemini CLI.\n</session_context>"}


def _gemini_file(home: Path, *records: dict[str, Any]) -> Path:
    chats = home / ".gemini" / "tmp" / "project" / "chats"
    chats.mkdir(parents=True)
    path = chats / f"session-2026-11-27T18-33-{SESSION[:8]}.jsonl"
    header = {"sessionId": SESSION, "projectHash": "9e44", "kind": "main"}
    start = {"$set": {"messages": [{"id": "c0", "type": "user", "content": [CONTEXT]}]}}
    lines = [header, start, *records, {"$set": {"lastUpdated": "2026-11-27T18:33:25.719Z"}}]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


def _prompt(mid: str, text: str) -> dict[str, Any]:
    return {"id": mid, "type": "user", "content": [{"text": text}]}


def _answer(mid: str, text: str) -> dict[str, Any]:
    return {"id": mid, "type": "gemini", "content": text}


def test_gemini_s_unanswered_last_prompt_is_rewound_away(tmp_path: Path) -> None:
    path = _gemini_file(
        tmp_path, _prompt("p1", "do part one"), _answer("a1", "Done."), _prompt("p2", "part two")
    )
    env = {"GEMINI_CLI_HOME": str(tmp_path)}
    assert gemini.unanswered(SESSION, env) == Unanswered("part two", dropped=True)
    assert json.loads(path.read_text().splitlines()[-1]) == {"$rewindTo": "p2"}
    # Gemini CLI reads the conversation without it now: nothing more is left to take out.
    assert gemini.unanswered(SESSION, env) is None


def test_gemini_s_answered_or_empty_conversation_is_left_as_it_is(tmp_path: Path) -> None:
    path = _gemini_file(tmp_path, _prompt("p1", "do part one"), _answer("a1", "Done."))
    before = path.read_text()
    assert gemini.unanswered(SESSION, {"GEMINI_CLI_HOME": str(tmp_path)}) is None
    assert gemini.unanswered("another-session-id", {"GEMINI_CLI_HOME": str(tmp_path)}) is None
    assert path.read_text() == before


def test_gemini_s_only_prompt_unanswered_leaves_nothing_to_reopen(tmp_path: Path) -> None:
    path = _gemini_file(tmp_path, _prompt("p1", "do part one"))
    before = path.read_text()
    found = gemini.unanswered(SESSION, {"GEMINI_CLI_HOME": str(tmp_path)})
    assert found == Unanswered("do part one", dropped=False)
    assert path.read_text() == before  # a new conversation starts instead


def _qwen_file(home: Path, *chain: tuple[str, str, str]) -> Path:
    """A Qwen Code session whose records (uuid, type, text) follow each other."""
    chats = home / "projects" / "-tmp-project" / "chats"
    chats.mkdir(parents=True)
    path = chats / f"{SESSION}.jsonl"
    lines, parent = [], None
    for uid, kind, text in chain:
        record: dict[str, Any] = {
            "uuid": uid,
            "parentUuid": parent,
            "sessionId": SESSION,
            "type": kind,
            "cwd": "/tmp/project",
            "version": "0.24.4",
        }
        if kind == "system":
            record["subtype"] = text
        else:
            record["message"] = {"role": kind, "parts": [{"text": text}]}
        lines.append(record)
        parent = uid
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


def test_qwen_s_unanswered_last_prompt_is_rewound_away(tmp_path: Path) -> None:
    path = _qwen_file(
        tmp_path,
        ("u1", "user", "do part one"),
        ("a1", "assistant", "Done."),
        ("u2", "user", "part two"),
        ("s1", "system", "attribution_snapshot"),
        ("s2", "system", "file_history_snapshot"),
    )
    env = {"QWEN_HOME": str(tmp_path)}
    assert qwen.unanswered(SESSION, env) == Unanswered("part two", dropped=True)
    rewind = json.loads(path.read_text().splitlines()[-1])
    assert (rewind["type"], rewind["subtype"], rewind["parentUuid"]) == ("system", "rewind", "a1")
    # The chain from the new last record skips the prompt: nothing more to take out.
    assert qwen.unanswered(SESSION, env) is None


def test_qwen_s_answered_conversation_is_left_and_an_only_prompt_starts_anew(
    tmp_path: Path,
) -> None:
    answered = _qwen_file(
        tmp_path / "a", ("u1", "user", "do part one"), ("a1", "assistant", "Done.")
    )
    before = answered.read_text()
    assert qwen.unanswered(SESSION, {"QWEN_HOME": str(tmp_path / "a")}) is None
    assert answered.read_text() == before
    _qwen_file(tmp_path / "b", ("u1", "user", "do part one"), ("s1", "system", "x"))
    found = qwen.unanswered(SESSION, {"QWEN_HOME": str(tmp_path / "b")})
    assert found == Unanswered("do part one", dropped=False)
