"""Qwen Code's saved conversation, as a resume finds it: the prompt a killed part left
unanswered at its end, taken out with Qwen Code's own rewind record.

Observed with Qwen Code 0.24.4: a session is `<QWEN_HOME, else ~/.qwen>/projects/<folder>/
chats/<id>.jsonl`, one record per line (`uuid`, `parentUuid`, `type` `user`, `assistant`,
`tool_result` or `system` with a `subtype`). The conversation is the chain of parents
from the last record that is part of it; its /rewind appends a `system` record of
subtype `rewind` whose parent is the record before the prompt rewound to, so that the
prompt and all after it are off the chain. The prompt is written as it is sent, the
answer once it came: a part killed between leaves a chain that ends on the prompt, and
`--resume` joins the next message to it as one user message.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Mapping
from glob import escape as glob_escape
from pathlib import Path
from typing import Any

from ptysup.agents import saved
from ptysup.agents.profile import Unanswered

# Records that are not part of the conversation's chain (Qwen Code's artifact and
# bookkeeping subtypes).
_OFF_CHAIN = frozenset(
    {
        "session_artifact_event",
        "session_artifact_snapshot",
        "session_sources_snapshot",
        "managed_session_header_v1",
        "managed_session_event_v1",
        "managed_session_commit_v1",
    }
)


def unanswered(session_id: str, env: Mapping[str, str]) -> Unanswered | None:
    """The unanswered prompt at the end of conversation SESSION_ID, rewound away (Qwen
    Code's own rewind record) when an answered turn comes before it; None if there is
    none."""
    path = session_file(session_id, env)
    if path is None:
        return None
    try:
        chain = _chain(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None
    said = [r for r in chain if r.get("type") in ("user", "assistant") and not r.get("subtype")]
    last = said[-1] if said else None
    if last is None or last.get("type") != "user":
        return None
    text = _text(last.get("message"))
    if not any(r.get("type") == "assistant" for r in said):
        return Unanswered(text, dropped=False)
    rewind = {
        "uuid": str(uuid.uuid4()),
        "parentUuid": last.get("parentUuid"),
        "sessionId": session_id,
        "timestamp": dt.datetime.now(dt.timezone.utc).isoformat().replace("+00:00", "Z"),
        "type": "system",
        "subtype": "rewind",
        "provenance": "system",
        "cwd": last.get("cwd"),
        "version": last.get("version"),
        "systemPayload": {"truncatedCount": 1},
    }
    try:
        with path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(rewind) + "\n")
    except OSError:
        return None
    return Unanswered(text, dropped=True)


def session_file(session_id: str, env: Mapping[str, str]) -> Path | None:
    """Conversation SESSION_ID's file under Qwen Code's home."""
    home = env.get("QWEN_HOME") or str(Path(env.get("HOME") or "~").expanduser() / ".qwen")
    found = sorted(Path(home).glob(f"projects/*/chats/{glob_escape(session_id)}.jsonl"))
    return found[0] if found else None


def _chain(text: str) -> list[dict[str, Any]]:
    """The conversation's records in order: the chain of parents from its last record."""
    records = [
        r
        for r in saved.records(text)
        if isinstance(r.get("uuid"), str) and r.get("subtype") not in _OFF_CHAIN
    ]
    by_uuid: dict[str, dict[str, Any]] = {}
    for record in records:
        by_uuid.setdefault(record["uuid"], record)
    chain: list[dict[str, Any]] = []
    at = records[-1] if records else None
    while at is not None and len(chain) <= len(records):
        chain.append(at)
        parent = at.get("parentUuid")
        at = by_uuid.get(parent) if isinstance(parent, str) else None
    return chain[::-1]


def _text(message: object) -> str:
    parts = message.get("parts") if isinstance(message, dict) else None
    texts = [str(p["text"]) for p in parts or () if isinstance(p, dict) and "text" in p]
    return "\n".join(texts)
