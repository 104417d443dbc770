"""Notifications from a real run: --notify-url to a receiver on 127.0.0.1 (through
apprise's json:// URL), and a failing --notify command that is only a warning."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.e2e.conftest import Rig

pytestmark = pytest.mark.e2e


class _Receiver(http.server.ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.got: list[dict[str, Any]] = []


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Receiver

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", 0))
        self.server.got.append(json.loads(self.rfile.read(length)))
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[_Receiver]:
    server = _Receiver()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def test_notify_url_reaches_a_loopback_receiver_and_a_failing_command_warns(
    rig: Callable[..., Rig], receiver: _Receiver
) -> None:
    r = rig(
        {
            "agent": [{"reply": "Which database do you want?"}],
            "supervisor": [{"reply": "[ESCALATE] the database is the owner's choice"}],
        }
    )
    url = f"json://127.0.0.1:{receiver.server_address[1]}/ptysup"
    run = r.run("set up the database", "--notify-url", url, "--notify", "false")
    assert run.code == 7, run.stdout + run.stderr
    assert [g["title"] for g in receiver.got] == ["ptysup: escalation", "ptysup: run_end"]
    assert receiver.got[0]["message"] == "waiting for you: the database is the owner's choice"
    assert "escalated (exit 7)" in receiver.got[1]["message"]
    warnings = [w["message"] for w in run.named("warning") if w.get("source") == "notify"]
    assert warnings == ["notification via false failed: exited 1"]
    assert run.events[-1]["event"] == "run_end"
    assert "ptysup: notification via false failed: exited 1" in run.stderr  # the run_end one


def test_notify_on_chooses_the_events_and_bad_values_are_usage_errors(
    rig: Callable[..., Rig], receiver: _Receiver
) -> None:
    r = rig({"agent": [{"reply": "Done."}], "supervisor": [{"reply": "[COMPLETE] done"}]})
    url = f"json://127.0.0.1:{receiver.server_address[1]}/"
    run = r.run("t", "--notify-url", url, "--notify-on", "decision")
    assert run.code == 0, run.stdout + run.stderr
    assert [g["title"] for g in receiver.got] == ["ptysup: decision"]
    assert receiver.got[0]["message"] == "done"
    r.log.unlink()
    bad = r.run("t", "--notify-on", "escalation,finished")
    assert bad.code == 2 and not r.log.exists()
    assert bad.stderr.startswith("ptysup: --notify-on: unknown event 'finished'")
    bad = r.run("t", "--notify-url", "nonsense-scheme://x")
    assert bad.code == 2
    assert "--notify-url: not a notification URL apprise knows" in bad.stderr
    bad = r.run("t", "--questions", "nobody")
    assert bad.code == 2 and "--questions" in bad.stderr
    before = len(r.model.requests)
    bad = r.run("t", "--notify", "no-such-notifier --loud")
    assert bad.code == 2
    assert bad.stderr.splitlines() == ["ptysup: notify command not found: no-such-notifier"]
    assert bad.events[-1]["outcome"] == "usage"  # preflight: nothing was started
    assert len(r.model.requests) == before
