"""The HTTP server: a waiting room for connections, a thread for each request let in.

A connection waits in the reception (one thread for all of them) until its request's head
has arrived whole; the Guard (Host, then token) judges the head there, and only a request
that carries the token takes one of the `max_connections` slots and a thread. Every
answer, refusals included, carries the security headers. A POST is a control request
(`--control`): judged whole on its head too, its small body read in its slot's thread.
"""

from __future__ import annotations

import contextlib
import email.message
import email.utils
import http.client
import io
import resource
import socket
import sys
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from ptysup.serve.reception import MAX_HEAD, Reception, Waiting, answer_and_close, close
from ptysup.serve.routes import CONTROL_PAGE, TEXT, Response, Router, Stream
from ptysup.serve.security import CONTROL_HEADERS, HEADERS, Guard, Verdict

MAX_CONNECTIONS = 64  # requests with the token served at once (each holds a thread)
IDLE_TIMEOUT_S = 10.0  # for a request's head to arrive whole, and for each write to be taken
BACKLOG = 128  # connections the kernel queues before accept
MAX_WAITING = 1024  # connections waiting for their request's head (fewer if fds are few)
BUSY = "too many requests at once; try again"
MAX_BODY = 64 * 1024  # a control request's body (a message to type is the largest)


class Server:
    """The page's server; `stopping` ends the live streams when it shuts down.

    A connection that has not sent a whole request with the token holds no slot and no
    thread: it waits in the reception, at most `idle_timeout` seconds for each request's
    head. A request with the token takes a slot while it is answered; one more than
    `max_connections` at once gets a 503 and is closed. Each write must be taken within
    `idle_timeout`; a live stream only writes, so a page that watches it for hours is never
    cut off.
    """

    def __init__(
        self,
        address: tuple[str, int],
        token: str,
        make_router: Callable[..., Router],
        max_connections: int = MAX_CONNECTIONS,
        idle_timeout: float = IDLE_TIMEOUT_S,
        warn: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
        control_token: str | None = None,
    ) -> None:
        self._warn = warn
        family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self._listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._listener.bind(address)
            self._listener.listen(BACKLOG)
        except OSError:
            self._listener.close()
            raise
        self.idle_timeout = idle_timeout
        self._slots = threading.BoundedSemaphore(max_connections)
        self.stopping = threading.Event()
        # The port is known once bound.
        self.guard = Guard(token, address[0], self.port, control_token)
        self.router = make_router(self.stopping.wait, time.monotonic)
        self._reception = Reception(
            self._listener, self._admit, self._too_big, idle_timeout, waiting_room(max_connections)
        )
        self._served = threading.Event()

    @property
    def port(self) -> int:
        """The port bound (the one picked when 0 was asked)."""
        return int(self._listener.getsockname()[1])

    def serve_forever(self) -> None:
        """Accept and answer until stop()."""
        try:
            self._reception.serve_forever()
        finally:
            self._listener.close()
            self._served.set()

    def stop(self, wait_s: float = 5.0) -> None:
        """End the live streams and stop serving (from another thread than serve_forever's)."""
        self.stopping.set()
        self._reception.stop()
        self._served.wait(wait_s)
        self._listener.close()

    def _admit(self, waiting: Waiting, head: bytes, rest: bytes) -> None:
        """A whole head: refused in the reception's thread, or served in a thread of its own."""
        parsed = parse_head(head)
        if parsed is None:
            answer_and_close(waiting.sock, plain(400, "a request this server cannot read"))
            return
        method, target, headers = parsed
        verdict = self.verdict(method, urlsplit(target).query, headers)
        if verdict.status:
            answer = plain(verdict.status, verdict.reason, head=method == "HEAD")
            answer_and_close(waiting.sock, answer)
        elif not self._slots.acquire(blocking=False):
            answer_and_close(waiting.sock, plain(503, BUSY))
        else:
            thread = threading.Thread(
                target=self._serve_one, args=(waiting, head, rest), daemon=True
            )
            try:
                thread.start()
            except RuntimeError:  # no thread to be had: as busy as can be
                self._slots.release()
                answer_and_close(waiting.sock, plain(503, BUSY))

    def verdict(self, method: str, query: str, headers: email.message.Message) -> Verdict:
        """The Guard's verdict on a request: a POST is judged as a control request."""
        if method == "POST":
            named = {name: str(headers.get(name, "")) for name in CONTROL_HEADERS}
            return self.guard.check_control(query, named)
        return self.guard.check(headers.get("Host"), query, headers.get("Cookie"))

    def _too_big(self, waiting: Waiting) -> None:
        answer_and_close(waiting.sock, plain(431, f"a request head is at most {MAX_HEAD} bytes"))

    def _serve_one(self, waiting: Waiting, head: bytes, rest: bytes) -> None:
        """Answer one request in this thread; a connection kept alive goes back to wait."""
        keep = False
        try:
            handler = Handler(waiting.sock, waiting.address, self, head, rest)
            keep = not handler.close_connection
        except OSError:  # the page went away, or stopped reading: nothing to tell anyone
            keep = False
        except Exception as exc:  # a bug: said, and the server goes on for the others
            self._warn(f"ptysup: serve: cannot answer a request: {type(exc).__name__}: {exc}")
        finally:
            self._slots.release()
        if keep:
            self._reception.give_back(waiting.sock, waiting.address, rest)
        else:
            with contextlib.suppress(OSError):
                waiting.sock.shutdown(socket.SHUT_WR)
            close(waiting.sock)


def waiting_room(max_connections: int) -> int:
    """How many connections may wait for their head: MAX_WAITING, or fewer when the
    process may open fewer files (each slot's request opens a few too)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_WAITING
    return max(16, min(MAX_WAITING, (soft - 64) // 2 - max_connections))


def parse_head(head: bytes) -> tuple[str, str, http.client.HTTPMessage] | None:
    """A request head's method, target and headers, or None if it is no HTTP/1.x head."""
    line, _, rest = head.partition(b"\n")
    words = line.decode("iso-8859-1").split()
    if len(words) != 3 or not words[2].startswith("HTTP/1."):
        return None
    try:
        headers = http.client.parse_headers(io.BytesIO(rest))
    except http.client.HTTPException:  # too many headers, or one too long
        return None
    return words[0], words[1], headers


def plain(status: int, text: str, *, head: bool = False) -> bytes:
    """A whole short answer, the connection closed after it (the reception's refusals)."""
    body = f"{text}\n".encode()
    lines = [
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}",
        "Server: ptysup",
        f"Date: {email.utils.formatdate(usegmt=True)}",
        f"Content-Type: {TEXT}",
        *(f"{name}: {value}" for name, value in HEADERS),
        *(["Retry-After: 1"] if status == 503 else []),
        "Connection: close",
        f"Content-Length: {len(body)}",
    ]
    return "\r\n".join(lines).encode() + b"\r\n\r\n" + (b"" if head else body)


class _Writer(io.BufferedIOBase):
    """The connection's writes, each sent whole (within the socket's timeout)."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self._sock = sock

    def writable(self) -> bool:
        """It is written to."""
        return True

    def write(self, data: Any) -> int:
        """Send all of `data`."""
        self._sock.sendall(data)
        with memoryview(data) as view:
            return view.nbytes


class Handler(BaseHTTPRequestHandler):
    """One request, its head already read by the reception: guard, route, answer."""

    server: Server  # type: ignore[assignment]  # ours, not a socketserver
    protocol_version = "HTTP/1.1"

    def __init__(
        self, sock: socket.socket, address: Any, server: Server, head: bytes, rest: bytes = b""
    ) -> None:
        self._head = head
        self._rest = rest  # what came after the head: the start of a POST's body
        super().__init__(sock, address, server)  # type: ignore[arg-type]

    def setup(self) -> None:
        """The request is read from its head; each write must be taken within the idle
        time (a stalled reader of a stream is let go)."""
        self.connection = self.request
        self.request.setblocking(True)
        self.request.settimeout(self.server.idle_timeout)
        self.rfile = io.BytesIO(self._head)
        self.wfile = _Writer(self.request)

    def handle(self) -> None:
        """One request: a connection kept alive waits for the next one in the reception."""
        self.close_connection = True
        self.handle_one_request()

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
        if verdict.control:
            answer, allow = Response(405, TEXT, b"only GET, and POST to steer\n"), "GET, HEAD, POST"
        else:
            answer, allow = Response(405, TEXT, b"read-only: only GET\n"), "GET, HEAD"
        self._send(answer, head=False, allow=allow)

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_TRACE = do_CONNECT = _refuse_method

    def do_POST(self) -> None:
        """A control request: judged again here, its body read, handed to the router."""
        self.close_connection = True  # what follows its body is never read as a request
        url = urlsplit(self.path)
        verdict = self.server.verdict("POST", url.query, self.headers)
        if verdict.status:
            self._refuse(verdict, head=False)
            return
        body = self._body()
        if isinstance(body, Response):
            self._send(body, head=False)
            return
        address = self.client_address[0] if isinstance(self.client_address, tuple) else "?"
        self._send(self.server.router.post(url.path, body, str(address)), head=False)

    def _body(self) -> bytes | Response:
        """The POST's body (Content-Length, at most MAX_BODY), or the refusal to send."""
        if self.headers.get("Transfer-Encoding") is not None:
            return Response(411, TEXT, b"a control request says its Content-Length\n")
        length = self.headers.get("Content-Length", "").strip()
        if not length.isdigit():
            return Response(411, TEXT, b"a control request says its Content-Length\n")
        if int(length) > MAX_BODY:
            return Response(413, TEXT, f"a control request is at most {MAX_BODY} bytes\n".encode())
        body = bytearray(self._rest[: int(length)])
        while len(body) < int(length):  # each read within the idle time (the socket's timeout)
            data = self.request.recv(int(length) - len(body))
            if not data:
                raise ConnectionResetError("the body ended early")
            body += data
        return bytes(body)

    def version_string(self) -> str:
        """The Server header: no Python version for a visitor to look up."""
        return "ptysup"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the terminal ptysup serve runs in is not a request log."""

    def _answer(self, head: bool) -> None:
        if _has_body(self.headers):
            self.close_connection = True  # the body is never read: the next bytes are it
        url = urlsplit(self.path)
        verdict = self._verdict(url.query)
        if verdict.status:
            self._refuse(verdict, head)
            return
        cookie = self.server.guard.set_cookie(verdict) if verdict.from_query else None
        if verdict.from_query and url.path in ("/", CONTROL_PAGE):
            # Keep the token out of the address bar and history: the cookie carries it now
            # (the browser keeps the address's #fragment, the run the control page shows).
            self._send(Response(303, TEXT, b""), head, cookie=cookie, location=url.path)
            return
        answer = self.server.router.get(url.path, control=verdict.control)
        if isinstance(answer, Stream):
            self._stream(answer, head, cookie)
        else:
            self._send(answer, head, cookie=cookie)

    def _verdict(self, query: str) -> Verdict:
        return self.server.guard.check(self.headers.get("Host"), query, self.headers.get("Cookie"))

    def _refuse(self, verdict: Verdict, head: bool) -> None:
        self._send(Response(verdict.status, TEXT, f"{verdict.reason}\n".encode()), head)

    def _headers(
        self, status: int, content_type: str, cookie: str | None, csp: str | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for name, value in HEADERS:
            is_csp = name == "Content-Security-Policy"
            self.send_header(name, csp if is_csp and csp is not None else value)
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
        self._headers(answer.status, answer.content_type, cookie, answer.csp)
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


def _has_body(headers: email.message.Message) -> bool:
    """Whether a request says a body follows its head."""
    length = headers.get("Content-Length", "0").strip()
    return headers.get("Transfer-Encoding") is not None or length not in ("", "0")
