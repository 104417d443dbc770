"""A scripted fake model API on 127.0.0.1 for the real agents, one wire per API
(ptysup/testing/wires/: Anthropic Messages for Claude Code, ...).

    with FakeModel(Scenario.load(path), workdir=project) as fm:
        run claude with ANTHROPIC_BASE_URL=fm.url ...
        fm.requests  # what the model received

or as a process: `python -m ptysup.testing.fakemodel --scenario FILE --workdir DIR`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from ptysup.supervisor.prompt import SUPERVISOR_MARKER
from ptysup.testing import wires
from ptysup.testing.conversation import RequestKind
from ptysup.testing.player import Choice, Player
from ptysup.testing.scenario import Scenario, Step
from ptysup.testing.wire import new_id
from ptysup.testing.wires import Reading, Reply, Wire

__all__ = ["FakeModel", "RecordedRequest", "Recorder", "RequestKind", "Scenario", "main"]


@dataclass(frozen=True)
class RecordedRequest:
    """One request the fake model received and how it answered."""

    kind: RequestKind
    human_text: str
    body: Mapping[str, Any]
    time: float
    path: str
    session_id: str
    rule: str | None
    step_index: int
    status: int
    size: int = 0  # bytes of the request body as it came over the wire

    def to_json(self) -> dict[str, object]:
        """The JSONL log form."""
        return {
            "time": self.time,
            "kind": self.kind.value,
            "path": self.path,
            "session_id": self.session_id,
            "rule": self.rule,
            "step_index": self.step_index,
            "status": self.status,
            "size": self.size,
            "human_text": self.human_text,
            "body": self.body,
        }


class Recorder:
    """The thread-safe list of requests, mirrored to a JSONL file, with waiting."""

    def __init__(self, log_path: Path | None) -> None:
        self._log_path = log_path
        self._requests: list[RecordedRequest] = []
        self._changed = threading.Condition()

    def add(self, request: RecordedRequest) -> None:
        """Record REQUEST and wake anyone waiting."""
        with self._changed:
            self._requests.append(request)
            if self._log_path is not None:
                with self._log_path.open("a", encoding="utf-8") as log:
                    log.write(json.dumps(request.to_json(), ensure_ascii=False) + "\n")
            self._changed.notify_all()

    def snapshot(self) -> tuple[RecordedRequest, ...]:
        """All requests so far, oldest first."""
        with self._changed:
            return tuple(self._requests)

    def wait_for(
        self, predicate: Callable[[RecordedRequest], bool], timeout: float
    ) -> RecordedRequest:
        """The first recorded request satisfying PREDICATE, waiting up to TIMEOUT seconds."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for request in self._requests:
                    if predicate(request):
                        return request
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"no matching request within {timeout}s")
                self._changed.wait(remaining)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], model: FakeModel) -> None:
        super().__init__(address, _Handler)
        self.model = model


class _Handler(BaseHTTPRequestHandler):
    # Claude Code (Bun) keeps connections alive between requests.
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the Recorder is the log."""

    def do_HEAD(self) -> None:
        # Claude Code 2.1.197 sends `HEAD /` at startup (a connection warm-up).
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        self._reply(wires.WIRES[0].error(404, f"Not found: GET {self.path}"))

    def do_POST(self) -> None:
        raw = self._read_body()
        route = urlsplit(self.path).path
        found = wires.find(route)
        if found is None:
            self._reply(wires.WIRES[0].error(404, f"Not found: POST {self.path}"))
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self._reply(found.error(400, "request body is not a JSON object"))
            return
        self._answer(found, route, body, len(raw))

    def _answer(self, found: Wire, route: str, body: dict[str, Any], size: int) -> None:
        model = self.server.model
        headers = {k.lower(): v for k, v in self.headers.items()}
        reading = dataclasses.replace(
            found.read(route, body, headers, model.marker), wire=found.name
        )
        if reading.kind is RequestKind.COUNT_TOKENS:  # answered by the wire, not scripted
            model.record(reading, body, self.path, None, 200, size)
            self._reply(found.reply(Step(), route, body, reading))
            return
        choice = model.player.choose(reading)
        status = choice.step.error or 200
        model.record(reading, body, self.path, choice, status, size)
        if choice.step.delay and model.stopping.wait(choice.step.delay):
            # Closing: drop the connection so the client sees the server go away.
            self.close_connection = True
            return
        if choice.step.error is not None:
            self._reply(found.error(choice.step.error))
            return
        self._reply(found.reply(choice.step, route, body, reading))

    def _read_body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            return self._read_chunked()
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _read_chunked(self) -> bytes:
        parts: list[bytes] = []
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return b"".join(parts)
            parts.append(self.rfile.read(size))
            self.rfile.readline()

    def _reply(self, reply: Reply) -> None:
        try:
            self.send_response(reply.status)
            self.send_header("content-type", reply.content_type)
            self.send_header("content-length", str(len(reply.data)))
            self.send_header("request-id", new_id("req"))
            for key, value in reply.headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(reply.data)
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up (e.g. a supervisor killed during a scripted delay).
            self.close_connection = True


class FakeModel:
    """The fake model API server (every wire at once), in a background thread while used
    as a context."""

    def __init__(
        self,
        scenario: Scenario,
        workdir: Path,
        log_path: Path | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        marker: str = SUPERVISOR_MARKER,
    ) -> None:
        self.workdir = Path(workdir).resolve()
        self.player = Player(scenario, self.workdir)
        self.marker = marker
        self.stopping = threading.Event()
        self._recorder = Recorder(log_path)
        self._address = (host, port)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The base URL (ANTHROPIC_BASE_URL; other agents add their API's path)."""
        host, port = self._bound()
        return f"http://{host}:{port}"

    @property
    def port(self) -> int:
        """The bound TCP port."""
        return self._bound()[1]

    @property
    def requests(self) -> tuple[RecordedRequest, ...]:
        """Every request received so far, oldest first."""
        return self._recorder.snapshot()

    def requests_of(self, kind: RequestKind) -> tuple[RecordedRequest, ...]:
        """The requests of one KIND."""
        return tuple(r for r in self.requests if r.kind is kind)

    def wait_for(
        self, predicate: Callable[[RecordedRequest], bool], timeout: float = 10.0
    ) -> RecordedRequest:
        """Block until a request satisfying PREDICATE has been received (TimeoutError)."""
        return self._recorder.wait_for(predicate, timeout)

    def record(
        self,
        reading: Reading,
        body: Mapping[str, Any],
        path: str,
        choice: Choice | None,
        status: int,
        size: int = 0,
    ) -> None:
        """Record one request (called by the server threads)."""
        self._recorder.add(
            RecordedRequest(
                kind=reading.kind,
                human_text=reading.human_text,
                body=body,
                time=time.time(),
                path=path,
                session_id=reading.session_id,
                rule=choice.rule if choice else None,
                step_index=choice.step_index if choice else 0,
                status=status,
                size=size,
            )
        )

    def start(self) -> FakeModel:
        """Bind and serve in a daemon thread."""
        self._server = _Server(self._address, self)
        # A short poll interval: shutdown() waits up to one interval.
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="fakemodel", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving; scripted delays in progress end at once without a reply."""
        self.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        self._server = None
        self._thread = None

    def __enter__(self) -> FakeModel:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _bound(self) -> tuple[str, int]:
        if self._server is None:
            raise RuntimeError("FakeModel is not running")
        host, port = self._server.server_address[:2]
        return str(host), int(port)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a scenario until SIGTERM or SIGINT; print the URL first."""
    parser = argparse.ArgumentParser(prog="python -m ptysup.testing.fakemodel")
    parser.add_argument("--scenario", type=Path, required=True)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", type=Path, help="write the bound port here")
    parser.add_argument("--log", type=Path, help="append every request here as JSONL")
    parser.add_argument("--seed", action="store_true", help="write the scenario's files first")
    args = parser.parse_args(argv)
    try:
        scenario = Scenario.load(args.scenario)
    except (OSError, ValueError) as exc:
        print(f"ptysup: cannot load scenario {args.scenario}: {exc}", file=sys.stderr)
        return 2
    if args.seed:
        scenario.seed(args.workdir)
    # Blocked before the server threads start, so they inherit the mask and only
    # sigwait below sees the signals.
    stop_signals = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
    with FakeModel(scenario, args.workdir, log_path=args.log, port=args.port) as fm:
        if args.port_file is not None:
            partial = args.port_file.with_name(args.port_file.name + ".tmp")
            partial.write_text(f"{fm.port}\n", encoding="utf-8")
            partial.replace(args.port_file)
        print(fm.url, flush=True)
        signal.sigwait(stop_signals)
    return 0


if __name__ == "__main__":
    sys.exit(main())
