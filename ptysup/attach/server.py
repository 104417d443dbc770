"""The run's side of `ptysup attach`: a Unix socket that fans the agent's output out.

The socket lives in a private directory (0700, the user's own; the repository would do
for the path's length limit of ~107 bytes only by luck) and the run directory's
`attach` file says where. Only the user can connect: the directory's mode, the socket's
0600, and the peer's uid (SO_PEERCRED) all say so.

A viewer gets the screen as the model has it, then every byte of output after that:
the relay hands output to `output()`, which puts it to the screen model's feeder and
appends it to each viewer's buffer, nothing more. A new viewer's buffer starts at the
output's offset when it connected; the server thread then waits for the model to pass
that offset, paints the screen together with the offset it shows, and sends the buffer
from there on, so no byte is drawn twice or missed, and the relay never waits for the
model or a viewer. Each viewer's buffer is bounded: one that falls MAX_BEHIND behind is
dropped with a message. Attaching changes nothing for the agent (no resize, no ^L, no
SIGWINCH).

A connection that sends a steering request (steerproto.py) instead of a viewer's hello
is no viewer: the run's handler (Tap.steer) carries it out in a thread of its own, its
one-line answer is sent back, and the connection is closed.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import socket
import stat
import struct
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ptysup.attach import steerproto, wire

MAX_BEHIND = 8 * 1024 * 1024  # bytes queued for one viewer before it is dropped
SETTLE_S = 0.5  # the longest a new viewer waits for the screen model to catch up
END_FLUSH_S = 2.0  # the longest the run waits for viewers to get the end message
RECORD = "attach"  # in the run directory: the socket's path


class AttachError(Exception):
    """The socket cannot be made (the message is one line)."""


def socket_dir(env: dict[str, str] | None = None) -> Path:
    """The private directory for sockets: $XDG_RUNTIME_DIR/ptysup, else /tmp/ptysup-UID;
    made 0700 if missing, refused if it is not the user's own or others may enter it."""
    env = dict(os.environ) if env is None else env
    runtime = env.get("XDG_RUNTIME_DIR")
    base = Path(runtime) / "ptysup" if runtime else Path(tempfile.gettempdir())
    path = base if runtime else base / f"ptysup-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700, parents=bool(runtime))
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise AttachError(f"{path} is not a directory of this user's")
    if info.st_mode & 0o077:
        raise AttachError(f"{path} may be entered by other users (mode {info.st_mode & 0o777:o})")
    return path


def peer_uid(sock: socket.socket) -> int | None:
    """The connecting process's uid (Linux), or None where the system cannot say."""
    if not hasattr(socket, "SO_PEERCRED"):
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[1])


@dataclass
class _Viewer:
    sock: socket.socket
    reader: wire.Reader = field(default_factory=wire.Reader)
    out: bytearray = field(default_factory=bytearray)
    rw: bool = False
    watching: bool = False  # connected and given the screen: gets output from now on
    dropped: bool = False
    held: bytearray | None = None  # output since it connected, until its screen is painted
    steering: bool = False  # sent a steering request: gets its reply, nothing else


@dataclass
class Tap:
    """What the server needs from the run."""

    feed: Callable[[bytes], int]  # the screen model's feeder (its put): the offset after
    settle: Callable[[float], object]  # wait until the model has every byte fed
    paint: Callable[[], tuple[bytes, int | None]]  # the screen (snapshot.render), its offset
    size: Callable[[], tuple[int, int]]  # the agent's (rows, cols)
    keys: Callable[[bytes], None]  # a read-write viewer's keys, for the agent
    # A steering request (`ptysup send` ...): the line to answer, or steerproto.Refused.
    # Called in a thread of its own: it may wait on the agent for seconds.
    steer: Callable[[steerproto.Request], str] | None = None


class AttachServer:
    """Listens for viewers while the run lasts."""

    def __init__(self, run_id: str, run_dir: Path, tap: Tap, directory: Path) -> None:
        self.run_id = run_id
        self.path = directory / f"{run_id}.sock"
        self._record = run_dir / RECORD
        self._tap = tap
        self._lock = threading.Lock()
        self._viewers: list[_Viewer] = []
        self._offset = 0  # bytes of output put to the model so far (the feeder counts)
        self._ended: bytes | None = None
        self._closing = False
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._thread = threading.Thread(target=self._serve, name="ptysup-attach", daemon=True)

    def start(self) -> None:
        """Bind the socket (0600), say where in the run directory, start serving."""
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # a socket a killed run left behind under this run's id
        old = os.umask(0o177)
        try:
            self._listener.bind(str(self.path))
        finally:
            os.umask(old)
        self._listener.listen(8)
        self._listener.setblocking(False)
        self._record.write_text(str(self.path) + "\n", encoding="utf-8")
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._thread.start()

    def output(self, data: bytes) -> None:
        """The agent's output (relay thread): to the screen model, then to every viewer.
        Only appends: the model's feeder parses in its own thread."""
        with self._lock:
            self._offset = self._tap.feed(data)
            if not self._viewers:
                return
            message = wire.frame(wire.OUTPUT, data)
            for viewer in self._viewers:
                if viewer.dropped:
                    continue
                if viewer.held is not None:  # its screen is being painted
                    viewer.held += data
                    if len(viewer.held) > MAX_BEHIND:
                        self._drop(viewer)
                elif viewer.watching:
                    if len(viewer.out) + len(message) > MAX_BEHIND:
                        self._drop(viewer)
                    else:
                        viewer.out += message
        self._wake()

    def _drop(self, viewer: _Viewer) -> None:
        """(Under the lock.) The viewer fell too far behind: tell it, then let it go."""
        viewer.dropped = True
        viewer.held = None
        viewer.out += wire.frame(
            wire.DROPPED, b"this terminal fell too far behind the run's output"
        )

    @property
    def viewers(self) -> int:
        """How many viewers are watching."""
        with self._lock:
            return sum(v.watching for v in self._viewers)

    def end(self, outcome: str, exit_code: int, reason: str) -> None:
        """Tell every viewer how the run ended, and give them a moment to read it."""
        message = wire.json_frame(
            wire.END, {"outcome": outcome, "exit_code": exit_code, "reason": reason}
        )
        with self._lock:
            self._ended = message
            for viewer in self._viewers:
                if viewer.watching and not viewer.dropped:
                    viewer.out += message
        self._wake()

    def close(self) -> None:
        """Stop listening, let viewers get what is queued (END_FLUSH_S), remove the socket."""
        with self._lock:
            self._closing = True
        self._wake()
        if self._thread.is_alive():
            self._thread.join(timeout=END_FLUSH_S + 1)
        for path in (self.path, self._record):
            with contextlib.suppress(OSError):
                path.unlink()
        if self._thread.is_alive():
            return  # stuck (an agent that reads no input): its fds go with the process
        if not self._thread.ident:  # never started: the thread's own cleanup never ran
            self._selector.close()
            self._listener.close()
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)

    # -- the server thread ------------------------------------------------------------
    def _wake(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self._wake_w, b"!")

    def _serve(self) -> None:
        deadline: float | None = None
        try:
            while True:
                with self._lock:
                    closing = self._closing
                    pending = any(v.out for v in self._viewers)
                if closing:
                    if deadline is None:
                        deadline = time.monotonic() + END_FLUSH_S
                    if not pending or time.monotonic() >= deadline:
                        return
                self._watch_writes()
                for key, _ in self._selector.select(timeout=0.1 if closing else None):
                    if key.fileobj is self._listener:
                        self._accept()
                    elif key.fileobj == self._wake_r:
                        with contextlib.suppress(BlockingIOError):
                            os.read(self._wake_r, 4096)
                    else:
                        self._service(key.data)
        finally:
            with self._lock:
                viewers, self._viewers = self._viewers, []
            for viewer in viewers:
                with contextlib.suppress(OSError):
                    viewer.sock.close()
            self._selector.close()
            self._listener.close()

    def _watch_writes(self) -> None:
        with self._lock:
            for viewer in self._viewers:
                events = selectors.EVENT_READ | (selectors.EVENT_WRITE if viewer.out else 0)
                self._selector.modify(viewer.sock, events, viewer)

    def _accept(self) -> None:
        try:
            sock, _ = self._listener.accept()
        except OSError:  # nothing to accept after all, or out of fds: the next one may do
            return
        try:
            uid = peer_uid(sock)
        except OSError:
            uid = -1
        if uid is not None and uid != os.getuid():
            sock.close()
            return
        sock.setblocking(False)
        viewer = _Viewer(sock)
        with self._lock:
            self._viewers.append(viewer)
        self._selector.register(sock, selectors.EVENT_READ, viewer)

    def _service(self, viewer: _Viewer) -> None:
        try:
            with self._lock:
                if viewer.out:
                    sent = viewer.sock.send(viewer.out)
                    del viewer.out[:sent]
                gone = viewer.dropped and not viewer.out
            if gone:
                raise ConnectionResetError
            try:
                data = viewer.sock.recv(65536)
            except BlockingIOError:
                return
            if not data:
                raise ConnectionResetError
            for kind, payload in viewer.reader.feed(data):
                self._message(viewer, kind, payload)
        except Exception:  # a broken viewer (or a bug in painting) costs only that viewer
            self._forget(viewer)

    def _message(self, viewer: _Viewer, kind: bytes, payload: bytes) -> None:
        if kind == wire.CONNECT and not viewer.watching and not viewer.steering:
            hello: Any = json.loads(payload or b"{}")
            if not isinstance(hello, dict):
                raise wire.WireError("a hello that is not an object")
            viewer.rw = bool(hello.get("rw"))
            self._welcome(viewer)
        elif kind == wire.INPUT and viewer.rw and viewer.watching and self._ended is None:
            self._tap.keys(payload)
        elif kind == wire.STEER and not viewer.watching and not viewer.steering:
            viewer.steering = True
            threading.Thread(
                target=self._steer, args=(viewer, payload), name="ptysup-steer", daemon=True
            ).start()

    def _steer(self, viewer: _Viewer, payload: bytes) -> None:
        """Carry out one steering request and answer it; the connection then closes."""
        try:
            if self._ended is not None or self._tap.steer is None:
                raise steerproto.Refused(f"run {self.run_id} is ending; nothing more is taken")
            answer = steerproto.reply(True, self._tap.steer(steerproto.decode(payload)))
        except steerproto.Refused as exc:
            answer = steerproto.reply(False, str(exc))
        except Exception as exc:  # a bug in the run's handler: said, not a hung client
            answer = steerproto.reply(
                False, f"the run failed to do it: {type(exc).__name__}: {exc}"
            )
        with self._lock:
            viewer.out += wire.json_frame(wire.REPLY, answer)
            viewer.dropped = True  # closed once the reply is sent
        self._wake()

    def _welcome(self, viewer: _Viewer) -> None:
        """The screen as it is, then output from exactly that point on."""
        with self._lock:
            viewer.held, start = bytearray(), self._offset
        # The model catches up without the lock (the relay goes on, into `held`), until
        # the screen it paints shows at least the output up to `start`.
        deadline = time.monotonic() + SETTLE_S
        screen, through = self._tap.paint()
        while (through is None or through < start) and time.monotonic() < deadline:
            self._tap.settle(max(0.0, deadline - time.monotonic()))
            screen, through = self._tap.paint()
        with self._lock:
            if viewer.dropped or viewer.held is None:
                return
            # Painted at `through`: the output after it follows. (A model stuck for
            # SETTLE_S is painted as it is; the output from `start` on then follows.)
            after = viewer.held
            if through is not None and through >= start:
                after = viewer.held[through - start :]
            viewer.held = None
            rows, cols = self._tap.size()
            viewer.out += wire.json_frame(
                wire.HELLO, {"run_id": self.run_id, "rows": rows, "cols": cols}
            )
            viewer.out += wire.frame(wire.OUTPUT, screen)
            if after:
                viewer.out += wire.frame(wire.OUTPUT, bytes(after))
            if self._ended is not None:
                viewer.out += self._ended
            viewer.watching = True

    def _forget(self, viewer: _Viewer) -> None:
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(viewer.sock)
        with self._lock, contextlib.suppress(ValueError):
            self._viewers.remove(viewer)
        with contextlib.suppress(OSError):
            viewer.sock.close()
