"""The Anthropic Messages API wire format, as far as Claude Code reads it.

Pure functions from a scripted reply to bytes: the SSE event stream for `stream: true`,
the plain JSON message otherwise, and the error bodies.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

# Real deltas are a few tokens long; small pieces make the client's incremental parsing
# (notably of tool input JSON) do real work.
CHUNK_CHARS = 48


@dataclass(frozen=True)
class TextBlock:
    """A `text` content block."""

    text: str


@dataclass(frozen=True)
class ToolUseBlock:
    """A `tool_use` content block; the id is made when it is rendered."""

    name: str
    input: Mapping[str, object] = field(default_factory=dict)


Block = TextBlock | ToolUseBlock

ERROR_TYPES: Mapping[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}

ERROR_MESSAGES: Mapping[int, str] = {
    429: "Number of request tokens has exceeded your per-minute rate limit (fake model)",
    500: "Internal server error (fake model)",
    529: "Overloaded (fake model)",
}


def new_id(prefix: str) -> str:
    """A random id shaped like the API's (`msg_…`, `toolu_…`, `req_…`)."""
    return f"{prefix}_fake{uuid.uuid4().hex[:20]}"


def stop_reason(blocks: Sequence[Block]) -> str:
    """`tool_use` if the reply calls a tool, else `end_turn`."""
    return "tool_use" if any(isinstance(b, ToolUseBlock) for b in blocks) else "end_turn"


def estimate_tokens(payload: object) -> int:
    """A rough token count (4 characters a token) of any JSON-able payload."""
    return max(1, len(json.dumps(payload, ensure_ascii=False)) // 4)


def content_json(block: Block) -> dict[str, object]:
    """The complete JSON form of a block, with a fresh tool_use id."""
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    return {
        "type": "tool_use",
        "id": new_id("toolu"),
        "name": block.name,
        "input": dict(block.input),
    }


def usage(input_tokens: int, output_tokens: int) -> dict[str, int]:
    """A `usage` object; Claude Code computes `total_cost_usd` from it."""
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def message_json(blocks: Sequence[Block], model: str, input_tokens: int) -> dict[str, object]:
    """The non-streaming reply: one complete `message` object."""
    content = [content_json(b) for b in blocks]
    return {
        "id": new_id("msg"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason(blocks),
        "stop_sequence": None,
        "usage": usage(input_tokens, estimate_tokens(content)),
    }


def _pieces(text: str) -> Iterator[str]:
    for start in range(0, len(text), CHUNK_CHARS):
        yield text[start : start + CHUNK_CHARS]


def _block_events(index: int, block: Block) -> Iterator[tuple[str, dict[str, object]]]:
    full = content_json(block)
    if isinstance(block, TextBlock):
        start: dict[str, object] = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in _pieces(block.text)]
    else:
        start = {**full, "input": {}}
        raw = json.dumps(full["input"], ensure_ascii=False)
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(raw)]
    yield (
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": start},
    )
    for delta in deltas:
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": index}


def stream_events(
    blocks: Sequence[Block], model: str, input_tokens: int
) -> list[tuple[str, dict[str, object]]]:
    """The SSE events of a streamed reply, in order: (event name, data)."""
    message = message_json([], model, input_tokens)
    message["stop_reason"] = None
    events: list[tuple[str, dict[str, object]]] = [
        ("message_start", {"type": "message_start", "message": message}),
    ]
    for index, block in enumerate(blocks):
        events.extend(_block_events(index, block))
    output_tokens = estimate_tokens([content_json(b) for b in blocks])
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason(blocks), "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def encode_sse(events: Sequence[tuple[str, Mapping[str, object]]]) -> bytes:
    """Frame events as `event: …` / `data: …` / blank line."""
    return b"".join(
        f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()
        for name, data in events
    )


def error_json(status: int, message: str | None = None) -> dict[str, object]:
    """Anthropic's error body for an HTTP STATUS."""
    return {
        "type": "error",
        "error": {
            "type": ERROR_TYPES.get(status, "api_error"),
            "message": message or ERROR_MESSAGES.get(status, f"HTTP {status} (fake model)"),
        },
    }
