"""The Gemini wire of the fake model, on request shapes recorded from Gemini CLI 0.61.0
(fixtures/gemini/requests.json: system instructions and tool declarations trimmed)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from ptysup.testing import wires
from ptysup.testing.conversation import RequestKind
from ptysup.testing.fakemodel import FakeModel
from ptysup.testing.scenario import Scenario
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
        (
            "POST",
            "/v1beta/models/gemini-3.5-flash-lite:generateContent",
            ("gemini-3.5-flash-lite", False),
        ),
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


# -- the wire in the fake model ------------------------------------------------------------

MARK = "<<SUPERVISOR>>"
STREAM = "/v1beta/models/gemini-3.8-flash:streamGenerateContent"


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("routing", RequestKind.TITLE),
        ("summary", RequestKind.TITLE),
        ("first_turn", RequestKind.AGENT),
        ("answered", RequestKind.AGENT),
    ],
)
def test_recorded_requests_are_read_as_turns_or_side_requests(name: str, kind: RequestKind) -> None:
    path = RECORDED[name]["path"].split("?")[0]
    found = wires.find(path)
    assert isinstance(found, gemini.GeminiWire)
    assert found.read(path, RECORDED[name]["body"], {}, MARK).kind is kind


def test_a_prompt_with_the_marker_is_the_supervisors_but_its_routing_call_is_not() -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": f"{MARK}\njudge this"}]}]}
    wire = gemini.GeminiWire()
    assert wire.read(STREAM, body, {}, MARK).kind is RequestKind.SUPERVISOR
    routing = "/v1beta/models/gemini-3.5-flash-lite:generateContent"
    assert wire.read(routing, body, {}, MARK).kind is RequestKind.TITLE


def _post(url: str, path: str, body: object) -> tuple[int, str, bytes]:
    request = urllib.request.Request(
        url + path, json.dumps(body).encode(), {"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers["content-type"], response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["content-type"], exc.read()


def test_the_fake_model_plays_a_tool_turn_and_a_side_request_on_this_wire(tmp_path: Path) -> None:
    scenario = Scenario.from_dict(
        {
            "title": "A title",
            "agent": [
                {
                    "match": "be slow",
                    "steps": [
                        {
                            "tool": "write_file",
                            "input": {"file_path": "{workdir}/a", "content": "x"},
                        },
                        {"text": "Done."},
                    ],
                },
                {"match": "fail", "error": 503},
            ],
        }
    )
    with FakeModel(scenario, tmp_path) as fm:
        first = RECORDED["first_turn"]["body"]
        status, kind, data = _post(fm.url, STREAM + "?alt=sse", first)
        assert (status, kind) == (200, "text/event-stream")
        (call,) = [
            p["functionCall"]
            for c in _sse(data)
            for p in c["candidates"][0]["content"]["parts"]
            if "functionCall" in p
        ]
        assert call == {
            "name": "write_file",
            "args": {"file_path": f"{tmp_path.resolve()}/a", "content": "x"},
        }
        second = dict(
            first,
            contents=[
                *first["contents"],
                {"role": "model", "parts": [{"functionCall": call}]},
                {
                    "role": "user",
                    "parts": [
                        {"functionResponse": {"name": "write_file", "response": {"output": "ok"}}}
                    ],
                },
            ],
        )
        _, _, data = _post(fm.url, STREAM + "?alt=sse", second)
        assert (
            "".join(
                p.get("text", "")
                for c in _sse(data)
                for p in c["candidates"][0]["content"]["parts"]
            )
            == "Done."
        )
        routing = RECORDED["routing"]
        status, _, data = _post(fm.url, routing["path"], routing["body"])
        text = json.loads(data)["candidates"][0]["content"]["parts"][0]["text"]
        assert (status, json.loads(text)["complexity_score"]) == (200, 1)
        summary = RECORDED["summary"]
        _, _, data = _post(fm.url, summary["path"], summary["body"])
        assert json.loads(data)["candidates"][0]["content"]["parts"] == [{"text": "A title"}]
        failing = {"contents": [{"role": "user", "parts": [{"text": "fail now"}]}]}
        status, _, data = _post(fm.url, STREAM + "?alt=sse", failing)
        assert (status, json.loads(data)["error"]["status"]) == (503, "UNAVAILABLE")
        kinds = [(r.kind, r.step_index) for r in fm.requests]
        assert kinds == [
            (RequestKind.AGENT, 0),
            (RequestKind.AGENT, 1),
            (RequestKind.TITLE, 0),
            (RequestKind.TITLE, 0),
            (RequestKind.AGENT, 0),
        ]
