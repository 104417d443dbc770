"""The fake Anthropic Messages API, driven by a plain HTTP client."""

from __future__ import annotations

import http.client
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from ptysup.supervisor.prompt import SUPERVISOR_MARKER
from ptysup.testing import conversation
from ptysup.testing.conversation import RequestKind
from ptysup.testing.fakemodel import FakeModel
from ptysup.testing.scenario import Scenario, ScenarioError

SCENARIOS = Path(__file__).resolve().parents[2] / "ptysup" / "testing" / "scenarios"
TOOLS = [{"name": "Write", "input_schema": {"type": "object"}}]
REMINDER = "<system-reminder>\nToday's date is 2026-11-22.\n</system-reminder>\n\n"


@dataclass(frozen=True)
class Response:
    status: int
    headers: Mapping[str, str]
    data: bytes

    def json(self) -> Any:
        return json.loads(self.data)

    def events(self) -> list[tuple[str, dict[str, Any]]]:
        """Parse an SSE body, checking the `event:`/`data:`/blank-line framing."""
        assert self.headers["content-type"] == "text/event-stream"
        text = self.data.decode()
        assert text.endswith("\n\n")
        events = []
        for frame in text[:-2].split("\n\n"):
            event_line, data_line = frame.split("\n")
            assert event_line.startswith("event: ") and data_line.startswith("data: ")
            name, data = event_line[len("event: ") :], json.loads(data_line[len("data: ") :])
            assert data["type"] == name
            events.append((name, data))
        return events


def request(url: str, method: str, path: str, body: object = None) -> Response:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    try:
        payload = None if body is None else json.dumps(body).encode()
        headers = {"content-type": "application/json"} if payload else {}
        connection.request(method, path, body=payload, headers=headers)
        reply = connection.getresponse()
        return Response(reply.status, {k.lower(): v for k, v in reply.getheaders()}, reply.read())
    finally:
        connection.close()


def messages_body(
    *messages: dict[str, Any], stream: bool = True, tools: bool = True
) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "claude-test", "max_tokens": 100, "messages": list(messages)}
    if stream:
        body["stream"] = True
    if tools:
        body["tools"] = TOOLS
    return body


def user(text: str) -> dict[str, Any]:
    """A human message as Claude Code sends it: a system reminder, then the prompt."""
    return {
        "role": "user",
        "content": [{"type": "text", "text": REMINDER}, {"type": "text", "text": text}],
    }


def assistant_said(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def tool_round_trip(tool_use: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": [tool_use]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": tool_use["id"], "content": "ok"}],
        },
    ]


def post(
    fm: FakeModel, *messages: dict[str, Any], stream: bool = True, tools: bool = True
) -> Response:
    body = messages_body(*messages, stream=stream, tools=tools)
    return request(fm.url, "POST", "/v1/messages?beta=true", body)


def text_of(events: list[tuple[str, dict[str, Any]]]) -> str:
    return "".join(
        d["delta"]["text"]
        for n, d in events
        if n == "content_block_delta" and d["delta"]["type"] == "text_delta"
    )


def supervisor_prompt(extra: str = "") -> str:
    return f"{SUPERVISOR_MARKER}\nTask: implement feature X\n{extra}"


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def serve(workdir: Path, tmp_path: Path) -> Iterator[Any]:
    models: list[FakeModel] = []

    def start(scenario: Mapping[str, Any] | str) -> FakeModel:
        parsed = (
            Scenario.from_yaml(scenario)
            if isinstance(scenario, str)
            else Scenario.from_dict(scenario)
        )
        model = FakeModel(parsed, workdir, log_path=tmp_path / "log.jsonl").start()
        models.append(model)
        return model

    yield start
    for model in models:
        model.close()


# -- wire format -------------------------------------------------------------------------


def test_text_reply_is_framed_as_anthropic_sse(serve: Any) -> None:
    fm = serve(
        {"agent": [{"reply": "Hello there, this reply is long enough to be split into pieces."}]}
    )

    events = post(fm, user("hi")).events()

    names = [n for n, _ in events]
    assert names[0] == "message_start"
    assert names[1] == "content_block_start"
    assert set(names[2:-3]) == {"content_block_delta"} and len(names[2:-3]) > 1
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    start = events[0][1]["message"]
    assert (
        start["role"] == "assistant" and start["content"] == [] and start["model"] == "claude-test"
    )
    assert start["usage"]["input_tokens"] > 0
    assert events[1][1]["content_block"] == {"type": "text", "text": ""}
    assert text_of(events) == "Hello there, this reply is long enough to be split into pieces."
    assert events[-2][1]["delta"]["stop_reason"] == "end_turn"
    assert events[-2][1]["usage"]["output_tokens"] > 0


def test_tool_use_input_is_streamed_in_json_pieces(serve: Any, workdir: Path) -> None:
    content = "def word_count(text):\n    return len(text.split())\n" * 3
    fm = serve(
        {
            "agent": [
                {
                    "match": "write it",
                    "steps": [
                        {
                            "text": "Writing.",
                            "tool": "Write",
                            "input": {"file_path": "{workdir}/ws.py", "content": content},
                        },
                        {"text": "Done."},
                    ],
                }
            ]
        }
    )

    events = post(fm, user("please write it")).events()

    starts = [d["content_block"] for n, d in events if n == "content_block_start"]
    assert starts[0] == {"type": "text", "text": ""}
    assert starts[1]["type"] == "tool_use" and starts[1]["name"] == "Write"
    assert starts[1]["input"] == {} and starts[1]["id"].startswith("toolu_")
    pieces = [
        d["delta"]["partial_json"]
        for n, d in events
        if n == "content_block_delta" and d["delta"]["type"] == "input_json_delta"
    ]
    assert len(pieces) > 1
    assert json.loads("".join(pieces)) == {
        "file_path": f"{workdir.resolve()}/ws.py",
        "content": content,
    }
    assert [d["index"] for n, d in events if n == "content_block_stop"] == [0, 1]
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"

    tool_use = {"type": "tool_use", "id": starts[1]["id"], "name": "Write", "input": {}}
    second = post(fm, user("please write it"), *tool_round_trip(tool_use)).events()
    assert text_of(second) == "Done."
    assert [r.step_index for r in fm.requests] == [0, 1]


def test_plain_json_reply_when_not_streaming(serve: Any) -> None:
    fm = serve(
        {"agent": [{"steps": [{"text": "Hi.", "tool": "Bash", "input": {"command": "ls"}}]}]}
    )

    reply = post(fm, user("hi"), stream=False)

    assert reply.status == 200 and reply.headers["content-type"] == "application/json"
    message = reply.json()
    assert message["type"] == "message" and message["role"] == "assistant"
    assert message["content"][0] == {"type": "text", "text": "Hi."}
    assert message["content"][1]["input"] == {"command": "ls"}
    assert message["stop_reason"] == "tool_use"
    assert message["usage"]["input_tokens"] > 0


def test_count_tokens_head_and_unknown_paths(serve: Any) -> None:
    fm = serve({})

    counted = request(fm.url, "POST", "/v1/messages/count_tokens", messages_body(user("x" * 400)))
    assert counted.status == 200 and counted.json()["input_tokens"] >= 100
    assert request(fm.url, "HEAD", "/").status == 200
    for method, path in [("GET", "/v1/models"), ("POST", "/v1/complete")]:
        missing = request(fm.url, method, path, {} if method == "POST" else None)
        assert missing.status == 404
        assert missing.json()["type"] == "error"
        assert missing.json()["error"]["type"] == "not_found_error"
    assert [r.kind for r in fm.requests] == [RequestKind.COUNT_TOKENS]


@pytest.mark.parametrize(
    ("status", "error_type"),
    [(429, "rate_limit_error"), (500, "api_error"), (529, "overloaded_error")],
)
def test_injected_http_errors(serve: Any, status: int, error_type: str) -> None:
    fm = serve({"supervisor": [{"error": status}]})

    reply = post(fm, user(supervisor_prompt()))

    assert reply.status == status
    assert reply.json()["type"] == "error"
    assert reply.json()["error"]["type"] == error_type
    assert reply.json()["error"]["message"]
    assert ("retry-after" in reply.headers) == (status == 429)
    assert fm.requests[0].status == status


def test_delay_holds_the_reply_and_close_cuts_it_short(serve: Any) -> None:
    fm = serve(
        {"agent": [{"times": 1, "delay": 0.3, "reply": "late"}, {"delay": 60, "reply": "never"}]}
    )
    started = time.monotonic()
    assert text_of(post(fm, user("a")).events()) == "late"
    assert time.monotonic() - started >= 0.3

    parts = urlsplit(fm.url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    connection.request("POST", "/v1/messages", body=json.dumps(messages_body(user("b"))))
    fm.wait_for(lambda r: r.human_text == "b")
    started = time.monotonic()
    fm.close()
    assert time.monotonic() - started < 5
    with pytest.raises(http.client.RemoteDisconnected):
        connection.getresponse()
    connection.close()


# -- classification ------------------------------------------------------------------------


def test_requests_are_classified_and_recorded(serve: Any, tmp_path: Path) -> None:
    fm = serve(
        {"title": "Word count", "agent": [{"reply": "agent"}], "supervisor": [{"reply": "sup"}]}
    )
    title_body = messages_body(user("<session>\nhi\n</session>"), tools=False)
    title_body["output_config"] = {
        "format": {
            "type": "json_schema",
            "schema": {
                "type": "object",
                "properties": {"title": {"type": "string"}},
                "required": ["title"],
            },
        }
    }

    assert (
        text_of(
            post(
                fm,
                user("implement"),
            ).events()
        )
        == "agent"
    )
    assert text_of(post(fm, user(supervisor_prompt())).events()) == "sup"
    title = request(fm.url, "POST", "/v1/messages?beta=true", title_body).events()
    assert json.loads(text_of(title)) == {"title": "Word count"}
    assert text_of(post(fm, user("summarise"), tools=False).events()) == "Word count"

    kinds = [r.kind for r in fm.requests]
    assert kinds == [
        RequestKind.AGENT,
        RequestKind.SUPERVISOR,
        RequestKind.TITLE,
        RequestKind.TITLE,
    ]
    assert fm.requests[0].human_text == "implement"
    assert fm.requests[0].body["messages"][0]["content"][1]["text"] == "implement"
    assert fm.requests[1].rule == "supervisor[0]"
    logged = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert [e["kind"] for e in logged] == ["agent", "supervisor", "title", "title"]
    assert logged[0]["human_text"] == "implement" and logged[0]["body"]["model"] == "claude-test"


def test_human_text_and_step_index_follow_the_turn() -> None:
    tool_use = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}
    body = messages_body(
        user("first"),
        assistant_said("ok"),
        user("second"),
        *tool_round_trip(tool_use),
        {"role": "assistant", "content": [{"type": "text", "text": "more"}]},
        *tool_round_trip({**tool_use, "id": "t2"}),
    )
    assert conversation.human_text(body) == "second"
    assert conversation.step_index(body) == 2
    assert conversation.step_index(messages_body(user("x"))) == 0
    assert conversation.human_text({"messages": [{"role": "user", "content": "plain"}]}) == "plain"


# -- scenario rules on real state ----------------------------------------------------------


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
def test_supervisor_rules_read_the_real_workdir(serve: Any, workdir: Path) -> None:
    fm = serve(
        r"""
supervisor:
  - name: passing
    when:
      command_succeeds: test -f done.flag && grep -q ok result.txt
    reply: "[COMPLETE] done"
  - name: argv-fails
    when:
      file_contains: {path: result.txt, regex: "^ok$"}
      command_fails: [python3, -c, "import sys; sys.exit(1)"]
    reply: "[CONTINUE] flag missing"
  - name: started
    when:
      file_exists: result.txt
    reply: "[CONTINUE] result.txt is not ok"
  - name: prompt-regex
    regex: 'attempt \d+'
    reply: "[CONTINUE] numbered attempt"
  - name: default
    reply: "[CONTINUE] start"
"""
    )

    def ask(extra: str = "") -> str:
        return text_of(post(fm, user(supervisor_prompt(extra))).events())

    assert ask() == "[CONTINUE] start"
    assert ask("attempt 2") == "[CONTINUE] numbered attempt"
    (workdir / "result.txt").write_text("not yet\n")
    assert ask() == "[CONTINUE] result.txt is not ok"
    (workdir / "result.txt").write_text("ok\n")
    assert ask() == "[CONTINUE] flag missing"
    (workdir / "done.flag").write_text("")
    assert ask() == "[COMPLETE] done"
    assert [r.rule for r in fm.requests] == [
        "default",
        "prompt-regex",
        "started",
        "argv-fails",
        "passing",
    ]


def test_times_lets_the_same_situation_answer_differently(serve: Any) -> None:
    fm = serve(
        {
            "supervisor": [
                {"times": 1, "error": 529},
                {"times": 2, "reply": "[CONTINUE] again"},
                {"reply": "[COMPLETE] finally"},
            ]
        }
    )

    statuses = [post(fm, user(supervisor_prompt())).status for _ in range(4)]

    assert statuses == [529, 200, 200, 200]
    assert [r.rule for r in fm.requests] == [
        "supervisor[0]",
        "supervisor[1]",
        "supervisor[1]",
        "supervisor[2]",
    ]


def test_a_turn_keeps_its_rule_across_tool_round_trips(serve: Any, workdir: Path) -> None:
    fm = serve(
        {
            "agent": [
                {
                    "times": 1,
                    "when": {"file_missing": "out.txt"},
                    "steps": [
                        {"tool": "Bash", "input": {"command": "touch out.txt"}},
                        {"text": "made it"},
                    ],
                },
                {"reply": "other"},
            ]
        }
    )
    first = post(fm, user("go")).events()
    (workdir / "out.txt").write_text("")
    tool_use = {
        "type": "tool_use",
        "id": first[1][1]["content_block"]["id"],
        "name": "Bash",
        "input": {},
    }

    assert text_of(post(fm, user("go"), *tool_round_trip(tool_use)).events()) == "made it"
    assert text_of(post(fm, user("go"), *tool_round_trip(tool_use), user("go")).events()) == "other"


def test_verbatim_replies_keep_newlines_and_control_bytes(serve: Any) -> None:
    fm = serve('supervisor:\n  - reply: "[CONTINUE] line1\\nline2 \\x1b[31mred\\x1b[0m \\x03"\n')

    assert text_of(post(fm, user(supervisor_prompt())).events()) == (
        "[CONTINUE] line1\nline2 \x1b[31mred\x1b[0m \x03"
    )


def test_no_matching_rule_says_so(serve: Any) -> None:
    fm = serve({"agent": [{"match": "something else", "reply": "no"}]})

    assert "no agent rule matched" in text_of(post(fm, user("hi")).events())


@pytest.mark.parametrize(
    "bad",
    [
        {"agent": [{"reply": "x", "colour": "red"}]},
        {"agent": [{"match": "x"}]},
        {"agent": [{"steps": [{"input": {}}]}]},
        {"supervisor": [{"error": 200}]},
        {"supervisor": [{"times": 0, "reply": "x"}]},
        {"supervisor": [{"when": {"file_smells": "x"}, "reply": "x"}]},
        {"agents": []},
    ],
)
def test_malformed_scenarios_are_rejected(bad: Mapping[str, Any]) -> None:
    with pytest.raises(ScenarioError):
        Scenario.from_dict(bad)


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
def test_demo_scenario_follows_the_real_tests(serve: Any, workdir: Path) -> None:
    scenario = Scenario.load(SCENARIOS / "demo.yaml")
    scenario.seed(workdir)
    fm = FakeModel(scenario, workdir).start()
    try:

        def verdict() -> str:
            return text_of(post(fm, user(supervisor_prompt())).events())

        assert verdict().startswith("[CONTINUE] textstats.py does not exist")
        partial = scenario.agent[0].steps[0].blocks[1]
        (workdir / "textstats.py").write_text(str(partial.input["content"]))  # type: ignore[union-attr]
        assert verdict().startswith("[CONTINUE] python3 -m unittest fails")
        fixed = (workdir / "textstats.py").read_text().replace('split(" ")', "split()")
        (workdir / "textstats.py").write_text(fixed)
        assert verdict().startswith("[COMPLETE]")
    finally:
        fm.close()


# -- as a process --------------------------------------------------------------------------


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
def test_runs_as_a_process_until_sigterm(workdir: Path, tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text("agent:\n  - reply: from the process\n")
    port_file = tmp_path / "port"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ptysup.testing.fakemodel",
            "--scenario",
            str(scenario),
            "--workdir",
            str(workdir),
            "--port-file",
            str(port_file),
            "--log",
            str(tmp_path / "l.jsonl"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url == f"http://127.0.0.1:{int(port_file.read_text())}"
        events = request(url, "POST", "/v1/messages", messages_body(user("hi"))).events()
        assert text_of(events) == "from the process"
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
        assert json.loads((tmp_path / "l.jsonl").read_text())["kind"] == "agent"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.yaml")), ids=lambda p: p.name)
def test_bundled_scenarios_parse(path: Path) -> None:
    scenario = Scenario.load(path)
    assert scenario.supervisor
    # judge.yaml scripts only a judge: judge-bench replays recorded turn ends, no agent.
    assert scenario.agent or path.name == "judge.yaml"


def test_a_wire_condition_tells_a_second_opinion_from_the_judge(workdir: Path) -> None:
    from ptysup.testing.player import Player
    from ptysup.testing.wires import Reading

    scenario = Scenario.from_dict(
        {
            "supervisor": [
                {"wire": "responses", "reply": "[CONTINUE] add a test for zero"},
                {"reply": "[COMPLETE] done"},
            ]
        }
    )
    player = Player(scenario, workdir)

    def said(wire: str) -> str:
        choice = player.choose(Reading(RequestKind.SUPERVISOR, supervisor_prompt(), wire=wire))
        (block,) = choice.step.blocks
        return str(getattr(block, "text", ""))

    assert said("anthropic") == "[COMPLETE] done"
    assert said("responses") == "[CONTINUE] add a test for zero"
    assert said("") == "[COMPLETE] done"  # a request no wire named: never this wire's
