"""The OpenAI Chat Completions API over SSE, as the agents that speak it read it (Qwen Code;
opencode and aider speak it too). Agent-neutral: nothing here knows which client asks.

A client POSTs `{base_url}/chat/completions` with `messages` (`system`, `user`,
`assistant` with `tool_calls`, `tool` with the result of one call) and, when streaming,
`stream_options.include_usage`. The answer is `data:` lines of `chat.completion.chunk`
objects: the text and tool-call deltas, a chunk with the `finish_reason`, a usage chunk
with no choices, then `data: [DONE]`. A request that offers no tools, asks for JSON
(`response_format`), or is a known client's side prompt after a turn (Qwen Code's
follow-up suggestion, its memory extraction) is a side request, never an agent turn;
except a known client that works without tools (aider: its edits are text), whose turns
are told by their system prompt.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ptysup.testing.conversation import RequestKind, schema_string_fields
from ptysup.testing.scenario import Step
from ptysup.testing.wire import Block, TextBlock, ToolUseBlock, estimate_tokens
from ptysup.testing.wires.base import Reading, Reply
from ptysup.testing.wires.responses import error_json  # OpenAI's errors, whichever API

PATH_SUFFIX = "/chat/completions"
CHUNK_CHARS = 48  # small deltas: the client's incremental parsing does real work
# The side prompts known clients send as a user message after a turn (Qwen Code 0.24: the
# follow-up suggestion, and the background memory extraction).
SIDE_PROMPTS = ("[SUGGESTION MODE:", "Managed memory has TWO directories")
# Harness context some clients put in a user message before the person's words.
HARNESS_PREFIXES = ("<system-reminder>", "<environment_context>", "<session_context>")
# ... or after them (aider 0.86: its edit format's rules, at the end of the latest one).
HARNESS_SUFFIXES = ("\n\n# *SEARCH/REPLACE block* Rules:",)
# The system prompts of known clients whose turns offer no tools (aider 0.86's coders all
# open with it; its commit message and summary requests do not).
TOOLLESS_TURN_PROMPTS = ("Act as an expert software developer.",)


def matches(path: str) -> bool:
    """A Chat Completions request: a POST to a path ending in /chat/completions."""
    return path.rstrip("/").endswith(PATH_SUFFIX)


def new_id(prefix: str) -> str:
    """An id shaped like the API's (`chatcmpl-…`, `call_…`)."""
    return f"{prefix}fake{uuid.uuid4().hex[:20]}"


# -- reading a request -------------------------------------------------------------------


def _messages(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return []
    return [m for m in messages if isinstance(m, Mapping)]


def texts(message: Mapping[str, Any]) -> list[str]:
    """A message's texts: its content as a string, or its `text` parts."""
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        part["text"]
        for part in content
        if isinstance(part, Mapping) and isinstance(part.get("text"), str)
    ]


def _person_texts(message: Mapping[str, Any]) -> list[str]:
    kept = [t for t in texts(message) if not t.lstrip().startswith(HARNESS_PREFIXES)]
    return [t for t in map(_without_suffix, kept) if t.strip()]


def _without_suffix(text: str) -> str:
    for suffix in HARNESS_SUFFIXES:
        text = text.split(suffix, 1)[0]
    return text


def last_human_index(body: Mapping[str, Any]) -> int | None:
    """The index of the latest user message with the person's words in it, or None."""
    messages = _messages(body)
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "user" and _person_texts(messages[index]):
            return index
    return None


def human_text(body: Mapping[str, Any]) -> str:
    """The person's words in the latest user message (harness context left out)."""
    index = last_human_index(body)
    return "" if index is None else "\n".join(_person_texts(_messages(body)[index]))


def user_texts(body: Mapping[str, Any]) -> list[str]:
    """Every text of every user message (where the supervisor marker is looked for)."""
    return [t for m in _messages(body) if m.get("role") == "user" for t in texts(m)]


def step_index(body: Mapping[str, Any]) -> int:
    """How many model replies this turn already has: each assistant message after the
    latest human message is one (its tool results follow as `tool` messages)."""
    index = last_human_index(body)
    after = _messages(body)[index + 1 :] if index is not None else []
    return sum(1 for m in after if m.get("role") == "assistant")


def tool_names(body: Mapping[str, Any]) -> list[str]:
    """The names of the function tools the request offers."""
    tools = body.get("tools")
    if not isinstance(tools, list):
        return []
    names = []
    for tool in tools:
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            names.append(function["name"])
    return names


def required_string_fields(body: Mapping[str, Any]) -> list[str]:
    """The required string properties of the request's `response_format` JSON schema."""
    fmt = body.get("response_format")
    if not isinstance(fmt, Mapping) or fmt.get("type") != "json_schema":
        return []
    spec = fmt.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, Mapping) else None
    return list(schema_string_fields(schema)) if isinstance(schema, Mapping) else []


def is_side_request(body: Mapping[str, Any]) -> bool:
    """A request that is no step of the agent's turn: it asks for JSON, or offers no tools
    (titles, commit messages, classifiers) and is no turn of a known client that works
    without tools (aider), or its latest user message is a known client's side prompt
    (Qwen Code's follow-up suggestion and memory extraction, sent with the whole
    conversation after a turn)."""
    messages = _messages(body)
    if isinstance(body.get("response_format"), Mapping):
        return True
    if not tool_names(body):
        first = messages[0] if messages else {}
        system = "".join(texts(first)) if first.get("role") == "system" else ""
        return not system.startswith(TOOLLESS_TURN_PROMPTS)
    last = messages[-1] if messages else {}
    return last.get("role") == "user" and any(
        t.lstrip().startswith(SIDE_PROMPTS) for t in texts(last)
    )


def session_of(headers: Mapping[str, str]) -> str:
    """The conversation a request belongs to, where the client names it in a header."""
    for name in ("x-session-id", "session-id", "session_id"):
        if headers.get(name):
            return headers[name]
    return ""


# -- answering ---------------------------------------------------------------------------


def _pieces(text: str) -> Iterator[str]:
    for start in range(0, len(text), CHUNK_CHARS):
        yield text[start : start + CHUNK_CHARS]


def finish_reason(blocks: Sequence[Block]) -> str:
    """`tool_calls` when the reply calls a tool, else `stop`."""
    return "tool_calls" if any(isinstance(b, ToolUseBlock) for b in blocks) else "stop"


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    """The `usage` object: tokens only (the API states no price)."""
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def _tool_call(index: int, block: ToolUseBlock) -> dict[str, object]:
    return {
        "index": index,
        "id": new_id("call_"),
        "type": "function",
        "function": {"name": block.name, "arguments": json.dumps(dict(block.input))},
    }


def chunks(blocks: Sequence[Block], model: str, prompt_tokens: int) -> list[dict[str, object]]:
    """The `chat.completion.chunk` objects of one streamed reply, in order."""
    head: dict[str, object] = {"id": new_id("chatcmpl-"), "object": "chat.completion.chunk"}
    head |= {"created": int(time.time()), "model": model}

    def chunk(delta: Mapping[str, object], finish: str | None = None) -> dict[str, object]:
        choice = {"index": 0, "delta": dict(delta), "finish_reason": finish}
        return {**head, "choices": [choice]}

    out = [chunk({"role": "assistant", "content": ""})]
    calls = 0
    for block in blocks:
        if isinstance(block, TextBlock):
            out += [chunk({"content": piece}) for piece in _pieces(block.text)]
            continue
        arguments = json.dumps(dict(block.input))
        first = {**_tool_call(calls, block), "function": {"name": block.name, "arguments": ""}}
        out.append(chunk({"tool_calls": [first]}))
        out += [
            chunk({"tool_calls": [{"index": calls, "function": {"arguments": piece}}]})
            for piece in _pieces(arguments)
        ]
        calls += 1
    out.append(chunk({}, finish_reason(blocks)))
    completion = max(1, estimate_tokens(out) // 4)
    out.append({**head, "choices": [], "usage": usage(prompt_tokens, completion)})
    return out


def completion(blocks: Sequence[Block], model: str, prompt_tokens: int) -> dict[str, object]:
    """The non-streamed reply: one `chat.completion` object."""
    text = "".join(b.text for b in blocks if isinstance(b, TextBlock))
    tools = [b for b in blocks if isinstance(b, ToolUseBlock)]
    calls = [_tool_call(i, b) for i, b in enumerate(tools)]
    message: dict[str, object] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in calls]
    choice = {"index": 0, "message": message, "finish_reason": finish_reason(blocks)}
    return {
        "id": new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [choice],
        "usage": usage(prompt_tokens, max(1, estimate_tokens(message))),
    }


def encode_sse(objects: Sequence[Mapping[str, object]]) -> bytes:
    """Frame each object as a `data:` line, then the closing `data: [DONE]`."""
    lines = [f"data: {json.dumps(o, ensure_ascii=False)}\n\n" for o in objects]
    return ("".join(lines) + "data: [DONE]\n\n").encode()


class ChatWire:
    """`POST …/chat/completions`, streamed (SSE) or not."""

    name = "chat"

    def matches(self, path: str) -> bool:
        return matches(path)

    def read(
        self, path: str, body: Mapping[str, Any], headers: Mapping[str, str], marker: str
    ) -> Reading:
        # A side request may quote the typed prompt: checked first, so that a marker typed
        # into the agent does not make it a supervisor's request.
        if any(marker in text for text in user_texts(body)) and not tool_names(body):
            kind = RequestKind.SUPERVISOR
        elif is_side_request(body):
            kind = RequestKind.TITLE
        elif any(marker in text for text in user_texts(body)):
            kind = RequestKind.SUPERVISOR
        else:
            kind = RequestKind.AGENT
        return Reading(
            kind=kind,
            human_text=human_text(body),
            step_index=step_index(body),
            turn=last_human_index(body) or 0,
            session_id=session_of(headers),
            json_fields=tuple(required_string_fields(body)),
        )

    def reply(self, step: Step, path: str, body: Mapping[str, Any], reading: Reading) -> Reply:
        model = str(body.get("model") or "fake-model")
        tokens = estimate_tokens(body.get("messages", []))
        if body.get("stream"):
            data = encode_sse(chunks(step.blocks, model, tokens))
            return Reply(200, data, "text/event-stream")
        return Reply(200, json.dumps(completion(step.blocks, model, tokens)).encode())

    def error(self, status: int, message: str | None = None) -> Reply:
        data = json.dumps(error_json(status, message)).encode()
        headers = {"retry-after": "1"} if status == 429 else {}
        return Reply(status, data, "application/json", headers)
