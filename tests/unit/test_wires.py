"""The fake model's wires: a POST finds the API it speaks, and a request is read into who
asks and where in a turn it is."""

from __future__ import annotations

from ptysup.testing import wires
from ptysup.testing.conversation import RequestKind
from ptysup.testing.wires.anthropic import AnthropicWire

MARK = "<<SUPERVISOR>>"


def test_each_path_finds_its_wire_and_no_other() -> None:
    assert isinstance(wires.find("/v1/messages"), AnthropicWire)
    assert isinstance(wires.find("/v1/messages/count_tokens"), AnthropicWire)
    assert wires.find("/v1/unknown") is None
    names = [w.name for w in wires.WIRES]
    assert len(names) == len(set(names))


def test_an_anthropic_request_is_read_as_a_turn_its_step_and_its_session() -> None:
    body = {
        "tools": [{"name": "Bash"}],
        "messages": [
            {"role": "user", "content": "fix it"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Bash"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]},
        ],
    }
    reading = AnthropicWire().read("/v1/messages", body, {"x-claude-code-session-id": "s1"}, MARK)
    assert (reading.kind, reading.human_text, reading.step_index, reading.turn) == (
        RequestKind.AGENT,
        "fix it",
        1,
        0,
    )
    assert reading.session_id == "s1"
    supervisor = {"messages": [{"role": "user", "content": f"{MARK}\njudge"}]}
    assert AnthropicWire().read("/v1/messages", supervisor, {}, MARK).kind is RequestKind.SUPERVISOR


def test_errors_are_the_apis_own_with_a_retry_hint_for_429() -> None:
    reply = AnthropicWire().error(429)
    assert reply.status == 429 and reply.headers == {"retry-after": "1"}
    assert b"rate_limit_error" in reply.data
