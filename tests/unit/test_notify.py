"""Notifications: the channels, the choice of events, and never blocking the caller."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest

from ptysup.events import Event, EventLog
from ptysup.notify import (
    CommandChannel,
    Notifier,
    NotifyError,
    TerminalChannel,
    UrlChannel,
    kind_of,
    message,
    parse_kinds,
    warning_fields,
)
from tests.helpers import alive, wait_for


def test_notify_on_takes_repeated_or_comma_separated_kinds() -> None:
    assert parse_kinds(["escalation,run_end", " person ", "run_end"]) == (
        "escalation",
        "run_end",
        "person",
    )
    with pytest.raises(ValueError, match="unknown event 'finish'"):
        parse_kinds(["escalation,finish"])


@pytest.mark.parametrize(
    ("name", "fields", "kind"),
    [
        ("escalation", {"reason": "x"}, "escalation"),
        ("question", {"to": "person"}, "person"),
        ("question", {"to": "supervisor"}, "question"),
        ("turn_end", {"kind": "stalled", "dialog": True}, "person"),
        ("turn_end", {"kind": "stop"}, None),
        ("run_end", {"outcome": "complete"}, "run_end"),
        ("warning", {"message": "x"}, "warning"),
        ("warning", warning_fields("a notification failed"), None),
        ("inject", {"text": "x"}, None),
    ],
)
def test_which_events_are_which_notification(
    name: str, fields: dict[str, Any], kind: str | None
) -> None:
    assert kind_of(Event(name, 0.0, fields)) == kind


@pytest.mark.parametrize(
    ("name", "fields", "text"),
    [
        ("escalation", {"reason": "needs a key"}, "waiting for you: needs a key"),
        (
            "question",
            {"to": "person", "questions": [{"question": "Which?"}, {"question": "Why?"}]},
            "the agent asks: Which?; Why?",
        ),
        (
            "turn_end",
            {"kind": "stalled", "dialog": True},
            "a dialog is open and no one answered it",
        ),
        (
            "answer",
            {"by": "person", "answers": {"Which?": "Redis"}},
            "answered by person: Which? → Redis",
        ),
        (
            "run_end",
            {"outcome": "complete", "exit_code": 0, "reason": "done"},
            "run ended: complete (exit 0): done",
        ),
        ("decision", {"action": "continue", "content": "run the tests"}, "run the tests"),
    ],
)
def test_each_notification_has_a_one_line_message(
    name: str, fields: dict[str, Any], text: str
) -> None:
    event = Event(name, 0.0, fields)
    kind = kind_of(event)
    assert kind is not None and message(kind, event) == text


def _script(tmp_path: Path, body: str) -> list[str]:
    script = tmp_path / "notify.py"
    script.write_text(body)
    return ["python3", str(script)]


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
def test_a_command_gets_the_note_as_json_on_stdin_without_a_shell(tmp_path: Path) -> None:
    out = tmp_path / "got.json"
    argv = _script(tmp_path, f"import sys\nopen({str(out)!r}, 'w').write(sys.stdin.read())\n")
    note = {"kind": "escalation", "message": "waiting for you: $(rm -rf /) `x`"}
    CommandChannel(argv, str(tmp_path), {"PATH": "/usr/bin:/bin"}).send(note)
    assert json.loads(out.read_text()) == note


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
def test_a_failing_or_hanging_command_is_an_error_with_its_reason(tmp_path: Path) -> None:
    failing = _script(tmp_path, "import sys\nsys.stderr.write('no route\\n')\nsys.exit(3)\n")
    with pytest.raises(NotifyError, match="exited 3: no route"):
        CommandChannel(failing, str(tmp_path), {"PATH": "/usr/bin:/bin"}).send({})
    with pytest.raises(NotifyError, match="cannot start"):
        CommandChannel(["/nonexistent/notify"], str(tmp_path), {}).send({})
    pid_file = tmp_path / "pid"
    hanging = ["bash", "-c", f"sleep 60 & echo $! > {pid_file}; wait"]
    start = time.monotonic()
    with pytest.raises(NotifyError, match=r"timed out after 0\.5s"):
        CommandChannel(hanging, str(tmp_path), {"PATH": "/usr/bin:/bin"}, timeout=0.5).send({})
    assert time.monotonic() - start < 10
    # The whole process group went, the command's own children too.
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(grandchild)


class Blocking:
    name = "blocking"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.got: list[Mapping[str, Any]] = []

    def send(self, note: Mapping[str, Any]) -> None:
        self.release.wait(10)
        self.got.append(note)


class Failing:
    name = "failing"

    def send(self, note: Mapping[str, Any]) -> None:
        raise NotifyError("no route to host")


def test_the_notifier_never_blocks_the_caller_and_warns_about_failures(
    capsys: pytest.CaptureFixture[str],
) -> None:
    slow = Blocking()
    warnings: list[str] = []
    notifier = Notifier([Failing(), slow], ["escalation", "run_end"], warnings.append)
    log = EventLog([notifier])
    log.emit("run_start", run_id="r1", task="the task")
    start = time.monotonic()
    log.emit("escalation", reason="needs a person")
    log.emit("decision", action="continue")  # not chosen: no notification
    assert time.monotonic() - start < 1  # the channel still blocks its own thread
    wait_for(lambda: warnings, 10, "the failure's warning")
    assert warnings == ["notification via failing failed: no route to host"]
    slow.release.set()
    log.emit("run_end", outcome="escalated", exit_code=7, reason="needs a person")
    log.close()  # waits for what is queued
    assert [n["kind"] for n in slow.got] == ["escalation", "run_end"]
    first = slow.got[0]
    assert (first["run_id"], first["task"], first["event"]) == ("r1", "the task", "escalation")
    assert first["message"] == "waiting for you: needs a person"
    assert first["reason"] == "needs a person"
    assert len(warnings) == 1
    # After run_end the event log is complete: a failure goes to stderr instead.
    assert "ptysup: notification via failing failed" in capsys.readouterr().err


class Recording:
    name = "quick"

    def __init__(self) -> None:
        self.got: list[Mapping[str, Any]] = []

    def send(self, note: Mapping[str, Any]) -> None:
        self.got.append(note)


def test_a_slow_channel_holds_up_only_itself_and_what_it_never_sent_is_said(
    capsys: pytest.CaptureFixture[str],
) -> None:
    slow, quick = Blocking(), Recording()
    notifier = Notifier([slow, quick], ["escalation", "run_end"], lambda _: None, timeout=0.2)
    log = EventLog([notifier])
    log.emit("escalation", reason="needs a person")  # the slow channel is stuck on this one
    wait_for(lambda: len(quick.got) == 1, 10, "the quick channel's escalation")
    log.emit("run_end", outcome="escalated", exit_code=7)
    log.close()  # waits its bounded time, then says what the stuck channel never sent
    assert [n["kind"] for n in quick.got] == ["escalation", "run_end"]
    err = capsys.readouterr().err
    assert "ptysup: notification via blocking: 2 not sent" in err
    slow.release.set()


def test_the_terminal_gets_the_bell_and_both_desktop_notifications_without_escapes() -> None:
    written: list[bytes] = []
    woken: list[int] = []
    channel = TerminalChannel(written.append, lambda: woken.append(1))
    channel.send({"message": "waiting for you: \x1b]0;evil\x07 pick one;now"})
    (data,) = written
    assert data.startswith(b"\x07")
    assert b"\x1b]9;ptysup: waiting for you: ]0evil pick onenow\x07" in data
    assert data.endswith(b"\x1b]777;notify;ptysup;waiting for you: ]0evil pick onenow\x07")
    assert woken == [1]


class Receiver(http.server.BaseHTTPRequestHandler):
    got: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", 0))
        Receiver.got.append(json.loads(self.rfile.read(length)))
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[int]:
    Receiver.got = []
    server = http.server.HTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_a_url_is_notified_through_apprise(receiver: int) -> None:
    UrlChannel([f"json://127.0.0.1:{receiver}/hook"]).send(
        {"kind": "escalation", "message": "waiting for you: pick"}
    )
    (got,) = Receiver.got
    assert (got["title"], got["message"]) == ("ptysup: escalation", "waiting for you: pick")


def test_an_unreachable_url_or_an_unknown_one_is_an_error(receiver: int) -> None:
    with pytest.raises(ValueError, match="not a notification URL"):
        UrlChannel(["nonsense-scheme://x"])
    channel = UrlChannel([f"json://127.0.0.1:{receiver}/ok", "json://127.0.0.1:9/closed"])
    with pytest.raises(NotifyError):
        channel.send({"kind": "run_end", "message": "done"})
    assert len(Receiver.got) == 1  # the reachable one still got it
