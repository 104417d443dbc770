"""Reading a request the way the fake model needs: who asks, and where in a turn. The
kinds of request and the rules for telling them apart serve every wire; the rest reads
the Messages API.

Claude Code 2.1.197 wraps harness context in text blocks that start with
`<system-reminder>` (e.g. the current date, before the first prompt); they are not the
person's words and are left out of the human text.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from ptysup.agents import registry

T = TypeVar("T")

SYSTEM_REMINDER = "<system-reminder>"


class RequestKind(str, enum.Enum):
    """Who a request comes from."""

    AGENT = "agent"
    SUPERVISOR = "supervisor"
    TITLE = "title"
    COUNT_TOKENS = "count_tokens"


def who_asks(is_title: bool, user_texts: Iterable[str], marker: str) -> RequestKind:
    """TITLE for the agent's title request, SUPERVISOR if a user text holds MARKER, else
    AGENT. The title comes first: its request quotes the typed prompt, so a marker typed
    into the agent must not make it a supervisor's request."""
    if is_title:
        return RequestKind.TITLE
    if any(marker in text for text in user_texts):
        return RequestKind.SUPERVISOR
    return RequestKind.AGENT


def last_index(items: Sequence[T], wanted: Callable[[T], bool]) -> int | None:
    """The index of the last of ITEMS that is WANTED (the latest human message), or None."""
    for index in range(len(items) - 1, -1, -1):
        if wanted(items[index]):
            return index
    return None


def reply_runs(items: Iterable[T], is_reply: Callable[[T], bool]) -> int:
    """How many runs of replies ITEMS hold: the model's replies already given in a turn,
    one a tool round trip (a reply may span several items)."""
    runs = 0
    in_reply = False
    for item in items:
        reply = is_reply(item)
        if reply and not in_reply:
            runs += 1
        in_reply = reply
    return runs


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, Mapping)]
    return []


def _texts(message: Mapping[str, Any]) -> list[str]:
    return [
        b["text"]
        for b in _blocks(message)
        if b.get("type") == "text" and isinstance(b.get("text"), str)
    ]


def is_human(message: Mapping[str, Any]) -> bool:
    """A user message typed by the person: no tool_result blocks in it."""
    return message.get("role") == "user" and not any(
        b.get("type") == "tool_result" for b in _blocks(message)
    )


def _messages(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return []
    return [m for m in messages if isinstance(m, Mapping)]


def last_human_index(body: Mapping[str, Any]) -> int | None:
    """The index of the latest human message, or None."""
    return last_index(_messages(body), is_human)


def human_text(body: Mapping[str, Any]) -> str:
    """The text of the latest human message, without system reminders, and pasted text
    without the wrapper newer Claude Code puts around it (as the pinned release sends it:
    scenarios and tests read the same words from either)."""
    index = last_human_index(body)
    if index is None:
        return ""
    texts = _texts(_messages(body)[index])
    said = "\n".join(t for t in texts if not t.lstrip().startswith(SYSTEM_REMINDER))
    return _unwrapped(said)


def _unwrapped(text: str) -> str:
    """TEXT with every agent's own wrapping of the person's text taken off (OfflineHome)."""
    for agent in registry.AGENTS:
        if agent.home is not None:
            text = agent.home.unwrap(text)
    return text


def step_index(body: Mapping[str, Any]) -> int:
    """How many assistant replies this turn already has: runs of assistant messages
    after the latest human message."""
    index = last_human_index(body)
    after = _messages(body)[index + 1 :] if index is not None else []
    spoken = [m for m in after if m.get("role") in ("user", "assistant")]
    return reply_runs(spoken, lambda message: message.get("role") == "assistant")


def user_texts(body: Mapping[str, Any]) -> list[str]:
    """Every text block of every user message."""
    return [t for m in _messages(body) if m.get("role") == "user" for t in _texts(m)]


def asks_for_title(body: Mapping[str, Any]) -> bool:
    """The TUI's session-title request: structured output with a `title` property."""
    schema = _output_schema(body)
    properties = schema.get("properties") if schema else None
    return isinstance(properties, Mapping) and "title" in properties


def _output_schema(body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    config = body.get("output_config")
    fmt = config.get("format") if isinstance(config, Mapping) else None
    if isinstance(fmt, Mapping) and fmt.get("type") == "json_schema":
        schema = fmt.get("schema")
        if isinstance(schema, Mapping):
            return schema
    return None


def required_string_fields(body: Mapping[str, Any]) -> Sequence[str]:
    """The required string properties of a structured-output schema, if any."""
    schema = _output_schema(body)
    return () if schema is None else schema_string_fields(schema)


def schema_string_fields(schema: Mapping[str, Any]) -> Sequence[str]:
    """The required string properties of a JSON schema (whatever wire carried it)."""
    properties = schema.get("properties")
    required = schema.get("required")
    if not isinstance(properties, Mapping) or not isinstance(required, list):
        return ()
    return [
        name
        for name in required
        if isinstance(name, str)
        and isinstance(properties.get(name), Mapping)
        and properties[name].get("type") == "string"
    ]


def classify(body: Mapping[str, Any], marker: str) -> RequestKind:
    """TITLE for the title request, SUPERVISOR if a user text holds MARKER, else AGENT
    (a request without tools counts as TITLE too: Claude Code's side requests)."""
    # The title request quotes the typed prompt inside <session>.
    kind = who_asks(asks_for_title(body), user_texts(body), marker)
    if kind is RequestKind.AGENT and not body.get("tools"):
        return RequestKind.TITLE
    return kind
