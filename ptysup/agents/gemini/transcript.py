"""Gemini CLI's saved conversation, as a resume finds it: the prompt a killed part left
unanswered at its end, taken out with Gemini CLI's own rewind record.

Observed with Gemini CLI 0.61.0: a session is `<home>/.gemini/tmp/<project>/chats/
session-<time>-<first 8 of its id>.jsonl`, a log of records read in order: a header
(`sessionId`), messages (`id`, `type` `user` or `gemini`, `content`; a later record with the
same id replaces it), `{"$set": {"messages": [...]}}` (the whole list anew) and
`{"$rewindTo": id}` (that message and every one after it gone: what its /rewind writes).
The prompt is written as it is sent, the model's answer once it came: a part killed
between leaves a conversation that ends on the prompt, and `--resume` joins the next
message to it as one user turn (its model read `do part one` and `now do part two`
together).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from glob import escape as glob_escape
from pathlib import Path
from typing import Any

from ptysup.agents.profile import Unanswered
from ptysup.agents.saved import records

_SESSIONS = ".gemini/tmp/*/chats/session-*-{head}.jsonl"
# User messages Gemini CLI does not count as the person's (its isIgnoredUserContent).
_NOT_PROMPTS = ("/", "?", "<session_context>", "<hook_context>")


def unanswered(session_id: str, env: Mapping[str, str]) -> Unanswered | None:
    """The unanswered prompt at the end of conversation SESSION_ID, rewound away (Gemini
    CLI's own `$rewindTo`) when an answered turn comes before it; None if there is none."""
    path = session_file(session_id, env)
    if path is None:
        return None
    try:
        messages = _messages(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None
    said = [m for m in messages if m.get("type") in ("user", "gemini")]
    last = said[-1] if said else None
    text = _text(last.get("content")).strip() if last is not None else ""
    # Gemini CLI's own context (`<session_context>`) and commands are no prompts.
    if last is None or last.get("type") != "user" or not text or text.startswith(_NOT_PROMPTS):
        return None
    if not any(m.get("type") == "gemini" for m in said):
        return Unanswered(text, dropped=False)
    try:
        with path.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"$rewindTo": last["id"]}) + "\n")
    except OSError:
        return None
    return Unanswered(text, dropped=True)


def session_file(session_id: str, env: Mapping[str, str]) -> Path | None:
    """Conversation SESSION_ID's file under Gemini CLI's home (GEMINI_CLI_HOME, else HOME)."""
    home = Path(env.get("GEMINI_CLI_HOME") or env.get("HOME") or "~").expanduser()
    for path in home.glob(_SESSIONS.format(head=glob_escape(session_id[:8]))):
        try:
            with path.open(encoding="utf-8", errors="replace") as lines:
                header = json.loads(lines.readline() or "null")
        except (OSError, ValueError):
            continue
        if isinstance(header, dict) and header.get("sessionId") == session_id:
            return path
    return None


def _messages(text: str) -> list[dict[str, Any]]:
    """The conversation's messages as Gemini CLI rebuilds them from its log, in order."""
    by_id: dict[str, dict[str, Any]] = {}
    for record in records(text):
        rewind = record.get("$rewindTo")
        update = record.get("$set")
        if isinstance(rewind, str):
            ids = list(by_id)
            for gone in ids[ids.index(rewind) :] if rewind in by_id else ids:
                del by_id[gone]
        elif isinstance(record.get("id"), str):
            by_id[record["id"]] = record
        elif isinstance(update, dict) and isinstance(update.get("messages"), list):
            by_id = {m["id"]: m for m in update["messages"] if isinstance(m, dict) and "id" in m}
    return list(by_id.values())


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "\n".join(str(p["text"]) for p in parts if isinstance(p, dict) and "text" in p)
