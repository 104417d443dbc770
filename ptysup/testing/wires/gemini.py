"""The Gemini API wire (`generativelanguage` v1beta), as far as Gemini CLI 0.61 reads it.

Gemini CLI sends each agent turn as `POST /v1beta/models/<model>:streamGenerateContent?alt=sse`
and reads plain `data:` lines of GenerateContentResponse chunks. Before every turn it asks a
routing classifier, a non-streaming `:generateContent` whose `generationConfig` carries a
`responseJsonSchema`; it needs a JSON value of that schema back, nothing else. Pure functions
from a scripted reply to bytes, and from a request to what the player needs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ptysup.testing.conversation import RequestKind, last_index, reply_runs, who_asks
from ptysup.testing.scenario import Step
from ptysup.testing.wire import Block, TextBlock, estimate_tokens
from ptysup.testing.wires.base import Reading, Reply

_ROUTE = re.compile(
    r"^/v1beta/models/(?P<model>[^/:]+):(?P<method>streamGenerateContent|generateContent)$"
)
# Real chunks carry a few tokens each; small pieces make the client join them for real.
CHUNK_CHARS = 48
# Gemini CLI puts the date, the OS and the folder's listing in a text part before the
# first prompt: context, not the person's words.
SESSION_CONTEXT = "<session_context>"
# Gemini CLI replays a function call only with this signature when the model sent none
# (observed in 0.61's history); the fake's calls carry it from the start.
THOUGHT_SIGNATURE = "skip_thought_signature_validator"

STATUS_NAMES: Mapping[int, str] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
ERROR_MESSAGES: Mapping[int, str] = {
    429: "Resource has been exhausted (e.g. check quota). (fake model)",
    500: "An internal error has occurred. (fake model)",
    503: "The model is overloaded. Please try again later. (fake model)",
}


def route(method: str, path: str) -> tuple[str, bool] | None:
    """(model, streaming) for a Gemini model call, None for anything else."""
    if method != "POST":
        return None
    m = _ROUTE.match(path.split("?", 1)[0])
    if m is None:
        return None
    return m["model"], m["method"] == "streamGenerateContent"


def _contents(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    contents = body.get("contents")
    if not isinstance(contents, list):
        return []
    return [c for c in contents if isinstance(c, Mapping)]


def _parts(content: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    parts = content.get("parts")
    if not isinstance(parts, list):
        return []
    return [p for p in parts if isinstance(p, Mapping)]


def is_human(content: Mapping[str, Any]) -> bool:
    """A user content the person typed: text, no functionResponse."""
    parts = _parts(content)
    return (
        content.get("role") == "user"
        and any(isinstance(p.get("text"), str) for p in parts)
        and not any("functionResponse" in p for p in parts)
    )


def last_human_index(body: Mapping[str, Any]) -> int | None:
    """The index of the latest typed user content, or None."""
    return last_index(_contents(body), is_human)


def human_text(body: Mapping[str, Any]) -> str:
    """The text of the latest typed user content."""
    index = last_human_index(body)
    if index is None:
        return ""
    texts = [p["text"] for p in _parts(_contents(body)[index]) if isinstance(p.get("text"), str)]
    return "\n".join(t for t in texts if not t.lstrip().startswith(SESSION_CONTEXT))


def user_texts(body: Mapping[str, Any]) -> list[str]:
    """Every text part of every user content (the supervisor marker may be in any)."""
    return [
        p["text"]
        for c in _contents(body)
        if c.get("role") == "user"
        for p in _parts(c)
        if isinstance(p.get("text"), str)
    ]


def step_index(body: Mapping[str, Any]) -> int:
    """How many model replies this turn already has: runs of model contents after the
    latest typed user content (each functionResponse round trip adds one)."""
    index = last_human_index(body)
    after = _contents(body)[index + 1 :] if index is not None else []
    return reply_runs(after, lambda content: content.get("role") == "model")


def function_responses(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Every functionResponse part sent back so far, oldest first."""
    return [
        p["functionResponse"]
        for c in _contents(body)
        for p in _parts(c)
        if isinstance(p.get("functionResponse"), Mapping)
    ]


def response_schema(body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The JSON schema a structured-output request asks for, if any."""
    config = body.get("generationConfig")
    if not isinstance(config, Mapping):
        return None
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    return schema if isinstance(schema, Mapping) else None


def value_for(schema: Mapping[str, Any], text: str) -> object:
    """A value that satisfies SCHEMA: the first enum choice, the low end of a number's
    range (the router then picks the plain model), TEXT for a string, objects filled."""
    if "enum" in schema and isinstance(schema["enum"], list) and schema["enum"]:
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        properties = schema.get("properties")
        if not isinstance(properties, Mapping):
            return {}
        return {
            str(name): value_for(sub, text)
            for name, sub in properties.items()
            if isinstance(sub, Mapping)
        }
    if kind == "array":
        items = schema.get("items")
        return [value_for(items, text)] if isinstance(items, Mapping) else []
    if kind in ("integer", "number"):
        low = schema.get("minimum", 1)
        return low if isinstance(low, (int, float)) else 1
    if kind == "boolean":
        return False
    return text


def _pieces(text: str) -> Iterator[str]:
    for start in range(0, len(text), CHUNK_CHARS):
        yield text[start : start + CHUNK_CHARS]


def _part(block: Block) -> dict[str, object]:
    if isinstance(block, TextBlock):
        return {"text": block.text}
    return {
        "functionCall": {"name": block.name, "args": dict(block.input)},
        "thoughtSignature": THOUGHT_SIGNATURE,
    }


def usage(prompt_tokens: int, output_tokens: int) -> dict[str, int]:
    """`usageMetadata`: Gemini CLI shows and stores these token counts (it has no prices)."""
    return {
        "promptTokenCount": prompt_tokens,
        "candidatesTokenCount": output_tokens,
        "totalTokenCount": prompt_tokens + output_tokens,
    }


def _chunk(
    parts: Sequence[Mapping[str, object]], model: str, tokens: Mapping[str, int], last: bool
) -> dict[str, object]:
    candidate: dict[str, object] = {
        "content": {"role": "model", "parts": list(parts)},
        "index": 0,
    }
    if last:
        candidate["finishReason"] = "STOP"
    return {"candidates": [candidate], "usageMetadata": dict(tokens), "modelVersion": model}


def stream_chunks(
    blocks: Sequence[Block], model: str, prompt_tokens: int
) -> list[dict[str, object]]:
    """The chunks of a streamed reply: text in small pieces, each call whole, the last
    chunk with `finishReason: STOP`."""
    parts: list[dict[str, object]] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            parts.extend({"text": piece} for piece in _pieces(block.text))
        else:
            parts.append(_part(block))
    tokens = usage(prompt_tokens, estimate_tokens([_part(b) for b in blocks]))
    if not parts:  # an empty reply still ends the stream properly
        parts.append({"text": ""})
    return [_chunk([part], model, tokens, last=i == len(parts) - 1) for i, part in enumerate(parts)]


def response_json(blocks: Sequence[Block], model: str, prompt_tokens: int) -> dict[str, object]:
    """The non-streaming reply: one GenerateContentResponse with every part."""
    parts = [_part(b) for b in blocks] or [{"text": ""}]
    tokens = usage(prompt_tokens, estimate_tokens(parts))
    return _chunk(parts, model, tokens, last=True)


def structured_json(body: Mapping[str, Any], model: str, text: str) -> dict[str, object] | None:
    """The reply to a structured-output side request (the routing classifier, the
    next-speaker check): the schema's value as the single text part, or None."""
    schema = response_schema(body)
    if schema is None:
        return None
    value = json.dumps(value_for(schema, text))
    return response_json([TextBlock(value)], model, estimate_tokens(body.get("contents", [])))


def encode_sse(chunks: Sequence[Mapping[str, object]]) -> bytes:
    """Frame chunks as plain `data:` lines (no `event:`), as the Gemini API does."""
    return b"".join(f"data: {json.dumps(c, ensure_ascii=False)}\r\n\r\n".encode() for c in chunks)


def error_json(status: int, message: str | None = None) -> dict[str, object]:
    """Google's error body for an HTTP STATUS."""
    return {
        "error": {
            "code": status,
            "message": message or ERROR_MESSAGES.get(status, f"HTTP {status} (fake model)"),
            "status": STATUS_NAMES.get(status, "UNKNOWN"),
        }
    }


def prompt_tokens(body: Mapping[str, Any]) -> int:
    """A rough count of the request's prompt tokens."""
    return estimate_tokens(body.get("contents", []))


class GeminiWire:
    """`POST /v1beta/models/<model>:streamGenerateContent` (SSE) and `:generateContent`.

    Every non-streaming call is a side request (the routing classifier, the session
    summary, the next-speaker check): TITLE, answered with its schema's value or the
    scenario's title, never an agent turn. Gemini CLI sends no session id in its headers."""

    name = "gemini"

    def matches(self, path: str) -> bool:
        return route("POST", path) is not None

    def read(
        self, path: str, body: Mapping[str, Any], headers: Mapping[str, str], marker: str
    ) -> Reading:
        found = route("POST", path)
        streaming = found is not None and found[1]
        return Reading(
            kind=who_asks(not streaming, user_texts(body), marker),
            human_text=human_text(body),
            step_index=step_index(body),
            turn=last_human_index(body) or 0,
        )

    def reply(self, step: Step, path: str, body: Mapping[str, Any], reading: Reading) -> Reply:
        found = route("POST", path)
        model, streaming = found if found is not None else ("gemini-fake", False)
        text = "".join(b.text for b in step.blocks if isinstance(b, TextBlock))
        structured = (
            structured_json(body, model, text) if reading.kind is RequestKind.TITLE else None
        )
        if structured is not None:
            return _json(200, structured)
        if streaming:
            chunks = stream_chunks(step.blocks, model, prompt_tokens(body))
            return Reply(200, encode_sse(chunks), "text/event-stream")
        return _json(200, response_json(step.blocks, model, prompt_tokens(body)))

    def error(self, status: int, message: str | None = None) -> Reply:
        return _json(status, error_json(status, message))


def _json(status: int, payload: object) -> Reply:
    return Reply(status, json.dumps(payload).encode(), "application/json")
