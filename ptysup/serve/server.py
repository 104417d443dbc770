"""The HTTP server: the standard library's, one thread per request, read-only.

Every request passes the Guard (Host, then token) before the Router sees it; every
answer, refusals included, carries the security headers.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from ptysup.serve.routes import TEXT, Response, Router, Stream
from ptysup.serve.security import HEADERS, Guard, Verdict


class Server(ThreadingHTTPServer):
    """The page's server; `stopping` ends the live streams when it shuts down."""

    daemon_threads = True
    block_on_close = False

    def __init__(
        self, address: tuple[str, int], token: str, make_router: Callable[..., Router]
    ) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, Handler)
        self.stopping = threading.Event()
        self.guard = Guard(token, address[0], self.port)  # the port is known once bound
        self.router = make_router(self.stopping.wait, time.monotonic)

    @property
    def port(self) -> int:
        """The port bound (the one picked when 0 was asked)."""
        return int(self.server_address[1])

    def stop(self) -> None:
        """End the live streams and stop serving (from any thread but the serving one)."""
        self.stopping.set()
        self.shutdown()
        self.server_close()


class Handler(BaseHTTPRequestHandler):
    """One request: guard, route, answer."""

    server: Server
    protocol_version = "HTTP/1.1"

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
        except (BrokenPipeError, ConnectionResetError):
            pass  # the page went away: nothing to tell anyone
