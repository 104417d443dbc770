"""The run's side of `ptysup attach`: a private socket, one screen then every byte, a slow
viewer dropped instead of slowing the run."""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pyte
import pytest

from ptysup.attach import server as attach_server
from ptysup.attach import wire
from ptysup.attach.server import AttachError, AttachServer, Tap, socket_dir
from ptysup.attach.snapshot import render
from ptysup.terminal.screen import ScreenFeeder
from tests.helpers import GatedModel, wait_for


class Model:
    """A stand-in screen model: what was fed, painted as text, always caught up."""

    def __init__(self) -> None:
        self.fed = bytearray()
        self.keys: list[bytes] = []

    def feed(self, data: bytes) -> int:
        self.fed += data
        return len(self.fed)

    def tap(self) -> Tap:
        return Tap(
            feed=self.feed,
            settle=lambda timeout: True,
            paint=lambda: (b"SCREEN:" + bytes(self.fed), len(self.fed)),
            size=lambda: (24, 80),
            keys=self.keys.append,
        )


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[AttachServer, Model]]:
    model = Model()
    sockets = tmp_path / "sockets"
    sockets.mkdir(mode=0o700)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    server = AttachServer("run-1", run_dir, model.tap(), sockets)
    server.start()
    yield server, model
    server.close()


def connect(server: AttachServer, rw: bool = False) -> tuple[socket.socket, wire.Reader]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(server.path))
    sock.sendall(wire.json_frame(wire.CONNECT, {"rw": rw}))
    sock.settimeout(10)
    return sock, wire.Reader()


def receive(sock: socket.socket, reader: wire.Reader, count: int) -> list[tuple[bytes, bytes]]:
    got: list[tuple[bytes, bytes]] = []
    while len(got) < count:
        data = sock.recv(65536)
        assert data, f"closed after {got}"
        got += reader.feed(data)
    return got


def test_a_viewer_gets_the_screen_then_every_later_byte_once(
    served: tuple[AttachServer, Model],
) -> None:
    server, model = served
    server.output(b"before ")
    sock, reader = connect(server)
    (hello, screen) = receive(sock, reader, 2)
    assert hello[0] == wire.HELLO and json.loads(hello[1])["rows"] == 24
    assert screen == (wire.OUTPUT, b"SCREEN:before ")
    server.output(b"after")
    server.end("complete", 0, "done")
    rest = receive(sock, reader, 2)
    assert rest[0] == (wire.OUTPUT, b"after")
    assert rest[1][0] == wire.END and json.loads(rest[1][1])["exit_code"] == 0
    assert bytes(model.fed) == b"before after"  # the model got every byte too


def test_the_socket_is_private_and_recorded_then_removed(tmp_path: Path) -> None:
    sockets = tmp_path / "s"
    sockets.mkdir(mode=0o700)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    server = AttachServer("r", run_dir, Model().tap(), sockets)
    server.start()
    assert (run_dir / "attach").read_text().strip() == str(server.path)
    assert server.path.stat().st_mode & 0o777 == 0o600
    server.close()
    assert not server.path.exists() and not (run_dir / "attach").exists()


def test_only_read_write_viewers_reach_the_agent(served: tuple[AttachServer, Model]) -> None:
    server, model = served
    reader_only, r1 = connect(server)
    writer, r2 = connect(server, rw=True)
    receive(reader_only, r1, 2)
    receive(writer, r2, 2)
    reader_only.sendall(wire.frame(wire.INPUT, b"ignored"))
    reader_only.close()  # the server reads up to the end of it: the input came first
    wait_for(lambda: server.viewers == 1, 10, "the read-only viewer to be gone")
    writer.sendall(wire.frame(wire.INPUT, b"typed"))
    wait_for(lambda: bool(model.keys), 10, "the read-write viewer's keys")
    assert model.keys == [b"typed"]


def test_a_viewer_that_stops_reading_is_dropped_not_waited_for(
    served: tuple[AttachServer, Model], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, _ = served
    monkeypatch.setattr(attach_server, "MAX_BEHIND", 256 * 1024)
    sock, reader = connect(server)
    receive(sock, reader, 2)
    chunk = b"y" * 65536
    for _ in range(200):  # 12.5 MB: far more than the socket and MAX_BEHIND hold
        server.output(chunk)  # returns at once whether or not the viewer reads
    kinds = []
    while True:
        data = sock.recv(1 << 20)
        if not data:
            break
        kinds += [kind for kind, _ in reader.feed(data)]
    assert kinds[-1] == wire.DROPPED
    assert kinds.count(wire.OUTPUT) < 200


def test_a_socket_directory_others_may_enter_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "ptysup"
    shared.mkdir(mode=0o755)
    os.chmod(shared, 0o755)
    with pytest.raises(AttachError, match="may be entered by other users"):
        socket_dir({"XDG_RUNTIME_DIR": str(tmp_path)})
    os.chmod(shared, 0o700)
    assert socket_dir({"XDG_RUNTIME_DIR": str(tmp_path)}) == shared


@pytest.mark.parametrize("hello", [b"[]", b"not json", b'"text"'])
def test_a_malformed_hello_costs_only_that_viewer(
    served: tuple[AttachServer, Model], hello: bytes
) -> None:
    server, _ = served
    bad = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    bad.connect(str(server.path))
    bad.sendall(wire.frame(wire.CONNECT, hello))
    bad.settimeout(10)
    assert bad.recv(100) == b""  # dropped
    sock, reader = connect(server)  # the server still serves
    assert receive(sock, reader, 2)[0][0] == wire.HELLO


def test_keys_after_the_end_never_reach_the_agent(served: tuple[AttachServer, Model]) -> None:
    server, model = served
    writer, reader = connect(server, rw=True)
    receive(writer, reader, 2)
    server.end("complete", 0, "done")
    receive(writer, reader, 1)
    writer.sendall(wire.frame(wire.INPUT, b"late"))
    writer.close()
    wait_for(lambda: server.viewers == 0, 10, "the viewer to be gone")
    assert model.keys == []


def test_a_read_write_viewer_sends_keys_not_its_terminals_answers() -> None:
    from ptysup.attach.client import View

    ours, theirs = socket.socketpair()
    with ours, theirs, open(os.devnull, "rb") as stdin, open(os.devnull, "wb") as stdout:
        view = View(ours, "run-1", stdin, stdout, rw=True)
        assert not view._keys(b"\x1b[12;40R\x1b[Ihi\x1b]11;rgb:0000/0000/0000\x07")
        assert view._keys(b"\x1d") is False and view._keys(b"d") is True  # Ctrl-] d
        # The viewer's terminal answering Claude Code (after a Ctrl-Z) between the two keys.
        assert view._keys(b"\x1d") is False
        assert view._keys(b"\x1bP>|tmux 3.3a\x1b\\\x1b[?1;2c") is False
        assert view._keys(b"d") is True
        theirs.settimeout(5)
        assert list(wire.Reader().feed(theirs.recv(100))) == [(wire.INPUT, b"hi")]


def test_a_read_only_viewer_sends_no_keys_and_ctrl_c_detaches() -> None:
    # The server refuses a read-only viewer's keys too (above); the client never sends them.
    from ptysup.attach.client import View

    ours, theirs = socket.socketpair()
    with ours, theirs, open(os.devnull, "rb") as stdin, open(os.devnull, "wb") as stdout:
        view = View(ours, "run-1", stdin, stdout, rw=False)
        assert view._keys(b"hello\r\x1d\x1d") is False  # Ctrl-] twice: the key itself
        assert view._keys(b"\x03") is True  # Ctrl-C leaves a read-only view
        ours.close()
        theirs.settimeout(5)
        assert theirs.recv(100) == b""  # closed with nothing sent


def viewer_screen(frames: list[tuple[bytes, bytes]], rows: int, cols: int) -> list[str]:
    """What a viewer's terminal shows after the frames it got (the screen, then output)."""
    screen = pyte.Screen(cols, rows)
    stream = pyte.ByteStream(screen)
    for kind, payload in frames:
        if kind == wire.OUTPUT:
            stream.feed(payload)
    return list(screen.display)


def lines(first: int, last: int) -> bytes:
    return b"".join(b"line %d\r\n" % i for i in range(first, last))


def test_a_viewer_joining_while_the_model_lags_sees_every_byte_exactly_once(
    tmp_path: Path,
) -> None:
    # The real screen model and feeder, stuck mid-batch while the viewer connects; output
    # comes before, during and after its welcome. Every numbered line stays on the
    # screen: one drawn twice or missed shows.
    rows, cols = 24, 40
    model = GatedModel(rows, cols)
    feeder = ScreenFeeder(model, lambda: None)
    feeder.start()
    welcoming = threading.Event()

    def settle(timeout: float) -> bool:
        welcoming.set()  # the server waits for the model: the viewer is being welcomed
        return feeder.drained(timeout)

    tap = Tap(
        feed=feeder.put,
        settle=settle,
        paint=lambda: model.painted(render),
        size=model.size,
        keys=lambda data: None,
    )
    sockets = tmp_path / "sockets"
    sockets.mkdir(mode=0o700)
    server = AttachServer("run-1", tmp_path, tap, sockets)
    server.start()
    try:
        server.output(lines(0, 5))
        assert model.entered.wait(5)  # the feeder is inside the model, held there
        server.output(lines(5, 8))
        sock, reader = connect(server)
        assert welcoming.wait(10)
        server.output(lines(8, 11))  # while the viewer waits for its screen
        model.gate.set()
        frames = receive(sock, reader, 2)
        assert frames[0][0] == wire.HELLO
        server.output(lines(11, 14))
        server.end("complete", 0, "done")
        while frames[-1][0] != wire.END:
            frames += receive(sock, reader, 1)
        assert feeder.drained(5)
        expected = list(model.snapshot().lines)
        assert [line.strip() for line in expected[:15]] == [f"line {i}" for i in range(14)] + [""]
        assert viewer_screen(frames, rows, cols) == expected
    finally:
        model.gate.set()
        server.close()
        feeder.stop()


def test_the_relay_never_waits_for_the_model_to_welcome_a_viewer(tmp_path: Path) -> None:
    # The model is waited for (settle) and painted by the server thread only, never while
    # it holds the lock output() takes: the relay only appends.
    server_box: list[AttachServer] = []
    under_lock: list[str] = []
    behind = threading.Event()
    model = Model()

    welcoming = threading.Event()

    def settle(timeout: float) -> bool:
        welcoming.set()
        if server_box[0]._lock.locked():
            under_lock.append("settle")
        return behind.wait(timeout)

    def paint() -> tuple[bytes, int | None]:
        if server_box[0]._lock.locked():
            under_lock.append("paint")
        # Until released, the model shows none of the output (a model far behind).
        return (b"SCREEN:" + bytes(model.fed), len(model.fed)) if behind.is_set() else (b"", 0)

    tap = Tap(feed=model.feed, settle=settle, paint=paint, size=lambda: (24, 80), keys=print)
    sockets = tmp_path / "sockets"
    sockets.mkdir(mode=0o700)
    server = AttachServer("run-1", tmp_path, tap, sockets)
    server_box.append(server)
    server.start()
    try:
        server.output(b"before ")
        sock, reader = connect(server)
        assert welcoming.wait(10)
        for _ in range(100):
            server.output(b"x")  # while the welcome waits: must not wait with it
        behind.set()
        frames = receive(sock, reader, 2)
        assert frames[1] == (wire.OUTPUT, b"SCREEN:before " + b"x" * 100)
        assert under_lock == []
    finally:
        behind.set()
        server.close()
