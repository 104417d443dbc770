"""Steering a live run over its attach socket: the requests and budget values, and the
round trip of `ptysup send/budget/stop` (ptysup.attach.steer) to the run's handler."""

from __future__ import annotations

import io
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ptysup.attach import steer, steercli, steerproto, wire
from ptysup.attach.server import AttachServer, Tap
from ptysup.attach.steerproto import Action, Budget, Change, Refused, parse_change
from ptysup.store.rundir import RunDir


@pytest.mark.parametrize(
    ("key", "value", "change"),
    [
        ("max_iter", "60", Change(Budget.MAX_ITER, 60, False)),
        ("max_iter", "+10", Change(Budget.MAX_ITER, 10, True)),
        ("max_iter", "-5", Change(Budget.MAX_ITER, -5, True)),
        ("max_time", "90m", Change(Budget.MAX_TIME, 5400, False)),
        ("max_time", "+30m", Change(Budget.MAX_TIME, 1800, True)),
        ("max_time", "1h30m", Change(Budget.MAX_TIME, 5400, False)),
        ("max_cost", "2.5", Change(Budget.MAX_COST, 2.5, False)),
        ("max_cost", "+1", Change(Budget.MAX_COST, 1, True)),
        ("max_cost", "$3", Change(Budget.MAX_COST, 3, False)),
    ],
)
def test_budget_values_read_as_written(key: str, value: str, change: Change) -> None:
    assert parse_change(key, value) == change


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("max_iter", "ten", "--max-iter: 'ten' is not a whole number"),
        ("max_iter", "2.5", "--max-iter: '2.5' is not a whole number"),
        ("max_iter", "0", "--max-iter: '0' is not a whole number of iterations above 0"),
        ("max_time", "soon", "--max-time: 'soon' is not a duration"),
        ("max_cost", "lots", "--max-cost: 'lots' is not an amount in USD"),
        ("max_cost", "nan", "--max-cost: 'nan' is not an amount in USD above 0"),
        ("max_tokens", "5", "no budget 'max_tokens'"),
    ],
)
def test_a_wrong_value_is_refused_in_one_line(key: str, value: str, said: str) -> None:
    with pytest.raises(Refused, match="^" + said.replace("$", r"\$")):
        parse_change(key, value)


def test_a_limit_never_falls_below_what_is_used() -> None:
    assert parse_change("max_iter", "+10").apply(current=5, used=4) == 15
    assert parse_change("max_iter", "-1").apply(current=5, used=4) == 4
    with pytest.raises(Refused, match=r"--max-iter: 3 is below what is used \(4\)"):
        parse_change("max_iter", "-2").apply(current=5, used=4)
    with pytest.raises(Refused, match=r"--max-time: 10m is below what is used \(20m\)"):
        parse_change("max_time", "10m").apply(current=3600, used=1200)
    with pytest.raises(Refused, match=r"--max-cost: \$0.50 is below what is used \(\$0.75\)"):
        parse_change("max_cost", "0.5").apply(current=1, used=0.75)


def test_moving_a_budget_the_run_does_not_have_says_to_set_one() -> None:
    with pytest.raises(Refused, match=r"no such budget to move; set one \(e.g. --max-time 2h\)"):
        parse_change("max_time", "+30m").apply(current=None, used=100)
    assert parse_change("max_time", "2h").apply(current=None, used=100) == 7200


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"action": "send", "text": "  "}, "nothing to send"),
        ({"action": "send", "text": "x" * (steerproto.MAX_TEXT + 1)}, "at most"),
        ({"action": "budget", "changes": {}}, "no budget to change"),
        ({"action": "approve", "dialog": ""}, "approve needs the dialog's text"),
        ({"action": "dance"}, "no action 'dance'"),
    ],
)
def test_a_bad_request_is_refused(fields: dict[str, object], said: str) -> None:
    with pytest.raises(Refused, match=said):
        steerproto.request(str(fields.pop("action")), "shell", **fields)


def test_a_request_survives_the_wire() -> None:
    sent = steerproto.request("budget", "shell pid 1", changes={"max_iter": "+3", "max_time": "1h"})
    got = steerproto.decode(wire.json_frame(wire.STEER, sent.to_json())[wire.HEADER.size :])
    assert got == sent
    assert steerproto.decode(b'{"action": "stop", "source": "a\\nb"}').source == "a b"
    with pytest.raises(Refused, match="not JSON"):
        steerproto.decode(b"{")


class Run:
    """A live run as the client sees it: its lock held, its attach socket served, and a
    handler that records what it was asked."""

    def __init__(self, tmp_path: Path) -> None:
        self.asked: list[steerproto.Request] = []
        self.refuse: str | None = None
        self.dir = tmp_path / "runs" / "run-1"
        self.dir.mkdir(parents=True)
        sockets = tmp_path / "sockets"
        sockets.mkdir(mode=0o700)
        tap = Tap(
            feed=lambda data: 0,
            settle=lambda timeout: True,
            paint=lambda: (b"", 0),
            size=lambda: (24, 80),
            keys=lambda data: None,
            steer=self.handle,
        )
        self.server = AttachServer("run-1", self.dir, tap, sockets)

    def handle(self, request: steerproto.Request) -> str:
        self.asked.append(request)
        if self.refuse is not None:
            raise Refused(self.refuse)
        return f"done: {request.action.value}"


@pytest.fixture
def run(tmp_path: Path) -> Iterator[Run]:
    live = Run(tmp_path)
    with RunDir(live.dir).lock():
        live.server.start()
        yield live
        live.server.close()


def test_each_action_reaches_the_run_and_its_answer_comes_back(run: Run) -> None:
    assert steer.send(run.dir, "use the other branch", "shell pid 7") == "done: send"
    assert steer.budget(run.dir, {"max_iter": "+5"}, "shell pid 7") == "done: budget"
    assert steer.stop(run.dir, "shell pid 7") == "done: stop"
    assert steer.approve(run.dir, "Do you want to proceed?", "page") == "done: approve"
    assert [r.action for r in run.asked] == [
        Action.SEND,
        Action.BUDGET,
        Action.STOP,
        Action.APPROVE,
    ]
    assert run.asked[0].text == "use the other branch"
    assert run.asked[0].source == "shell pid 7"
    assert run.asked[1].changes == (Change(Budget.MAX_ITER, 5, True),)
    assert run.asked[3].text == "Do you want to proceed?"


def test_the_runs_refusal_is_the_error(run: Run) -> None:
    run.refuse = "--max-iter: 3 is below what is used (4)"
    with pytest.raises(steer.SteerError, match=r"^--max-iter: 3 is below what is used \(4\)$"):
        steer.budget(run.dir, {"max_iter": "3"}, "shell")


def test_a_wrong_value_never_reaches_the_run(run: Run) -> None:
    with pytest.raises(steer.SteerError, match="--max-time: 'later' is not a duration"):
        steer.budget(run.dir, {"max_time": "later"}, "shell")
    assert run.asked == []


def test_a_run_that_is_not_running_is_refused(tmp_path: Path) -> None:
    ended = tmp_path / "run-2"
    ended.mkdir()
    with pytest.raises(steer.SteerError, match="run run-2 is not running"):
        steer.stop(ended, "shell")


def test_a_steering_connection_gets_no_output_and_cannot_type(run: Run) -> None:
    """A request's connection is no viewer: a CONNECT after it is ignored, and it is
    closed after its one answer."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(10)
    sock.connect(str(run.server.path))
    request = steerproto.request("stop", "test")
    sock.sendall(wire.json_frame(wire.STEER, request.to_json()))
    sock.sendall(wire.json_frame(wire.CONNECT, {"rw": True}))
    got: list[tuple[bytes, bytes]] = []
    reader = wire.Reader()
    while data := sock.recv(65536):
        got += reader.feed(data)
    sock.close()
    assert [kind for kind, _ in got] == [wire.REPLY]
    run.server.output(b"secret output")
    assert len(run.asked) == 1


def cli(name: str, args: list[str], runs: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    act = {"send": steercli._send, "budget": steercli._budget, "stop": steercli._stop}[name]
    code = steercli._main(name, args, act, out, err, runs)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    ("name", "args", "said"),
    [
        ("send", [], "ptysup: usage: ptysup send RUN TEXT..."),
        ("send", ["run-1"], "ptysup: usage: ptysup send RUN TEXT..."),
        ("send", ["nope", "hi"], "ptysup: send: no run 'nope' (looked for a file, a run directory"),
        ("budget", ["run-1"], "ptysup: budget: say which budget to change; usage: ptysup budget"),
        ("budget", ["run-1", "--max-iter"], "ptysup: budget: --max-iter needs a value"),
        ("budget", ["run-1", "--max-iters", "5"], "ptysup: budget: unknown option '--max-iters'"),
        (
            "budget",
            ["run-1", "--max-iter", "ten"],
            "ptysup: budget: --max-iter: 'ten' is not a whole",
        ),
        ("budget", ["run-1", "--max-time=soon"], "ptysup: budget: --max-time: 'soon' is not a dur"),
        ("stop", ["run-1", "now"], "ptysup: usage: ptysup stop RUN"),
        ("stop", ["run-1"], "ptysup: stop: run run-1 is not running (its process is gone)"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, name: str, args: list[str], said: str
) -> None:
    (tmp_path / "run-1").mkdir()
    (tmp_path / "run-1" / "lock").touch()  # a run, whose process is gone
    code, out, err = cli(name, args, tmp_path)
    assert (code, out) == (2, "")
    assert err.startswith(said) and err.count("\n") == 1, err


def test_each_command_prints_the_runs_one_line(run: Run) -> None:
    code, out, err = cli("budget", ["run-1", "--max-iter=+5", "--max-time", "2h"], run.dir.parent)
    assert (code, out, err) == (0, "done: budget\n", "")
    assert run.asked[0].changes == (
        Change(Budget.MAX_ITER, 5, True),
        Change(Budget.MAX_TIME, 7200, False),
    )
    assert cli("send", ["run-1", "use", "the", "blue", "one"], run.dir.parent)[1] == "done: send\n"
    assert run.asked[1].text == "use the blue one"
    assert run.asked[1].source.startswith("shell pid ")


@pytest.mark.pty  # starts a process
def test_the_commands_are_subcommands_with_their_options(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ptysup", "budget", "last", "--max-iters", "5"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "did you mean --max-iter?" in done.stderr and done.stderr.count("\n") == 1
