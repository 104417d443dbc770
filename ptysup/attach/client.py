"""`ptysup attach RUN`: watch a running run's terminal from another terminal.

The viewer's terminal switches to its alternate screen, shows the run's screen as ptysup
models it, then the agent's output live. Keys do nothing (read-only) unless `--rw`;
Ctrl-] d detaches (and, read-only, so does Ctrl-C); the terminal is left as it was, the
modes the agent's output switched on switched off again. When the run ends, its outcome
is printed and its exit code is this command's.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from ptysup.argspec import ArgSpec
from ptysup.attach import wire
from ptysup.attach.server import RECORD
from ptysup.exitcodes import ExitCode
from ptysup.store import readback
from ptysup.store.rundir import RUNS_DIR, RunDir, RunNotFound, find_run_dir, progress
from ptysup.terminal.modes import ModeTracker
from ptysup.terminal.reports import REPORTS, report_end
from ptysup.terminal.tty_ import raw, window_size

USAGE = "usage: ptysup attach RUN [--rw]   (RUN: a run id, a unique prefix of one, or last)"
ARGS = ArgSpec(flags=("--rw",), args=("file",))
DETACH_PREFIX = b"\x1d"  # Ctrl-]
DETACH_KEY = b"d"
CTRL_C = b"\x03"
_Message = tuple[bytes, bytes]  # kind, payload
LOST = 1  # the connection ended without the run's end (dropped, or ptysup was killed)


class Refused(Exception):
    """Nothing to attach to; the message is one line."""


def main(
    args: Sequence[str],
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    stderr: TextIO = sys.stderr,
    runs_dir: Path = RUNS_DIR,
) -> int:
    """Entry point of `ptysup attach`."""
    rest = [a for a in args if a != "--rw"]
    if any(a in ("-h", "--help") for a in rest):
        print(USAGE, file=sys.stdout)
        return 0
    if len(rest) != 1 or rest[0].startswith("-"):
        print(f"ptysup: {USAGE}", file=stderr)
        return int(ExitCode.USAGE)
    try:
        sock, run_id = connect(rest[0], runs_dir)
    except Refused as exc:
        print(f"ptysup: {exc}", file=stderr)
        return int(ExitCode.USAGE)
    with sock:
        view = View(
            sock,
            run_id,
            stdin if stdin is not None else sys.stdin.buffer,
            stdout if stdout is not None else sys.stdout.buffer,
            rw="--rw" in args,
        )
        code, message = view.run(stderr)
    print(f"ptysup attach: {message}", file=stderr)
    return code


def connect(run: str, runs_dir: Path) -> tuple[socket.socket, str]:
    """A connection to RUN's attach socket, or Refused saying why there is none."""
    try:
        run_dir = find_run_dir(run, runs_dir)
    except RunNotFound as exc:
        raise Refused(str(exc)) from None
    return open_socket(run_dir), run_dir.run_id


def open_socket(run_dir: RunDir) -> socket.socket:
    """A connection to the attach socket of the run in `run_dir`, or Refused saying why
    there is none (it is not running, it has no socket, or the socket is not ours)."""
    run_id = run_dir.run_id
    record = run_dir.path / RECORD
    if run_dir.holder() is None:
        try:
            events = run_dir.events_file()
            done = run_dir.read_progress(events) if events.is_file() else progress([])
        except RunNotFound as exc:  # a damaged run.json or log: it is not running either
            raise Refused(f"run {run_id} is not running, and {exc}") from None
        ended = f"it ended: {done.outcome}" if done.outcome else "its process is gone"
        raise Refused(
            f"run {run_id} is not running ({ended}); watch it with: ptysup replay {run_id}"
        )
    try:
        path = readback.read_text(record, 4096).strip()  # a socket's path: a short line
    except OSError:
        raise Refused(f"run {run_id} has no attach socket (see its events)") from None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError as exc:
        sock.close()
        raise Refused(f"cannot reach run {run_id}: {exc.strerror or exc}{_whose(exc)}") from None
    return sock


def _whose(exc: OSError) -> str:
    """Why a socket may not be ours to use: said with the error."""
    if isinstance(exc, PermissionError):
        return " (only the user who started a run may attach to it or steer it)"
    return ""


class View:
    """One viewer's session: the socket's output to the terminal, keys to the socket."""

    def __init__(
        self, sock: socket.socket, run_id: str, stdin: BinaryIO, stdout: BinaryIO, rw: bool
    ) -> None:
        self._sock = sock
        self._run_id = run_id
        self._in = stdin
        self._out = stdout
        self._rw = rw
        self._modes = ModeTracker()
        self._prefix = False  # Ctrl-] was the last key

    def run(self, stderr: TextIO) -> tuple[int, str]:
        """Watch until the run ends or the viewer detaches: (exit code, what happened)."""
        self._sock.sendall(wire.json_frame(wire.CONNECT, {"rw": self._rw}))
        out_fd = self._out.fileno()
        in_fd = self._in.fileno() if os.isatty(self._in.fileno()) else None
        terminal = os.isatty(out_fd)
        reader = wire.Reader()
        first = self._hello(reader)
        if first is None:
            return LOST, f"run {self._run_id} closed the connection"
        hello, early = first
        if terminal:
            rows, cols = window_size(out_fd)
            if rows < hello["rows"] or cols < hello["cols"]:  # larger is fine
                print(
                    f"ptysup attach: this terminal is {cols}x{rows}, the run's "
                    f"{hello['cols']}x{hello['rows']}: smaller: lines may wrap or be cut",
                    file=stderr,
                )
            self._write(b"\x1b[?1049h", track=False)
        try:
            with raw(in_fd):
                return self._loop(reader, early, in_fd)
        finally:
            if terminal:
                self._write(self._modes.reset() + b"\x1b[?1049l", track=False)

    def _hello(
        self, reader: wire.Reader
    ) -> tuple[dict[str, Any], list[tuple[bytes, bytes]]] | None:
        messages: list[_Message] = []
        while not messages:
            data = self._sock.recv(65536)
            if not data:
                return None
            messages = list(reader.feed(data))
        kind, payload = messages[0]
        if kind != wire.HELLO:
            raise wire.WireError(f"expected a hello, got {kind!r}")
        return json.loads(payload), messages[1:]

    def _loop(
        self, reader: wire.Reader, early: list[tuple[bytes, bytes]], in_fd: int | None
    ) -> tuple[int, str]:
        pending = early
        fds: list[Any] = [self._sock] + ([in_fd] if in_fd is not None else [])
        while True:
            for kind, payload in pending:
                done = self._message(kind, payload)
                if done is not None:
                    return done
            pending = []
            ready, _, _ = select.select(fds, [], [])
            if in_fd is not None and in_fd in ready:
                keys = os.read(in_fd, 4096)
                if not keys:
                    fds.remove(in_fd)
                elif self._keys(keys):
                    return 0, f"detached; run {self._run_id} goes on (ptysup attach {self._run_id})"
            if self._sock in ready:
                data = self._sock.recv(1 << 20)
                if not data:
                    return LOST, f"lost run {self._run_id}: the connection closed"
                pending = list(reader.feed(data))

    def _message(self, kind: bytes, payload: bytes) -> tuple[int, str] | None:
        if kind == wire.OUTPUT:
            self._write(payload)
        elif kind == wire.END:
            end = json.loads(payload)
            return int(end["exit_code"]), (
                f"run {self._run_id} ended: {end['outcome']} (exit {end['exit_code']})"
            )
        elif kind == wire.DROPPED:
            return LOST, f"run {self._run_id} dropped this viewer: {payload.decode()}"
        return None

    def _keys(self, data: bytes) -> bool:
        """Handle the viewer's keys; True to detach."""
        out = bytearray()
        i = 0
        while i < len(data):
            if self._prefix and (end := report_end(data, i)) is not None:
                i = end  # the terminal answering between Ctrl-] and d (dropped below anyway)
                continue
            byte = data[i : i + 1]
            i += 1
            if self._prefix:
                self._prefix = False
                if byte == DETACH_KEY:
                    return True
                out += DETACH_PREFIX if byte == DETACH_PREFIX else DETACH_PREFIX + byte
            elif byte == DETACH_PREFIX:
                self._prefix = True
            elif byte == CTRL_C and not self._rw:
                return True
            else:
                out += byte
        # The viewer's terminal answers the agent's queries (cursor position, colours,
        # focus) on stdin too: those answers are the run's terminal's to give, not keys.
        keys = REPORTS.sub(b"", bytes(out))
        if keys and self._rw:
            self._sock.sendall(wire.frame(wire.INPUT, keys))
        return False

    def _write(self, data: bytes, track: bool = True) -> None:
        if track:
            self._modes.feed(data)
        fd = self._out.fileno()
        view = memoryview(data)
        while view:
            with contextlib.suppress(InterruptedError):
                view = view[os.write(fd, view) :]
