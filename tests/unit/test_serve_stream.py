"""The live stream's pieces: reading a growing recording, the player's first message."""

from __future__ import annotations

import json
from pathlib import Path

from ptysup.serve.security import Guard
from ptysup.serve.stream import CastTail, live, snapshot, sse


def test_a_line_still_being_written_waits_for_its_end(tmp_path: Path) -> None:
    cast = tmp_path / "events.cast"
    whole = json.dumps([0.5, "o", "hello"]) + "\n"
    cast.write_text('{"version": 2, "width": 80, "height": 24}\n' + whole[:7])
    tail = CastTail(cast)
    assert tail.events() == [] and tail.header == {"version": 2, "width": 80, "height": 24}
    with cast.open("a") as f:
        f.write(whole[7:])
    assert tail.events() == [[0.5, "o", "hello"]]
    assert tail.events() == [] and not tail.more()


def test_the_first_message_is_the_terminal_so_far_at_its_last_size() -> None:
    header = {"version": 2, "width": 80, "height": 24}
    events = [[0.1, "o", "a"], [0.2, "r", "100x30"], [0.3, "m", "turn_end"], [0.4, "o", "b"]]
    assert snapshot(header, events) == {"cols": 100, "rows": 30, "time": 0.4, "init": "ab"}
    assert snapshot(header, []) == {"cols": 80, "rows": 24, "time": 0.0, "init": ""}


def test_a_run_that_ended_without_a_recording_says_so_at_once(tmp_path: Path) -> None:
    chunks = list(live(tmp_path / "none.cast", lambda: False, lambda s: False, lambda: 0.0))
    assert chunks == [sse({"state": "offline"}), sse({}, event="done")]


def test_a_quiet_live_run_gets_keepalives_and_a_shutdown_ends_the_stream(tmp_path: Path) -> None:
    cast = tmp_path / "events.cast"
    cast.write_text('{"version": 2, "width": 80, "height": 24}\n')
    now = [0.0]
    waits: list[float] = []

    def wait(seconds: float) -> bool:  # a fake clock: each wait moves it on
        waits.append(seconds)
        now[0] += 10.0
        return len(waits) >= 3  # the server shuts down at the third wait

    chunks = list(live(cast, lambda: True, wait, lambda: now[0]))
    assert chunks[0] == sse({"cols": 80, "rows": 24, "time": 0.0, "init": ""})
    assert chunks[1:] == [b": keepalive\n\n"]  # once 15 s passed without output


def test_sse_is_one_data_line_whatever_the_text_holds() -> None:
    message = sse([1.0, "o", "two\nlines\r\n"])
    assert message.count(b"\n") == 2 and message.startswith(b"data: [1.0")


def test_the_guard_knows_its_names_and_refuses_the_rest() -> None:
    guard = Guard("s3cret", "127.0.0.1", 8000)
    ok = "127.0.0.1:8000"
    assert guard.check(ok, "token=s3cret", None).from_query
    assert guard.check(ok, "", "ptysup_token_8000=s3cret").status == 0
    assert guard.check(ok, "", "other=1; ptysup_token_8000=s3cret").status == 0
    assert guard.check(ok, "", "ptysup_token_8000=s3cre").status == 403
    assert guard.check(ok, "token=nope", "ptysup_token_8000=s3cret").status == 403
    assert guard.check(ok, "", 'bad"cookie').status == 403
    assert guard.check(None, "token=s3cret", None).status == 421
    assert guard.check("127.0.0.1", "token=s3cret", None).status == 421  # no port
    assert guard.check("LOCALHOST:8000", "token=s3cret", None).status == 0
    assert Guard("t", "::1", 9).hosts >= {"[::1]:9", "localhost:9", "127.0.0.1:9"}
    assert Guard("t", "192.168.1.5", 9).check("192.168.1.5:9", "token=t", None).status == 0
