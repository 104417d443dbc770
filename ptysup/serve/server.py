"""The HTTP server: the standard library's, one thread per request, read-only.

Every request passes the Guard (Host, then token) before the Router sees it; every
answer, refusals included, carries the security headers.
"""

from __future__ import annotations

import io
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from ptysup.serve.routes import TEXT, Response, Router, Stream
from ptysup.serve.security import HEADERS, Guard, Verdict

MAX_CONNECTIONS = 64  # open at once (a page uses a few; each holds a thread)
IDLE_TIMEOUT_S = 30.0  # for a request to arrive whole, and for each write to be taken
BACKLOG = 128  # connections the kernel queues before accept


class Server(ThreadingHTTPServer):
    """The page's server; `stopping` ends the live streams when it shuts down.

    Each connection holds a thread, so their number is capped: one more than
    `max_connections` gets a 503 at once and is closed. A request's head must arrive
    whole within `idle_timeout` seconds, and each write must be taken within it; a live
    stream only writes, so a page that watches it for hours is never cut off.
    """

    daemon_threads = True
    block_on_close = False
    request_queue_size = BACKLOG

    def __init__(
        self,
        address: tuple[str, int],
        token: str,
        make_router: Callable[..., Router],
        max_connections: int = MAX_CONNECTIONS,
        idle_timeout: float = IDLE_TIMEOUT_S,
    ) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, Handler)
        self.idle_timeout = idle_timeout
        self._slots = threading.BoundedSemaphore(max_connections)
        self.stopping = threading.Event()
        self.guard = Guard(token, address[0], self.port)  # the port is known once bound
        self.router = make_router(self.stopping.wait, time.monotonic)

    @property
    def port(self) -> int:
        """The port bound (the one picked when 0 was asked)."""
        return int(self.server_address[1])

    def process_request(self, request: Any, client_address: Any) -> None:
        """A thread for the connection if a slot is free, else a 503 and the door."""
        if not self._slots.acquire(blocking=False):
            _refuse_busy(request)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:  # no thread started: its slot is free again
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        """Serve the connection in its thread, then give its slot back."""
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def stop(self) -> None:
        """End the live streams and stop serving (from any thread but the serving one)."""
        self.stopping.set()
        self.shutdown()
        self.server_close()


def _refuse_busy(request: socket.socket) -> None:
    """Tell a connection over the cap to come back later, without waiting on it: the
    serving thread must not be held up by a client that does not read."""
    body = b"too many connections; try again\n"
    head = [
        "HTTP/1.1 503 Service Unavailable",
        f"Content-Type: {TEXT}",
        *(f"{name}: {value}" for name, value in HEADERS),
        "Retry-After: 1",
        "Connection: close",
        f"Content-Length: {len(body)}",
    ]
    try:
        request.setblocking(False)
        request.send("\r\n".join(head).encode() + b"\r\n\r\n" + body)
        # What it sent already is read, so closing does not reset the answer away.
        request.recv(1 << 16)
    except OSError:
        pass  # nothing sent yet (or it is gone): the close alone says no


class _Deadline(io.RawIOBase):
    """The connection's reads, each given what is left of the request's deadline: a
    request's head must arrive whole within the idle time, however slowly it trickles
    (a byte every few seconds would keep a per-read timeout from ever firing)."""

    def __init__(self, sock: socket.socket, seconds: float) -> None:
        super().__init__()
        self._sock = sock
        self._seconds = seconds
        self._deadline = time.monotonic() + seconds

    def start(self) -> None:
        """A new request may begin: its whole head is due within the idle time."""
        self._deadline = time.monotonic() + self._seconds

    def readable(self) -> bool:
        """It is read from."""
        return True

    def readinto(self, buffer: Any) -> int:
        """Bytes of the connection, or TimeoutError once the deadline has passed."""
        self._sock.settimeout(max(self._deadline - time.monotonic(), 0.001))
        return self._sock.recv_into(buffer)


class Handler(BaseHTTPRequestHandler):
    """One request: guard, route, answer."""

    server: Server
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        """Reads have the request's deadline; writes time out after the idle time."""
        self.request.settimeout(self.server.idle_timeout)
        super().setup()
        self.rfile.close()  # the plain reader it made (the socket stays open)
        self._deadline = _Deadline(self.request, self.server.idle_timeout)
        self.rfile = io.BufferedReader(self._deadline)

    def handle_one_request(self) -> None:
        """Read one request (within its deadline) and answer it (each write within the
        idle time: a stalled reader of a stream is let go)."""
        self._deadline.start()
        super().handle_one_request()

    def parse_request(self) -> bool:
        """Read the headers (within the deadline); from here on the connection only
        writes, each within the idle time."""
        parsed = super().parse_request()
        self.request.settimeout(self.server.idle_timeout)
        return parsed

    def do_GET(self) -> None:
        """Answer a GET."""
        self._answer(head=False)

    def do_HEAD(self) -> None:
        """Answer a HEAD like a GET, without the body."""
        self._answer(head=True)

    def _refuse_method(self) -> None:
        self.close_connection = True  # a body it may have is never read
        verdict = self._verdict(urlsplit(self.path).query)
        if verdict.status:
            self._refuse(verdict, head=False)
            return
        self._send(Response(405, TEXT, b"read-only: only GET\n"), head=False, allow="GET, HEAD")

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_TRACE = do_CONNECT = _refuse_method

    def version_string(self) -> str:
        """The Server header: no Python version for a visitor to look up."""
        return "ptysup"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the terminal ptysup serve runs in is not a request log."""

    def _answer(self, head: bool) -> None:
        url = urlsplit(self.path)
        verdict = self._verdict(url.query)
        if verdict.status:
            self._refuse(verdict, head)
            return
        cookie = self.server.guard.set_cookie() if verdict.from_query else None
        if verdict.from_query and url.path == "/":
            # Keep the token out of the address bar and history: the cookie carries it now.
            self._send(Response(303, TEXT, b""), head, cookie=cookie, location="/")
            return
        answer = self.server.router.get(url.path)
        if isinstance(answer, Stream):
            self._stream(answer, head, cookie)
        else:
            self._send(answer, head, cookie=cookie)

    def _verdict(self, query: str) -> Verdict:
        return self.server.guard.check(self.headers.get("Host"), query, self.headers.get("Cookie"))

    def _refuse(self, verdict: Verdict, head: bool) -> None:
        self._send(Response(verdict.status, TEXT, f"{verdict.reason}\n".encode()), head)

    def _headers(self, status: int, content_type: str, cookie: str | None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for name, value in HEADERS:
            self.send_header(name, value)
        if cookie is not None:
            self.send_header("Set-Cookie", cookie)

    def _send(
        self,
        answer: Response,
        head: bool,
        *,
        cookie: str | None = None,
        location: str | None = None,
        allow: str | None = None,
    ) -> None:
        self._headers(answer.status, answer.content_type, cookie)
        if location is not None:
            self.send_header("Location", location)
        if allow is not None:
            self.send_header("Allow", allow)
        self.send_header("Content-Length", str(len(answer.body)))
        self.end_headers()
        if not head:
            self.wfile.write(answer.body)

    def _stream(self, answer: Stream, head: bool, cookie: str | None) -> None:
        self._headers(answer.status, answer.content_type, cookie)
        for name, value in answer.extra:
            self.send_header(name, value)
        self.send_header("Connection", "close")  # the stream's end is the connection's
        self.end_headers()
        self.close_connection = True
        if head:
            return
        try:
            for chunk in answer.chunks:
                self.wfile.write(chunk)
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            pass  # the page went away (or stopped reading): nothing to tell anyone
