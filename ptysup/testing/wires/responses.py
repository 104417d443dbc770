"""The OpenAI Responses API over SSE, as far as Codex CLI 0.169 reads and writes it.

Codex POSTs `{base_url}/responses` with `stream: true` and an `input` list of items:
`message` (role developer: its system prompt; role user: `<environment_context>` and other
harness text in angle brackets, then the person's words), and, within a turn,
`function_call` / `function_call_output` pairs. The answer is an SSE stream of
`response.*` events. Besides the agent's turns Codex sends a thread-title request of its
own (no tools, `thread_source: thread_title` in the `x-codex-turn-metadata` header).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ptysup.testing.conversation import last_index, reply_runs, schema_string_fields, who_asks
from ptysup.testing.scenario import Step
from ptysup.testing.wire import Block, ToolUseBlock
from ptysup.testing.wires.base import Reading, Reply

PATH_SUFFIX = "/responses"
TURN_METADATA = "x-codex-turn-metadata"
# Codex's side request for a thread's title (observed with 0.169).
TITLE_SOURCE = "thread_title"
TITLE_PROMPT = "Generate a concise, single-line task title"
CHUNK_CHARS = 48  # text deltas this long: Codex's incremental rendering does real work
# Harness text in a user message (`<environment_context>`, `<skills_instructions>`, …).
_HARNESS_TAG = re.compile(r"\s*<[A-Za-z_][\w -]*>")

ERROR_CODES: Mapping[int, str] = {
    400: "invalid_request_error",
    401: "invalid_api_key",
    429: "rate_limit_exceeded",
    500: "server_error",
    503: "server_is_overloaded",
}
ERROR_MESSAGES: Mapping[int, str] = {
    429: "Rate limit reached for fake-model (fake model)",
    500: "The server had an error while processing your request (fake model)",
    503: "The server is overloaded (fake model)",
}


def matches(path: str) -> bool:
    """A Responses request: a POST to a path ending in /responses (any base path)."""
    return path.rstrip("/").endswith(PATH_SUFFIX)


def new_id(prefix: str) -> str:
    """An id shaped like the API's (`resp_…`, `msg_…`, `call_…`)."""
    return f"{prefix}_fake{uuid.uuid4().hex[:20]}"


# -- reading a request -------------------------------------------------------------------


def _items(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    items = body.get("input")
    if isinstance(items, str):
        return [{"type": "message", "role": "user", "content": items}]
    if not isinstance(items, list):
        return []
    return [i for i in items if isinstance(i, Mapping)]


def _texts(item: Mapping[str, Any]) -> list[str]:
    content = item.get("content")
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        part["text"]
        for part in content
        if isinstance(part, Mapping) and isinstance(part.get("text"), str)
    ]


def _is_user_message(item: Mapping[str, Any]) -> bool:
    return item.get("type", "message") == "message" and item.get("role") == "user"


def _person_texts(item: Mapping[str, Any]) -> list[str]:
    """A user message's texts that the person typed: harness context (environment,
    instructions, skills) comes wrapped in a tag such as `<environment_context>`."""
    return [t for t in _texts(item) if not _HARNESS_TAG.match(t)]


def last_human_index(body: Mapping[str, Any]) -> int | None:
    """The index in `input` of the latest user message with the person's words, or None."""
    return last_index(
        _items(body), lambda item: _is_user_message(item) and bool(_person_texts(item))
    )


def human_text(body: Mapping[str, Any]) -> str:
    """The person's words in the latest user message (developer and harness text left out)."""
    index = last_human_index(body)
    return "" if index is None else "\n".join(_person_texts(_items(body)[index]))


def user_texts(body: Mapping[str, Any]) -> list[str]:
    """Every text of every user message (where the supervisor marker is looked for)."""
    return [t for item in _items(body) if _is_user_message(item) for t in _texts(item)]


def step_index(body: Mapping[str, Any]) -> int:
    """How many model replies this turn already has: each run of output items (assistant
    messages, reasoning, function calls) after the latest human message is one reply."""
    index = last_human_index(body)
    after = _items(body)[index + 1 :] if index is not None else []
    return reply_runs(after, _is_output)


def _is_output(item: Mapping[str, Any]) -> bool:
    """An item the model wrote: an assistant message, reasoning, a function call."""
    return item.get("type") in ("function_call", "reasoning", "custom_tool_call") or (
        item.get("type", "message") == "message" and item.get("role") == "assistant"
    )


def turn_metadata(headers: Mapping[str, str]) -> Mapping[str, Any]:
    """The JSON of Codex's `x-codex-turn-metadata` header ({} when absent or unreadable)."""
    raw = next((v for k, v in headers.items() if k.lower() == TURN_METADATA), "")
    try:
        data = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return data if isinstance(data, Mapping) else {}


def is_title_request(body: Mapping[str, Any], headers: Mapping[str, str]) -> bool:
    """Codex's thread-title side request: tagged in its metadata header, or (should the
    header change) a request offering no tools that asks for a title."""
    if turn_metadata(headers).get("thread_source") == TITLE_SOURCE:
        return True
    return body.get("tools") == [] and any(TITLE_PROMPT in t for t in user_texts(body))


def required_string_fields(body: Mapping[str, Any]) -> list[str]:
    """The required string properties of the request's JSON-schema output format (the
    title request asks for `{"title": ...}`), if it has one."""
    text = body.get("text")
    fmt = text.get("format") if isinstance(text, Mapping) else None
    schema = fmt.get("schema") if isinstance(fmt, Mapping) else None
    if not isinstance(fmt, Mapping) or fmt.get("type") != "json_schema":
        return []
    return [] if not isinstance(schema, Mapping) else list(schema_string_fields(schema))


def session_of(headers: Mapping[str, str]) -> str:
    """The conversation a request belongs to (Codex's `session-id` header)."""
    return next((v for k, v in headers.items() if k.lower() in ("session-id", "session_id")), "")


# -- answering ---------------------------------------------------------------------------


def _pieces(text: str) -> Iterator[str]:
    for start in range(0, len(text), CHUNK_CHARS):
        yield text[start : start + CHUNK_CHARS]


def _item_events(index: int, block: Block) -> Iterator[dict[str, object]]:
    if isinstance(block, ToolUseBlock):
        item: dict[str, object] = {
            "type": "function_call",
            "id": new_id("fc"),
            "call_id": new_id("call"),
            "name": block.name,
            "arguments": json.dumps(dict(block.input), ensure_ascii=False),
        }
        yield {"type": "response.output_item.done", "output_index": index, "item": item}
        return
    msg_id = new_id("msg")
    start = {"type": "message", "role": "assistant", "id": msg_id, "content": []}
    yield {"type": "response.output_item.added", "output_index": index, "item": start}
    for piece in _pieces(block.text):
        yield {
            "type": "response.output_text.delta",
            "item_id": msg_id,
            "output_index": index,
            "content_index": 0,
            "delta": piece,
        }
    done = {**start, "content": [{"type": "output_text", "text": block.text, "annotations": []}]}
    yield {"type": "response.output_item.done", "output_index": index, "item": done}


def usage(input_tokens: int, output_tokens: int) -> dict[str, object]:
    """The `usage` of a completed response (Codex shows tokens; it has no price list for a
    custom provider, so no cost comes of them)."""
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input_tokens + output_tokens,
    }


def stream_events(blocks: Sequence[Block], input_tokens: int) -> list[dict[str, object]]:
    """The SSE events of one reply, in order: created, the output items, completed."""
    response_id = new_id("resp")
    events: list[dict[str, object]] = [
        {"type": "response.created", "response": {"id": response_id}},
    ]
    for index, block in enumerate(blocks):
        events.extend(_item_events(index, block))
    output_tokens = max(1, sum(len(json.dumps(e)) for e in events) // 4)
    completed = {"id": response_id, "usage": usage(input_tokens, output_tokens)}
    events.append({"type": "response.completed", "response": completed})
    return events


def encode_sse(events: Sequence[Mapping[str, object]]) -> bytes:
    """Frame events as `event: TYPE` / `data: JSON` / blank line."""
    return b"".join(
        f"event: {e['type']}\ndata: {json.dumps(e, ensure_ascii=False)}\n\n".encode()
        for e in events
    )


def error_json(status: int, message: str | None = None) -> dict[str, object]:
    """OpenAI's error body for an HTTP STATUS."""
    code = ERROR_CODES.get(status, "server_error")
    return {
        "error": {
            "message": message or ERROR_MESSAGES.get(status, f"HTTP {status} (fake model)"),
            "type": "invalid_request_error" if status < 500 else "server_error",
            "param": None,
            "code": code,
        }
    }


class ResponsesWire:
    """`POST …/responses`, always streamed, as Codex CLI sends it."""

    name = "responses"

    def matches(self, path: str) -> bool:
        return matches(path)

    def read(
        self, path: str, body: Mapping[str, Any], headers: Mapping[str, str], marker: str
    ) -> Reading:
        return Reading(
            kind=who_asks(is_title_request(body, headers), user_texts(body), marker),
            human_text=human_text(body),
            step_index=step_index(body),
            turn=last_human_index(body) or 0,
            session_id=session_of(headers),
            json_fields=tuple(required_string_fields(body)),
        )

    def reply(self, step: Step, path: str, body: Mapping[str, Any], reading: Reading) -> Reply:
        tokens = max(1, len(json.dumps(body.get("input", []))) // 4)
        return Reply(200, encode_sse(stream_events(step.blocks, tokens)), "text/event-stream")

    def error(self, status: int, message: str | None = None) -> Reply:
        data = json.dumps(error_json(status, message)).encode()
        headers = {"retry-after": "1"} if status == 429 else {}
        return Reply(status, data, "application/json", headers)
