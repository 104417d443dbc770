"""The OpenAI Responses wire as Codex CLI 0.169 speaks it: requests recorded from the real
binary (fixtures/codex/responses_requests.json: a turn that runs a command, its title
request, and the round trip with the command's output), and the SSE replies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ptysup.testing import wires
from ptysup.testing.conversation import RequestKind
from ptysup.testing.scenario import Step
from ptysup.testing.wire import TextBlock, ToolUseBlock
from ptysup.testing.wires import responses

MARK = "<<SUPERVISOR>>"
WIRE = responses.ResponsesWire()

RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "codex" / "responses_requests.json"


@pytest.fixture(scope="module")
def recorded() -> list[dict[str, Any]]:
    requests: list[dict[str, Any]] = json.loads(RECORDED.read_text(encoding="utf-8"))
    return requests


def test_a_turn_reads_as_the_persons_words_at_step_0(recorded: list[dict[str, Any]]) -> None:
    turn = recorded[0]
    body, headers = turn["body"], turn["headers"]
    assert responses.human_text(body) == "please run it"  # not <environment_context>
    assert responses.step_index(body) == 0
    assert not responses.is_title_request(body, headers)
    assert (
        responses.session_of(headers) == json.loads(headers["x-codex-turn-metadata"])["session_id"]
    )


def test_the_command_round_trip_is_step_1_of_the_same_turn(
    recorded: list[dict[str, Any]],
) -> None:
    body = recorded[2]["body"]
    kinds = [item.get("type") for item in body["input"][-2:]]
    assert kinds == ["function_call", "function_call_output"]
    assert responses.human_text(body) == "please run it"
    assert responses.step_index(body) == 1
    assert responses.last_human_index(body) == responses.last_human_index(recorded[0]["body"])


def test_the_title_request_is_known_and_read_with_its_schema_fields(
    recorded: list[dict[str, Any]],
) -> None:
    title = recorded[1]
    assert responses.is_title_request(title["body"], title["headers"])
    assert title["body"]["tools"] == []
    reading = WIRE.read("/v1/responses", title["body"], title["headers"], MARK)
    assert reading.kind is RequestKind.TITLE and reading.json_fields == ("title",)
    # Without the metadata header, the empty tool list and the prompt still tell it.
    assert responses.is_title_request(title["body"], {})
    assert not responses.is_title_request(recorded[0]["body"], {})


def test_requests_read_as_agent_or_supervisor_by_the_marker(
    recorded: list[dict[str, Any]],
) -> None:
    turn = recorded[2]
    reading = WIRE.read("/v1/responses", turn["body"], turn["headers"], MARK)
    assert (reading.kind, reading.human_text, reading.step_index) == (
        RequestKind.AGENT,
        "please run it",
        1,
    )
    assert reading.turn == responses.last_human_index(turn["body"])
    exec_prompt = {"input": [{"type": "message", "role": "user", "content": f"{MARK}\njudge"}]}
    supervisor = WIRE.read("/v1/responses", exec_prompt, {}, MARK)
    assert supervisor.kind is RequestKind.SUPERVISOR and supervisor.human_text == f"{MARK}\njudge"


def test_later_rounds_count_each_run_of_output_items_once() -> None:
    def user(text: str) -> dict[str, Any]:
        content = [{"type": "input_text", "text": text}]
        return {"type": "message", "role": "user", "content": content}

    call: dict[str, Any] = {
        "type": "function_call",
        "name": "exec_command",
        "arguments": "{}",
        "call_id": "c",
    }
    output = {"type": "function_call_output", "call_id": "c", "output": "ok"}
    reasoning = {"type": "reasoning", "summary": []}
    body: dict[str, Any] = {
        "input": [user("<environment_context>x</environment_context>"), user("go")]
    }
    assert responses.step_index(body) == 0
    body["input"] += [reasoning, call, output, call, output]
    assert responses.step_index(body) == 2
    assert responses.human_text(body) == "go"
    assert responses.user_texts(body)[0].startswith("<environment_context>")


def _parse_sse(data: bytes) -> list[dict[str, Any]]:
    events = []
    for frame in data.decode().split("\n\n"):
        if not frame:
            continue
        name_line, data_line = frame.split("\n")
        event = json.loads(data_line.removeprefix("data: "))
        assert name_line == f"event: {event['type']}"
        events.append(event)
    return events


def test_a_text_reply_streams_deltas_that_add_up_to_the_message() -> None:
    text = "Hello from the fake model, long enough to come in several pieces." * 2
    events = _parse_sse(responses.encode_sse(responses.stream_events([TextBlock(text)], 10)))
    types = [e["type"] for e in events]
    assert types[0] == "response.created" and types[-1] == "response.completed"
    deltas = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
    assert len(deltas) > 1 and "".join(deltas) == text
    (done,) = [e for e in events if e["type"] == "response.output_item.done"]
    assert done["item"]["content"][0]["text"] == text
    usage = events[-1]["response"]["usage"]
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


def test_a_tool_reply_is_a_function_call_with_json_arguments() -> None:
    block = ToolUseBlock("exec_command", {"cmd": "echo hi > out.txt"})
    events: list[Any] = responses.stream_events([TextBlock("Running it."), block], 10)
    calls = [
        e["item"]
        for e in events
        if e["type"] == "response.output_item.done" and e["item"]["type"] == "function_call"
    ]
    assert len(calls) == 1
    assert calls[0]["name"] == "exec_command" and calls[0]["call_id"].startswith("call_")
    assert json.loads(calls[0]["arguments"]) == {"cmd": "echo hi > out.txt"}


@pytest.mark.parametrize("status", [429, 500])
def test_errors_have_openais_shape(status: int) -> None:
    error = responses.error_json(status)["error"]
    assert isinstance(error, dict)
    assert error["code"] == responses.ERROR_CODES[status] and "fake model" in error["message"]


def test_a_post_to_responses_finds_this_wire() -> None:
    assert isinstance(wires.find("/v1/responses"), responses.ResponsesWire)
    assert responses.matches("/openai/v1/responses/")
    assert wires.find("/v1/messages") is not WIRE and not WIRE.matches("/v1/messages")


def test_a_scripted_step_and_an_error_are_replies_of_this_api() -> None:
    step = Step(blocks=(TextBlock("done"),))
    reply = WIRE.reply(step, "/v1/responses", {"input": []}, WIRE.read("/", {}, {}, MARK))
    assert reply.status == 200 and reply.content_type == "text/event-stream"
    assert _parse_sse(reply.data)[-1]["type"] == "response.completed"
    error = WIRE.error(429)
    assert error.status == 429 and error.headers == {"retry-after": "1"}
    assert json.loads(error.data)["error"]["code"] == "rate_limit_exceeded"
