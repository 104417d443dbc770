"""`ptysup serve`'s limits, with real sockets on 127.0.0.1: a folder it cannot read is
refused at the start, connections without the token hold nothing, requests with it are
capped (each holds a thread), idle ones are dropped, and a live stream is not idle."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ptysup.serve.server import MAX_CONNECTIONS, MAX_WAITING
from ptysup.store.rundir import RUNS_DIR
from tests.helpers import ptysup_argv, wait_for
from tests.otheruser import OtherUser, other_user
from tests.serving import Served, make_run, served

RUN = "20260101-120000-aaaaaa"
CAP = 4
IDLE_S = 1.0  # the test's idle timeout: short, so the drop is an event to wait for


def _threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise AssertionError("no thread count")


def _closed(sock: socket.socket) -> bool:
    """Whether the server closed the connection (what it sent before is read and kept)."""
    sock.settimeout(0.05)
    try:
        return sock.recv(1 << 16) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def _answer(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    sock.settimeout(30)
    chunks = []
    while chunk := sock.recv(1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def _get(server: Served, path: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request("GET", path, headers={"Cookie": server.cookie})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _connect(server: Served, stack: contextlib.ExitStack, first: bytes = b"") -> socket.socket:
    sock = stack.enter_context(socket.create_connection(("127.0.0.1", server.port), 30))
    if first:
        sock.sendall(first)
    return sock


@contextlib.contextmanager
def crowded(
    tmp_path: Path, idle_s: float, *args: str
) -> Iterator[tuple[Served, list[socket.socket]]]:
    """A server with `args` and CAP + 70 connections that send nothing, every one of them
    taken in by the server."""
    make_run(tmp_path, RUN, task="watched", decisions=[("complete", "ok")], screen="hi")
    limits = ("--idle-timeout", str(idle_s), *args)
    with served(tmp_path, *limits) as server, contextlib.ExitStack() as stack:
        before = _fds(server.proc.pid)
        socks = [_connect(server, stack) for _ in range(CAP + 70)]
        refused: set[socket.socket] = set()

        def taken_in() -> bool:  # held open by the server, or refused by it
            refused.update(sock for sock in socks if sock not in refused and _closed(sock))
            return _fds(server.proc.pid) >= before + len(socks) - len(refused)

        wait_for(taken_in, 30, "the server to take every connection in")
        yield server, socks


def test_connections_without_the_token_never_lock_the_person_out(tmp_path: Path) -> None:
    """Issue 30: 64 idle connections took every slot and everyone got 503. Now idle ones,
    half-sent heads, a byte-a-time trickle and whole requests without the token hold no
    slot and no thread, and a request with the token is answered at once."""
    with crowded(tmp_path, 600.0) as (server, idle), contextlib.ExitStack() as stack:
        assert len(idle) > MAX_CONNECTIONS
        head = f"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n".encode()
        half = [_connect(server, stack, head) for _ in range(MAX_CONNECTIONS)]
        unread = [_connect(server, stack, head + b"\r\n") for _ in range(MAX_CONNECTIONS)]
        wrong = _connect(server, stack, head.replace(b"runs", b"runs?token=wrong") + b"\r\n")
        assert _answer(wrong).startswith(b"HTTP/1.1 403 ")
        for sock in half:  # still trickling in
            sock.sendall(b"X-Slow: 1\r\n")
        assert _threads(server.proc.pid) <= 4  # the main one, the serving one (+1 of Python's)
        started = time.monotonic()
        status, body = _get(server, "/api/runs")
        assert status == 200 and json.loads(body)[0]["run_id"] == RUN
        assert time.monotonic() - started < 10  # at once, on a loaded machine
        # Those without the token were refused at once, though they never read the answer.
        assert all(_answer(sock).startswith(b"HTTP/1.1 403 ") for sock in unread)
        assert not any(_closed(sock) for sock in idle + half)  # their time is not up


def test_requests_over_the_cap_are_refused_at_once_and_threads_stay_bounded(
    tmp_path: Path,
) -> None:
    run_dir = make_run(tmp_path, RUN, task="live", outcome=None, screen="before")
    limits = ("--max-connections", str(CAP), "--idle-timeout", "600")
    with served(tmp_path, *limits) as server, run_dir.lock(), contextlib.ExitStack() as stack:
        live = (
            f"GET /api/runs/{RUN}/live HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
            f"Cookie: {server.cookie}\r\n\r\n"
        ).encode()
        streams = [_connect(server, stack, live) for _ in range(CAP)]
        for sock in streams:  # each holds its slot, watching the run
            wait_for(lambda sock=sock: b"data: " in _peek(sock), 30, "the stream's first event")
        status, body = _get(server, "/api/runs")
        assert (status, body) == (503, b"too many requests at once; try again\n")
        answer = _answer(_connect(server, stack, live))
        assert answer.startswith(b"HTTP/1.1 503 ")
        assert b"Content-Security-Policy: default-src 'none'" in answer
        assert b"Retry-After: 1" in answer
        assert _threads(server.proc.pid) <= CAP + 3


def _peek(sock: socket.socket) -> bytes:
    sock.settimeout(0.05)
    try:
        return sock.recv(1 << 16, socket.MSG_PEEK)
    except TimeoutError:
        return b""


def test_the_longest_waiting_connection_makes_room_for_a_new_one(tmp_path: Path) -> None:
    """At most MAX_WAITING connections wait for their head (each is a file descriptor):
    one more pushes the longest-waiting out, and a request with the token still gets in."""
    make_run(tmp_path, RUN, task="watched", decisions=[("complete", "ok")], screen="hi")
    with served(tmp_path, "--idle-timeout", "600") as server, contextlib.ExitStack() as stack:
        socks = [_connect(server, stack) for _ in range(MAX_WAITING + 20)]
        wait_for(lambda: all(_closed(sock) for sock in socks[:20]), 30, "the oldest pushed out")
        status, _ = _get(server, "/api/runs")
        assert status == 200
        assert not any(_closed(sock) for sock in socks[-20:])


def test_idle_connections_are_dropped_and_then_requests_are_answered(tmp_path: Path) -> None:
    with crowded(tmp_path, IDLE_S) as (server, socks):
        _idle_ones_dropped(server, socks)


def _idle_ones_dropped(server: Served, socks: list[socket.socket]) -> None:
    wait_for(lambda: all(_closed(sock) for sock in socks), 30, "the idle connections dropped")
    status, body = _get(server, "/api/runs")
    assert status == 200 and json.loads(body)[0]["run_id"] == RUN
    # A request never finished: dropped after the idle time too, even one that trickles
    # in a byte at a time (each read is quick, the whole head never comes).
    with socket.create_connection(("127.0.0.1", server.port), 30) as slow:
        slow.sendall(b"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        wait_for(lambda: _closed(slow), 30, "the unfinished request dropped")
    with socket.create_connection(("127.0.0.1", server.port), 30) as trickle:
        trickle.sendall(b"GET /api/runs HTTP/1.1\r\nX-Slow: ")
        wait_for(lambda: _trickled(trickle), 30, "the trickling request dropped")


def _trickled(sock: socket.socket) -> bool:
    """One more byte of a header that never ends; whether the server closed on it."""
    try:
        sock.sendall(b"x")
    except (BrokenPipeError, ConnectionResetError):
        return True
    return _closed(sock)


def test_a_live_stream_outlives_the_idle_timeout(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, RUN, task="live", outcome=None, screen="before")
    cast = run_dir.default_events.with_suffix(".cast")
    with served(tmp_path, "--idle-timeout", str(IDLE_S)) as server, run_dir.lock():
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        conn.request("GET", f"/api/runs/{RUN}/live", headers={"Cookie": server.cookie})
        response = conn.getresponse()
        assert response.status == 200
        assert "before" in json.loads(response.readline().decode()[6:])["init"]
        assert response.readline() == b"\n"
        # An idle connection opened now is dropped: the idle time has passed for both.
        with socket.create_connection(("127.0.0.1", server.port), 30) as idle:
            wait_for(lambda: _closed(idle), 30, "an idle connection dropped")
        with cast.open("a") as f:
            f.write(json.dumps([1.5, "o", "still watched"]) + "\n")
        assert json.loads(response.readline().decode()[6:]) == [1.5, "o", "still watched"]
        conn.close()


def test_an_idle_timeout_or_cap_that_is_no_number_is_refused(tmp_path: Path) -> None:
    for args, says in (
        (("--max-connections", "0"), "--max-connections needs a number from 1 to 10000"),
        (("--idle-timeout", "nan"), "--idle-timeout needs a positive number of seconds"),
        (("--idle-timeout", "-1"), "--idle-timeout needs a positive number of seconds"),
    ):
        result = _serve(tmp_path, *args)
        assert (result.returncode, result.stderr) == (2, f"ptysup: {says}, not {args[1]!r}\n")


def _serve(
    directory: Path, *args: str, user: OtherUser | None = None
) -> subprocess.CompletedProcess[str]:
    argv = ptysup_argv("serve", str(directory), *args)
    return subprocess.run(
        user.argv(*argv) if user is not None else argv,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_runs_that_are_a_file_are_refused(tmp_path: Path) -> None:
    (tmp_path / RUNS_DIR).parent.mkdir(parents=True)
    (tmp_path / RUNS_DIR).write_text("not a directory")
    result = _serve(tmp_path)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"ptysup: serve: cannot read {tmp_path / RUNS_DIR}: ")
    result = _serve(tmp_path / RUNS_DIR)  # DIR itself a file
    assert (result.returncode, result.stderr) == (
        2,
        f"ptysup: serve: not a directory: {tmp_path / RUNS_DIR}\n",
    )
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert _serve(fifo).stderr == f"ptysup: serve: not a directory: {fifo}\n"


@pytest.fixture
def user(tmp_path: Path) -> OtherUser:
    """A local user other than root (root reads every folder whatever its mode)."""
    return other_user(tmp_path)


def test_a_folder_another_user_cannot_read_is_refused_at_the_start(
    user: OtherUser,
) -> None:
    with tempfile.TemporaryDirectory() as top:
        project = Path(top)
        project.chmod(0o755)  # the other user may look in here: not in the runs
        make_run(project, RUN, task="private", screen="secret")
        runs = project / RUNS_DIR
        runs.chmod(0o700)
        result = _serve(project, user=user)
        assert (result.returncode, result.stdout) == (2, "")
        assert result.stderr == f"ptysup: serve: cannot read {runs}: Permission denied\n"
        listed = subprocess.run(  # `ptysup runs` there says the same
            user.argv(*ptysup_argv("runs")),
            cwd=project,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert (listed.returncode, listed.stdout) == (2, "")
        assert listed.stderr == f"ptysup: runs: cannot read {RUNS_DIR}: Permission denied\n"
        project.chmod(0o700)  # now the folder itself
        inner = project / "sub"
        inner.mkdir(mode=0o755)
        result = _serve(inner, user=user)
        assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
        assert result.stderr == f"ptysup: serve: cannot read {inner}: Permission denied\n"
