"""The Chat Completions wire of the fake model, on request shapes recorded from Qwen Code
0.24.4 (fixtures/chat/requests.json: system prompts, reminders and tool schemas trimmed)."""

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
from ptysup.testing.wires import chat

RECORDED: dict[str, dict[str, Any]] = json.loads(
    (Path(__file__).resolve().parents[2] / "fixtures" / "chat" / "requests.json").read_text()
)
MARK = "You are the supervisor of an AI coding agent (ptysup)."
PATH = "/v1/chat/completions"


def _sse(data: bytes) -> list[Any]:
    frames = [f for f in data.decode().split("\n\n") if f]
    assert all(f.startswith("data: ") for f in frames), frames
    assert frames[-1] == "data: [DONE]"
    return [json.loads(f[len("data: ") :]) for f in frames[:-1]]


@pytest.mark.parametrize(
    ("path", "found"),
    [("/v1/chat/completions", True), ("/api/v1/chat/completions/", True), ("/v1/responses", False)],
)
def test_only_chat_completions_paths_are_this_wires(path: str, found: bool) -> None:
    assert isinstance(wires.find(path), chat.ChatWire) is found


@pytest.mark.parametrize(
    ("name", "kind", "human", "step"),
    [
        ("first_turn", RequestKind.AGENT, "say hello", 0),
        ("answered", RequestKind.AGENT, "say hello", 1),
        ("suggestion", RequestKind.TITLE, None, None),
        ("memory", RequestKind.TITLE, None, None),
        ("supervisor", RequestKind.SUPERVISOR, None, 0),
    ],
)
def test_recorded_requests_are_read_as_turns_side_requests_or_the_supervisors(
    name: str, kind: RequestKind, human: str | None, step: int | None
) -> None:
    body = RECORDED[name]["body"]
    reading = chat.ChatWire().read(PATH, body, {}, MARK)
    assert reading.kind is kind
    if human is not None:  # the skills reminder before the typed words is left out
        assert body["messages"][1]["content"][0]["text"].startswith("<system-reminder>")
        assert reading.human_text == human
    if step is not None:
        assert reading.step_index == step


def test_each_assistant_message_after_the_prompt_is_one_step() -> None:
    body = {
        "tools": [{"type": "function", "function": {"name": "read_file"}}],
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "a"}]},
            {"role": "tool", "tool_call_id": "a", "content": "x"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "b"}]},
            {"role": "tool", "tool_call_id": "b", "content": "y"},
        ],
    }
    assert chat.step_index(body) == 2
    assert chat.human_text(body) == "go"


def test_a_json_schema_request_is_a_side_request_that_names_its_fields() -> None:
    schema = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
    body = {
        "messages": [{"role": "user", "content": "name this"}],
        "response_format": {"type": "json_schema", "json_schema": {"schema": schema}},
    }
    reading = chat.ChatWire().read(PATH, body, {}, MARK)
    assert (reading.kind, reading.json_fields) == (RequestKind.TITLE, ("title",))


def test_a_streamed_tool_call_reply_has_deltas_a_finish_reason_usage_and_done() -> None:
    blocks = (TextBlock("Writing it."), ToolUseBlock("write_file", {"file_path": "a", "x": "y"}))
    reply = chat.encode_sse(chat.chunks(blocks, "fake-model", 100))
    objects = _sse(reply)
    deltas = [o["choices"][0]["delta"] for o in objects if o["choices"]]
    assert "".join(d.get("content", "") for d in deltas) == "Writing it."
    calls = [c for d in deltas for c in d.get("tool_calls", [])]
    assert calls[0]["function"]["name"] == "write_file" and calls[0]["id"].startswith("call_")
    arguments = "".join(c["function"]["arguments"] for c in calls)
    assert json.loads(arguments) == {"file_path": "a", "x": "y"}
    assert [o["choices"][0]["finish_reason"] for o in objects if o["choices"]][-1] == "tool_calls"
    last = objects[-1]
    assert last["choices"] == [] and last["usage"]["prompt_tokens"] == 100
    assert last["usage"]["total_tokens"] == 100 + last["usage"]["completion_tokens"]


def test_a_plain_reply_unstreamed_is_one_completion() -> None:
    done: dict[str, Any] = chat.completion((TextBlock("Hi."),), "m", 5)
    (choice,) = done["choices"]
    assert choice["message"] == {"role": "assistant", "content": "Hi."}
    assert choice["finish_reason"] == "stop"


def test_errors_have_openais_shape() -> None:
    reply = chat.ChatWire().error(429)
    error = json.loads(reply.data)["error"]
    assert (reply.status, error["code"], reply.headers["retry-after"]) == (
        429,
        "rate_limit_exceeded",
        "1",
    )
    assert error["message"] and error["type"] == "invalid_request_error"


def _post(url: str, body: object) -> tuple[int, bytes]:
    request = urllib.request.Request(
        url + PATH, json.dumps(body).encode(), {"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_the_fake_model_plays_a_tool_round_trip_and_a_side_request(tmp_path: Path) -> None:
    scenario = Scenario.from_dict(
        {
            "title": "A suggestion",
            "agent": [
                {"steps": [{"tool": "read_file", "input": {"path": "a"}}, {"text": "Read it."}]}
            ],
        }
    )
    with FakeModel(scenario, tmp_path) as model:
        first = dict(RECORDED["first_turn"]["body"])
        status, data = _post(model.url, first)
        assert status == 200
        deltas = [o["choices"][0]["delta"] for o in _sse(data) if o["choices"]]
        (call,) = [c for d in deltas for c in d.get("tool_calls", []) if "id" in c]
        second = {
            **first,
            "messages": [
                *first["messages"],
                {"role": "assistant", "content": None, "tool_calls": [{"id": call["id"]}]},
                {"role": "tool", "tool_call_id": call["id"], "content": "contents"},
            ],
        }
        _, data = _post(model.url, second)
        text = "".join(
            o["choices"][0]["delta"].get("content", "") for o in _sse(data) if o["choices"]
        )
        assert text == "Read it."
        _, data = _post(model.url, RECORDED["suggestion"]["body"])
        text = "".join(
            o["choices"][0]["delta"].get("content", "") for o in _sse(data) if o["choices"]
        )
        assert text == "A suggestion"
        kinds = [r.kind for r in model.requests]
        assert kinds == [RequestKind.AGENT, RequestKind.AGENT, RequestKind.TITLE]


# aider 0.86.2's requests, as recorded (its prompts cut short): a turn offers no tools (its
# edits are text) and ends the person's words with its edit format's rules; the commit
# message is a side request with a system prompt of its own.
AIDER_SYSTEM = "Act as an expert software developer.\nAlways use best practices when coding.\n"
AIDER_RULES = "\n\n# *SEARCH/REPLACE block* Rules:\n\nEvery *SEARCH/REPLACE block* must use"
AIDER_COMMIT = (
    "You are an expert software engineer that generates concise, one-line Git commit "
    "messages based on the provided diffs.\n"
)


def test_an_aider_turn_offers_no_tools_yet_is_the_agents_and_its_rules_are_not_the_persons() -> (
    None
):
    body = {
        "model": "fake-model",
        "stream": True,
        "temperature": 0,
        "messages": [
            {"role": "system", "content": AIDER_SYSTEM},
            {"role": "user", "content": "Change get_factorial() to use math.factorial"},
            {"role": "assistant", "content": "To make this change ..."},
            {"role": "user", "content": "say hello\nin two lines" + AIDER_RULES},
        ],
    }
    reading = chat.ChatWire().read(PATH, body, {}, MARK)
    assert reading.kind is RequestKind.AGENT
    assert reading.human_text == "say hello\nin two lines"
    assert reading.step_index == 0


def test_aiders_commit_message_request_is_a_side_request() -> None:
    body = {
        "model": "fake-model",
        "stream": False,
        "messages": [
            {"role": "system", "content": AIDER_COMMIT},
            {"role": "user", "content": "# Diffs:\n--- a/greet.txt\n+++ b/greet.txt\n"},
        ],
    }
    assert chat.ChatWire().read(PATH, body, {}, MARK).kind is RequestKind.TITLE


OPENCODE: dict[str, dict[str, Any]] = json.loads(
    (
        Path(__file__).resolve().parents[2] / "fixtures" / "chat" / "opencode_requests.json"
    ).read_text()
)


@pytest.mark.parametrize(
    ("name", "kind"), [("title", RequestKind.TITLE), ("first_turn", RequestKind.AGENT)]
)
def test_opencodes_title_request_is_a_side_request_and_its_prompt_a_turn(
    name: str, kind: RequestKind
) -> None:
    # Recorded from opencode 1.18.33: its title generator quotes the typed words in a user
    # message of its own, with no tools; its turn offers its tools.
    reading = chat.ChatWire().read(PATH, OPENCODE[name]["body"], {}, MARK)
    assert reading.kind is kind
    if kind is RequestKind.AGENT:
        assert (reading.human_text, reading.step_index) == ("say hello", 0)
