"""The waiting room: connections until they have sent a whole request head, in one thread.

A connection costs no thread and no slot while it waits here: one selector reads every
waiting connection's bytes as they come. Only a whole head leaves (to `on_head`, which
checks the token and, for a request that carries it, takes a slot and a thread), so a
crowd of connections that send nothing, or send half a request, or trickle it a byte at
a time, cannot keep anyone with the token out (issue 30: 64 idle connections used to take
every slot). Each head must arrive whole within `head_timeout` of the connection's arrival
(or of its previous answer, for a connection kept alive), however slowly it trickles;
at most `max_waiting` wait at once, and one more pushes the longest-waiting out.
"""

from __future__ import annotations

import contextlib
import queue
import re
import selectors
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

MAX_HEAD = 64 * 1024  # a request head bigger than this is refused (431)
_HEAD_END = re.compile(rb"\r?\n\r?\n")
_ACCEPT_BURST = 64  # connections accepted per wake-up: expiry checks still run between


@dataclass
class Waiting:
    """One connection waiting for its request's head to arrive whole."""

    sock: socket.socket
    address: object
    deadline: float
    buffer: bytearray = field(default_factory=bytearray)


# on_head(connection, head, rest): the head has arrived whole (`rest`: whatever came after
# it, the start of a next request); the connection has left the waiting room.
OnHead = Callable[[Waiting, bytes, bytes], None]
# too_big(connection): the head passed MAX_HEAD; the connection has left the waiting room.
TooBig = Callable[[Waiting], None]


class Reception:
    """Accepts connections and holds them until their head has arrived (see the module)."""

    def __init__(
        self,
        listener: socket.socket,
        on_head: OnHead,
        too_big: TooBig,
        head_timeout: float,
        max_waiting: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._listener = listener
        self._on_head = on_head
        self._too_big = too_big
        self._head_timeout = head_timeout
        self._max_waiting = max_waiting
        self._clock = clock
        self._waiting: dict[socket.socket, Waiting] = {}  # oldest first
        self._returned: queue.SimpleQueue[tuple[socket.socket, object, bytes]] = queue.SimpleQueue()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._stopping = threading.Event()
        self._paused_until = 0.0  # accept paused (out of file descriptors) until then
        self._selector = selectors.DefaultSelector()

    def give_back(self, sock: socket.socket, address: object, rest: bytes) -> None:
        """A connection kept alive after its answer waits for its next request here (from
        any thread); `rest` is what it sent after its last head."""
        if self._stopping.is_set():
            close(sock)
            return
        self._returned.put((sock, address, rest))
        self._wake()

    def stop(self) -> None:
        """End serve_forever (from any thread); it closes every waiting connection."""
        self._stopping.set()
        self._wake()

    def serve_forever(self) -> None:
        """Accept and read until stop()."""
        self._listener.setblocking(False)
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        try:
            while not self._stopping.is_set():
                self._once()
        finally:
            for waiting in list(self._waiting.values()):
                self._leave(waiting)
                close(waiting.sock)
            while not self._returned.empty():
                close(self._returned.get()[0])
            self._selector.close()
            self._wake_r.close()
            self._wake_w.close()

    def _once(self) -> None:
        now = self._clock()
        for key, _ in self._selector.select(self._timeout(now)):
            if key.fileobj is self._listener:
                self._accept()
            elif key.fileobj is self._wake_r:
                self._take_returned()
            else:
                waiting = self._waiting.get(key.fileobj)  # type: ignore[call-overload]
                if waiting is not None:  # not pushed out by an arrival of this round
                    self._read(waiting)
        self._expire(self._clock())
        if self._paused_until and self._clock() >= self._paused_until:
            self._paused_until = 0.0
            self._selector.register(self._listener, selectors.EVENT_READ)

    def _timeout(self, now: float) -> float:
        """Until the next deadline (a second at most: nothing is missed by waking up)."""
        soonest = min((w.deadline for w in self._waiting.values()), default=now + 1.0)
        if self._paused_until:
            soonest = min(soonest, self._paused_until)
        return min(max(soonest - now, 0.0), 1.0)

    def _accept(self) -> None:
        for _ in range(_ACCEPT_BURST):
            try:
                sock, address = self._listener.accept()
            except BlockingIOError:
                return
            except OSError:  # out of file descriptors: make room, or wait for some
                if not self._push_out_oldest():
                    self._selector.unregister(self._listener)
                    self._paused_until = self._clock() + 0.1
                return
            self._enter(sock, address, b"")

    def _take_returned(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while self._wake_r.recv(4096):
                pass
        while not self._returned.empty():
            sock, address, rest = self._returned.get()
            self._enter(sock, address, rest)

    def _enter(self, sock: socket.socket, address: object, rest: bytes) -> None:
        if len(self._waiting) >= self._max_waiting:
            self._push_out_oldest()
        sock.setblocking(False)
        waiting = Waiting(sock, address, self._clock() + self._head_timeout, bytearray(rest))
        self._waiting[sock] = waiting
        self._selector.register(sock, selectors.EVENT_READ)
        self._check(waiting)  # a next request may have come with the last one

    def _read(self, waiting: Waiting) -> None:
        try:
            data = waiting.sock.recv(MAX_HEAD)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:  # it went away
            self._leave(waiting)
            close(waiting.sock)
            return
        waiting.buffer += data
        self._check(waiting)

    def _check(self, waiting: Waiting) -> None:
        """Hand the head on once it is whole (or too big to ever be)."""
        buffer = waiting.buffer
        while buffer.startswith((b"\r", b"\n")):  # blank lines before a request are allowed
            del buffer[:1]
        end = _HEAD_END.search(buffer, 0, MAX_HEAD + 4)
        if end is not None:
            self._leave(waiting)
            self._on_head(waiting, bytes(buffer[: end.end()]), bytes(buffer[end.end() :]))
        elif len(buffer) > MAX_HEAD:
            self._leave(waiting)
            self._too_big(waiting)

    def _expire(self, now: float) -> None:
        for waiting in [w for w in self._waiting.values() if w.deadline <= now]:
            self._leave(waiting)
            close(waiting.sock)

    def _push_out_oldest(self) -> bool:
        oldest = next(iter(self._waiting.values()), None)
        if oldest is None:
            return False
        self._leave(oldest)
        close(oldest.sock)
        return True

    def _leave(self, waiting: Waiting) -> None:
        del self._waiting[waiting.sock]
        self._selector.unregister(waiting.sock)

    def _wake(self) -> None:
        with contextlib.suppress(OSError):  # full (a wake-up is pending anyway) or closed
            self._wake_w.send(b"x")


def answer_and_close(sock: socket.socket, data: bytes) -> None:
    """Send a short answer without waiting on the other end, then close: the waiting
    room's thread must never be held up by a client that does not read."""
    try:
        sock.setblocking(False)
        sock.send(data)
        # What it sent already is read, so closing does not reset the answer away.
        sock.recv(MAX_HEAD)
    except OSError:
        pass  # nothing sent (or it is gone): the close alone says no
    close(sock)


def close(sock: socket.socket) -> None:
    """Close a connection (already closed, or reset: nothing to do)."""
    with contextlib.suppress(OSError):
        sock.close()
