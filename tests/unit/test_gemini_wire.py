"""The Gemini wire of the fake model, on request shapes recorded from Gemini CLI 0.61.0
(fixtures/gemini/requests.json: system instructions and tool declarations trimmed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ptysup.testing.wire import TextBlock, ToolUseBlock
from ptysup.testing.wires import gemini

RECORDED: dict[str, dict[str, Any]] = json.loads(
    (Path(__file__).resolve().parents[2] / "fixtures" / "gemini" / "requests.json").read_text()
)


def _sse(data: bytes) -> list[dict[str, Any]]:
    frames = [f for f in data.decode().split("\r\n\r\n") if f]
    assert all(f.startswith("data: ") for f in frames), frames
    return [json.loads(f[len("data: ") :]) for f in frames]


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        (
            "POST",
            "/v1beta/models/gemini-3.8-flash:streamGenerateContent?alt=sse",
            ("gemini-3.8-flash", True),
        ),
        ("POST", "/v1beta/models/gemini-3.5-flash-lite:generateContent", ("gemini-3.5-flash-lite", False)),
        ("GET", "/v1beta/models/gemini-3.8-flash:streamGenerateContent", None),
        ("POST", "/v1/messages", None),
        ("POST", "/v1beta/models/x:countTokens", None),
    ],
)
def test_only_the_two_model_calls_are_routed(
    method: str, path: str, expected: tuple[str, bool] | None
) -> None:
    assert gemini.route(method, path) == expected


def test_the_persons_text_leaves_out_the_session_context() -> None:
    body = RECORDED["first_turn"]["body"]
    assert body["contents"][0]["parts"][0]["text"].startswith("<session_context>")
    assert gemini.human_text(body) == "be slow"
    assert gemini.step_index(body) == 0


def test_a_function_response_round_trip_is_the_next_step_of_the_same_turn() -> None:
    body = RECORDED["answered"]["body"]
    assert gemini.human_text(body) == "ask me"  # not the functionResponse's user content
    assert gemini.step_index(body) == 1
    (response,) = gemini.function_responses(body)[-1:]
    assert response["name"] == "ask_user"
    assert json.loads(response["response"]["output"]) == {"answers": {"0": "Blue"}}


def test_a_new_prompt_after_a_finished_turn_starts_again_at_step_zero() -> None:
    body = RECORDED["shell"]["body"]
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    assert gemini.human_text(body) == "run shell"
    assert gemini.step_index(body) == 0


def test_the_routing_call_gets_a_json_value_of_its_schema() -> None:
    body = RECORDED["routing"]["body"]
    reply = gemini.structured_json(body, "gemini-3.5-flash-lite", "Fake session")
    assert reply is not None
    text = reply["candidates"][0]["content"]["parts"][0]["text"]  # type: ignore[index]
    value = json.loads(text)
    # Gemini's schema types are upper case; the score is the low end (the plain model).
    assert value == {"complexity_reasoning": "Fake session", "complexity_score": 1}
    assert reply["candidates"][0]["finishReason"] == "STOP"  # type: ignore[index]


def test_a_request_without_a_schema_gets_no_structured_reply() -> None:
    assert gemini.structured_json(RECORDED["summary"]["body"], "m", "t") is None
    assert gemini.structured_json(RECORDED["first_turn"]["body"], "m", "t") is None


def test_schema_values_follow_enums_arrays_and_minimums() -> None:
    schema = {
        "type": "object",
        "properties": {
            "next_speaker": {"type": "string", "enum": ["user", "model"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "score": {"type": "number", "minimum": 5},
            "done": {"type": "BOOLEAN"},
        },
    }
    assert gemini.value_for(schema, "x") == {
        "next_speaker": "user",
        "tags": ["x"],
        "score": 5,
        "done": False,
    }


def test_a_streamed_reply_is_text_pieces_then_the_call_and_one_stop() -> None:
    text = "I will write the file now, as the task asks for it to exist."
    call = ToolUseBlock("write_file", {"file_path": "/w/a.txt", "content": "hi"})
    chunks = _sse(gemini.encode_sse(gemini.stream_chunks([TextBlock(text), call], "m", 50)))
    parts = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]
    assert "".join(p.get("text", "") for p in parts) == text
    assert len([p for p in parts if "text" in p]) > 1  # in pieces, as the real API streams
    assert parts[-1]["functionCall"] == {"name": "write_file", "args": dict(call.input)}
    finishes = [c["candidates"][0].get("finishReason") for c in chunks]
    assert finishes == [None] * (len(chunks) - 1) + ["STOP"]
    usage = chunks[-1]["usageMetadata"]
    assert usage["promptTokenCount"] == 50
    assert usage["totalTokenCount"] == 50 + usage["candidatesTokenCount"]


def test_an_empty_reply_still_ends_its_stream() -> None:
    chunks = _sse(gemini.encode_sse(gemini.stream_chunks([], "m", 1)))
    assert [c["candidates"][0].get("finishReason") for c in chunks] == ["STOP"]


def test_errors_have_googles_shape() -> None:
    assert gemini.error_json(429) == {
        "error": {
            "code": 429,
            "message": gemini.ERROR_MESSAGES[429],
            "status": "RESOURCE_EXHAUSTED",
        }
    }
    assert gemini.error_json(418, "teapot")["error"] == {
        "code": 418,
        "message": "teapot",
        "status": "UNKNOWN",
    }
