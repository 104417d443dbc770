"""A git remote over HTTP that wants a token, as a hosted repository does: git's own
`git http-backend` (smart HTTP, push included) behind HTTP Basic authentication, on
127.0.0.1. Every request is logged with its time and whether it carried the token."""

from __future__ import annotations

import base64
import contextlib
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


@dataclass(frozen=True)
class Request:
    """One request the remote got."""

    ts: float
    method: str
    path: str
    authorized: bool


@dataclass
class GitServer:
    """The remote's repositories live in `root`; `url(name)` is one's address."""

    root: Path
    user: str
    token: str
    port: int = 0
    requests: list[Request] = field(default_factory=list)

    def url(self, name: str) -> str:
        """The clone URL of the repository `root/name`."""
        return f"http://127.0.0.1:{self.port}/{name}"

    def pushes(self) -> list[Request]:
        """The authorized requests of a push (receive-pack), in order."""
        return [r for r in self.requests if "git-receive-pack" in r.path and r.authorized]


@contextlib.contextmanager
def serve(root: Path, token: str, user: str = "x-access-token") -> Iterator[GitServer]:
    """Serve the bare repositories under ROOT, each request authenticated with TOKEN."""
    server = GitServer(root, user, token)
    expected = "Basic " + base64.b64encode(f"{user}:{token}".encode()).decode()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self._handle()

        def do_POST(self) -> None:
            self._handle()

        def _handle(self) -> None:
            ok = self.headers.get("Authorization") == expected
            server.requests.append(Request(time.time(), self.command, self.path, ok))
            if not ok:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="git"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self._backend()

        def _backend(self) -> None:
            path, _, query = self.path.partition("?")
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            env = {
                "PATH": os.environ.get("PATH", os.defpath),
                "GIT_PROJECT_ROOT": str(root),
                "GIT_HTTP_EXPORT_ALL": "1",
                "REMOTE_USER": user,  # an authenticated user may push (http.receivepack)
                "REMOTE_ADDR": "127.0.0.1",
                "REQUEST_METHOD": self.command,
                "PATH_INFO": path,
                "QUERY_STRING": query,
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(body)),
                "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
                "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
            }
            done = subprocess.run(
                ["git", "http-backend"], input=body, env=env, capture_output=True, check=False
            )
            head, _, payload = done.stdout.partition(b"\r\n\r\n")
            status = 200
            headers = []
            for line in head.decode("latin-1").split("\r\n"):
                name, _, value = line.partition(":")
                if name.lower() == "status":
                    status = int(value.split()[0])
                elif name:
                    headers.append((name, value.strip()))
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, name="git-server", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()
