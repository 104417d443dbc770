"""The agent's terminal as an asciicast v2 recording (`asciinema play` shows it).

Output comes from the relay (after the person's terminal got it); decisions and typed
text arrive as events, so the recording is also an event sink: a marker (`m`) at each
turn end and decision, an input (`i`) event for each injection.

The relay's cost is one pipe write per batch: a writer process (`castwriter`) encodes
the asciicast lines off the hot path. If that process cannot start, the lines are
encoded here instead, slower but the same.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import fcntl
import json
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ptysup.terminal import castwriter
from ptysup.terminal.castread import load_cast
from ptysup.userfile import open_regular

if TYPE_CHECKING:
    from ptysup.events import Event

PIPE_SIZE = 1 << 20  # what the writer may fall behind before frames wait in memory
STALL_S = 0.05  # a full pipe: how long the relay waits for the writer before it is stalled
BEHIND_MAX = 16 << 20  # frames kept here while the writer is stalled; beyond, it stops
WRITER_WAIT_S = 30.0  # at close, for the writer to encode what a flood left spooled
DRAIN_POLL_S = 0.5  # the drain thread looks this often whether the run is over
DRAIN_GIVE_UP_S = 2.0  # at close, a writer that takes nothing for this long is stalled
COMPLETE_POLL_S = 0.05  # how often a reader looks whether the writer has finished


class Recording:
    """Appends asciicast v2 events to a 0600 file; safe from any thread."""

    def __init__(
        self,
        path: Path,
        rows: int,
        cols: int,
        clock: Callable[[], float] = time.monotonic,
        env: dict[str, str] | None = None,
        *,
        command: str | None = None,
        title: str | None = None,
        writer_process: bool = True,
        wait_at_close: bool = True,
    ) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        # Held until the file is complete: the writer process inherits this open file and
        # with it the lock, which ends when the writer does (see wait_complete).
        fcntl.flock(fd, fcntl.LOCK_EX)
        self.path = path
        self.error: str | None = None  # why the recording is incomplete, if it is
        self._wait_at_close = wait_at_close
        self.finishing_pid: int | None = None  # a writer left to complete the file
        self._clock = clock
        self._start = clock()
        self._lock = threading.Lock()
        self._closed = False
        self._draining = False  # a thread hands over frames kept for a stalled writer
        header: dict[str, Any] = {
            "version": 2,
            "width": cols,
            "height": rows,
            "timestamp": int(time.time()),
        }
        extra = {"command": command, "title": title, "env": env}
        header.update((key, value) for key, value in extra.items() if value)
        os.write(fd, (json.dumps(header) + "\n").encode())
        writer = _WriterProcess.start(fd, path.parent) if writer_process else None
        self._out: _WriterProcess | _InProcess = writer or _InProcess(fd)
        if writer is not None:
            os.close(fd)

    @property
    def writer_pid(self) -> int | None:
        """The writer process's pid (None when encoding in this process)."""
        return self._out.pid if isinstance(self._out, _WriterProcess) else None

    def output(self, data: bytes) -> None:
        """Agent output (split UTF-8 sequences are joined across calls)."""
        self._frame(b"o", data)

    def resize(self, rows: int, cols: int) -> None:
        """The window changed size."""
        self._frame(b"r", f"{cols}x{rows}".encode())

    def marker(self, label: str) -> None:
        """A named point in time (shown by asciinema as a marker)."""
        self._frame(b"m", label.encode("utf-8", "surrogatepass"))

    def typed(self, text: str) -> None:
        """Text ptysup typed into the agent."""
        self._frame(b"i", text.encode("utf-8", "surrogatepass"))

    def write(self, event: Event) -> None:
        """As an event sink: turn ends and decisions become markers, injections inputs."""
        f = event.fields
        if event.event == "turn_end":
            self.marker(f"turn_end:{f.get('kind')}")
        elif event.event == "decision":
            self.marker(f"decision:{f.get('iteration')}:{f.get('action')}")
        elif event.event == "inject":
            self.typed(str(f.get("text", "")))

    @property
    def pending(self) -> int:
        """Bytes of frames waiting in memory for a stalled writer (0 when it keeps up)."""
        with self._lock:
            return self._out.behind if isinstance(self._out, _WriterProcess) else 0

    def close(self) -> None:
        """Complete the file; `error` says why if it could not be."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if isinstance(self._out, _WriterProcess) and not self._wait_at_close:
                failed = self._out.hand_off()
                if failed is None:
                    self.finishing_pid = self._out.pid
            else:
                failed = self._out.finish()
        if failed:  # the writer's own words say more than the broken pipe they caused
            self.error = f"{self.error}; {failed}" if self.error else failed

    def _frame(self, kind: bytes, payload: bytes) -> None:
        with self._lock:
            if self._closed or self.error is not None:
                return
            try:
                self._out.send(kind, self._clock() - self._start, payload)
            except OSError as exc:  # the writer died (EPIPE), or fell too far behind
                self.error = f"cannot write the recording: {exc.strerror or exc}"
                return
            if isinstance(self._out, _WriterProcess) and self._out.behind and not self._draining:
                self._draining = True
                threading.Thread(target=self._drain, name="ptysup-record", daemon=True).start()

    def _drain(self) -> None:
        """While frames wait here, hand them over as the writer takes them (own thread)."""
        assert isinstance(self._out, _WriterProcess)
        while True:
            try:  # not under the lock: close() may close the pipe meanwhile
                writable = self._out.writable(DRAIN_POLL_S)
            except (OSError, ValueError):
                writable = False
            with self._lock:
                if self._closed or self.error is not None or not self._out.behind:
                    self._draining = False
                    return
                if writable:
                    try:
                        self._out.catch_up()
                    except OSError as exc:
                        self.error = f"cannot write the recording: {exc.strerror or exc}"


class _WriterProcess:
    """Frames into a pipe; the castwriter process at its other end writes the file."""

    def __init__(self, proc: subprocess.Popen[bytes], pipe: int) -> None:
        self._proc = proc
        self._pipe = pipe
        self.pid = proc.pid
        # The relay must not wait on the writer: the pipe is non-blocking; a full pipe is
        # given STALL_S to drain (a healthy writer needs a few ms), and what a stalled
        # writer (a stopped process, a hung disk) cannot take waits here, bounded.
        os.set_blocking(pipe, False)
        self._behind: collections.deque[bytes] = collections.deque()
        self._behind_size = 0

    @classmethod
    def start(cls, fd: int, spool_dir: Path) -> _WriterProcess | None:
        """A writer appending to `fd` (None if it cannot start)."""
        if not sys.executable:
            return None
        read_end, write_end = os.pipe()
        set_pipe_size = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux only
        if set_pipe_size is not None:
            with contextlib.suppress(OSError):  # a bigger pipe: fewer waits for the writer
                fcntl.fcntl(write_end, set_pipe_size, PIPE_SIZE)
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", castwriter.__file__, str(spool_dir)],
                stdin=read_end,
                stdout=fd,
                stderr=subprocess.PIPE,
                start_new_session=True,  # no terminal signals: it ends at EOF, and only then
            )
        except OSError:
            os.close(write_end)
            return None
        finally:
            os.close(read_end)
        return cls(proc, write_end)

    def send(self, kind: bytes, seconds: float, payload: bytes) -> None:
        head = castwriter.frame_header(kind, seconds, len(payload))
        if self._behind:  # stalled before: no waiting now, keep the order
            self._keep(head + payload)
            self.catch_up()
        else:
            rest = self._write_soon(head, payload)
            if rest:
                self._keep(rest)
        if self._behind_size > BEHIND_MAX:
            raise OSError(errno.ENOBUFS, f"the writer fell {BEHIND_MAX >> 20} MB behind")

    def _write_soon(self, head: bytes, payload: bytes) -> bytes:
        """Write a frame, waiting at most STALL_S for room; what did not fit."""
        try:
            sent = os.writev(self._pipe, [head, payload])
        except BlockingIOError:
            sent = 0
        if sent == len(head) + len(payload):
            return b""
        rest = memoryview(head + payload)[sent:]
        deadline = time.monotonic() + STALL_S
        while rest:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([], [self._pipe], [], left)[1]:
                return bytes(rest)
            with contextlib.suppress(BlockingIOError):
                rest = rest[os.write(self._pipe, rest) :]
        return b""

    def catch_up(self) -> None:
        """Hand the writer what waits here, as far as the pipe takes it now."""
        while self._behind:
            first = self._behind[0]
            try:
                sent = os.write(self._pipe, first)
            except BlockingIOError:
                return
            self._behind_size -= sent
            if sent < len(first):
                self._behind[0] = first[sent:]
                return
            self._behind.popleft()

    @property
    def behind(self) -> int:
        """Bytes kept here that the pipe has not taken yet."""
        return self._behind_size

    def writable(self, timeout: float) -> bool:
        """Whether the pipe takes more within `timeout` seconds."""
        return bool(select.select([], [self._pipe], [], timeout)[1])

    def _keep(self, data: bytes) -> None:
        self._behind.append(data)
        self._behind_size += len(data)

    def _drain(self, deadline: float) -> bool:
        """Hand over everything kept here, waiting until `deadline` (False if it could not)."""
        while self._behind:
            left = min(deadline - time.monotonic(), DRAIN_GIVE_UP_S)
            if left <= 0 or not self.writable(left):
                return False
            try:
                self.catch_up()
            except OSError:  # the writer died
                return False
        return True

    def hand_off(self) -> str | None:
        """Give the writer all input and let it complete the file on its own (it holds
        the file's lock until then); why not, if it could not take everything."""
        drained = self._drain(time.monotonic() + DRAIN_GIVE_UP_S)
        os.close(self._pipe)
        self._let_go()
        if not drained:
            return f"the writer stopped taking it ({self._behind_size >> 10} KB not written)"
        return None

    def finish(self) -> str | None:
        deadline = time.monotonic() + WRITER_WAIT_S
        drained = self._drain(deadline)
        os.close(self._pipe)  # end of input: the writer encodes what it holds, then exits
        if not drained:
            self._let_go()
            return f"the writer stopped taking it ({self._behind_size >> 10} KB not written)"
        try:
            _, err = self._proc.communicate(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:  # left to finish on its own, after ptysup exits
            self._let_go()
            return f"still being written by pid {self.pid}"
        if self._proc.returncode == 0:
            return None
        lines = err.decode("utf-8", "replace").strip().splitlines()
        return f"the recording's writer failed: {lines[-1] if lines else self._proc.returncode}"

    def _let_go(self) -> None:
        """Stop watching a writer that is left to finish (or not) on its own."""
        if self._proc.stderr is not None:
            self._proc.stderr.close()


class _InProcess:
    """The fallback: encode in the calling thread (the relay's, for output)."""

    def __init__(self, fd: int) -> None:
        self._file = os.fdopen(fd, "wb")
        self._encoder = castwriter.CastEncoder()

    def send(self, kind: bytes, seconds: float, payload: bytes) -> None:
        self._file.write(self._encoder.line(kind, seconds, payload).encode())
        if kind != b"o":
            self._file.flush()
        if castwriter.due_sync(kind, payload):
            castwriter.fsync(self._file)

    def finish(self) -> str | None:
        try:
            self._file.write(self._encoder.end().encode())
            self._file.flush()
            castwriter.fsync(self._file)
        finally:
            self._file.close()
        return None


def wait_complete(path: Path, timeout: float) -> bool:
    """Wait up to `timeout` seconds until no writer holds the recording's lock (a writer
    left to finish a flood after ptysup exited); whether it is complete. OSError for a
    file that is no regular one (a FIFO would block the open)."""
    fd = open_regular(path)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    return False
                time.sleep(COMPLETE_POLL_S)  # flock has no time-out of its own
    finally:
        os.close(fd)


def read_cast(path: Path) -> tuple[dict[str, Any], list[tuple[float, str, str]]]:
    """An asciicast v2 file: its header and its events (see castread for what is skipped)."""
    cast = load_cast(path)
    return cast.header, cast.events


def as_bytes(data: str) -> bytes:
    """An output (`o`) event's text as the bytes the terminal got."""
    return data.encode("utf-8", "surrogateescape")


def size_of(data: str) -> tuple[int, int]:
    """A resize (`r`) event's `COLSxROWS` as (rows, cols)."""
    cols, rows = data.split("x")
    return int(rows), int(cols)


def output_bytes(path: Path) -> bytes:
    """Everything the agent printed in a recording, as the bytes a terminal got."""
    _, events = read_cast(path)
    return b"".join(as_bytes(d) for _, kind, d in events if kind == "o")
