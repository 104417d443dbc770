"""The Anthropic Messages API (Claude Code, agent and `claude -p` supervisor)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ptysup.testing import conversation, wire
from ptysup.testing.conversation import RequestKind
from ptysup.testing.scenario import Step
from ptysup.testing.wires.base import Reading, Reply

MESSAGES = "/v1/messages"
COUNT_TOKENS = "/v1/messages/count_tokens"


class AnthropicWire:
    """`POST /v1/messages` (SSE when `stream`) and its token counting."""

    name = "anthropic"

    def matches(self, path: str) -> bool:
        return path in (MESSAGES, COUNT_TOKENS)

    def read(
        self, path: str, body: Mapping[str, Any], headers: Mapping[str, str], marker: str
    ) -> Reading:
        kind = (
            RequestKind.COUNT_TOKENS
            if path == COUNT_TOKENS
            else conversation.classify(body, marker)
        )
        return Reading(
            kind=kind,
            human_text=conversation.human_text(body),
            step_index=conversation.step_index(body),
            turn=conversation.last_human_index(body) or 0,
            session_id=headers.get("x-claude-code-session-id", ""),
            json_fields=tuple(conversation.required_string_fields(body))
            or (("title",) if conversation.asks_for_title(body) else ()),
        )

    def reply(self, step: Step, path: str, body: Mapping[str, Any], reading: Reading) -> Reply:
        if reading.kind is RequestKind.COUNT_TOKENS:
            return _json(200, {"input_tokens": wire.estimate_tokens(body)})
        name = str(body.get("model", "claude-fake"))
        tokens = wire.estimate_tokens(body.get("messages", []))
        if body.get("stream"):
            events = wire.stream_events(step.blocks, name, tokens)
            return Reply(200, wire.encode_sse(events), "text/event-stream")
        return _json(200, wire.message_json(step.blocks, name, tokens))

    def error(self, status: int, message: str | None = None) -> Reply:
        headers = {"retry-after": "1"} if status == 429 else {}
        return _json(status, wire.error_json(status, message), headers)


def _json(status: int, payload: object, headers: Mapping[str, str] | None = None) -> Reply:
    return Reply(status, json.dumps(payload).encode(), "application/json", headers or {})
