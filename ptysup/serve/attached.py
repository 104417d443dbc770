"""A live run's terminal from its attach socket, as server-sent events for the control page.

The page connects as `ptysup attach RUN` does without --rw (a viewer that cannot type):
the run sends its screen as its model has it, then every byte of the agent's output. The
bytes go to the page in base64 (`output` events): a chunk may end inside a UTF-8
character, and xterm.js decodes the bytes as the run's own terminal would. `hello` gives
the agent's terminal size first; `end` the outcome; `gone` why there is nothing (more) to
show. The server's stopping and each write's timeout end the stream, and with it the
connection to the run.
"""

from __future__ import annotations

import base64
import contextlib
import json
import select
import socket
from collections.abc import Callable, Iterator

from ptysup.attach import wire
from ptysup.attach.client import Refused
from ptysup.serve.stream import KEEPALIVE_S, POLL_S, sse

_READ = 1 << 20


def live(
    connect: Callable[[], socket.socket],
    wait: Callable[[float], bool],
    clock: Callable[[], float],
) -> Iterator[bytes]:
    """The SSE stream of the run `connect()` reaches; `wait(s)` says True when the server
    is shutting down."""
    try:
        sock = connect()
    except Refused as exc:
        yield sse({"reason": str(exc)}, event="gone")
        return
    with sock:
        try:
            sock.sendall(wire.json_frame(wire.CONNECT, {"rw": False}))
        except OSError as exc:
            yield sse({"reason": f"the run closed the connection: {exc}"}, event="gone")
            return
        yield from _relay(sock, wait, clock)


def _relay(
    sock: socket.socket, wait: Callable[[float], bool], clock: Callable[[], float]
) -> Iterator[bytes]:
    reader = wire.Reader()
    last_sent = clock()
    while True:
        ready, _, _ = select.select([sock], [], [], POLL_S)
        if not ready:
            if wait(0):
                return
            if clock() - last_sent >= KEEPALIVE_S:
                yield b": keepalive\n\n"
                last_sent = clock()
            continue
        try:
            data = sock.recv(_READ)
        except OSError:
            data = b""
        if not data:
            yield sse({"reason": "the run closed the connection"}, event="gone")
            return
        try:
            messages = list(reader.feed(data))
        except wire.WireError as exc:
            yield sse({"reason": f"the run's socket said something unreadable: {exc}"}, "gone")
            return
        for kind, payload in messages:
            event = _event(kind, payload)
            if event is not None:
                yield event
            if kind in (wire.END, wire.DROPPED):
                return
        last_sent = clock()


def _event(kind: bytes, payload: bytes) -> bytes | None:
    """One socket message as the page's event (None for one the page has no use for)."""
    if kind == wire.OUTPUT:
        return sse(base64.b64encode(payload).decode("ascii"), event="output")
    if kind in (wire.HELLO, wire.END):
        with contextlib.suppress(ValueError):
            value = json.loads(payload)
            if isinstance(value, dict):
                return sse(value, event="hello" if kind == wire.HELLO else "end")
        return None
    if kind == wire.DROPPED:
        reason = payload.decode("utf-8", "replace")
        return sse({"reason": f"the run dropped this view: {reason}"}, event="gone")
    return None
