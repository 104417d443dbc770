"""The recording's writer process: frames on stdin become asciicast v2 lines on stdout.

The relay only writes raw frames into a pipe; this process turns them into asciicast
lines. Encoding escape-heavy output as JSON costs about 6 ms per MB, and on a busy
machine any CPU spent while the agent floods the terminal slows the person's view
(scripts/bench.py). So output that arrives as a flood (more than FLOOD bytes within a
WINDOW) is appended raw to a spool file next to the recording, and encoded once a window
passes without one; a trickle like Claude Code's (a few KB per repaint) is encoded and
flushed at once, so the file is current while the agent works.

The process ends when the pipe's write end closes, which also happens when ptysup itself
is killed: the recording is completed either way. Standard library only, and runnable as
a file (`python -I -S castwriter.py CAST_DIR`), so it starts in a few ms.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import io
import json
import os
import select
import signal
import struct
import sys
import tempfile
import time
from typing import BinaryIO

# A frame: kind (1 byte: o output, i input, m marker, r resize), seconds since the
# recording started (float64), payload length (uint32), then the payload (UTF-8 text
# for i/m/r, the agent's raw bytes for o).
HEADER = struct.Struct("<cdI")
KINDS = frozenset(b"oimr")

# A marker's label that makes the file due an fsync (a decision: see ptysup.store.durable); the
# file is fsynced at its end too. Never for output: an fsync costs milliseconds.
SYNC_MARKER = b"decision:"
FLOOD = 256 * 1024  # bytes arriving within one WINDOW that make a flood (1 MB/s)
WINDOW = 0.25  # seconds; once a window passes without a flood, spooled bytes are encoded
PIECE = 1 << 20  # spooled bytes encoded at a time, between looks at the pipe
READ = 1 << 20
NICE = 10  # the writer's lower CPU priority


def frame_header(kind: bytes, seconds: float, size: int) -> bytes:
    """The bytes that precede a payload of `size` bytes."""
    return HEADER.pack(kind, seconds, size)


class CastEncoder:
    """Turns frames into asciicast v2 event lines."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.last = 0.0  # the time of the last frame

    def line(self, kind: bytes, seconds: float, payload: bytes) -> str:
        """The event line for one frame ('' for output that only began a character)."""
        self.last = seconds
        if kind == b"o":
            text = self._decoder.decode(payload)
            if not text:
                return ""
        else:
            text = payload.decode("utf-8", "replace")
        # ASCII escapes: measured 1.8x faster to encode than raw UTF-8 under output floods.
        return json.dumps([round(seconds, 6), kind.decode(), text]) + "\n"

    def end(self) -> str:
        """The line for a character the output left unfinished, if any."""
        text = self._decoder.decode(b"", final=True)
        return json.dumps([round(self.last, 6), "o", text]) + "\n" if text else ""


class FrameStream:
    """Frames out of a byte stream that may cut them anywhere."""

    def __init__(self, encoder: CastEncoder) -> None:
        self._encoder = encoder
        self._pending = bytearray()
        self.due = False  # a frame that wants the file fsynced went by (SYNC_MARKER)

    def lines(self, data: bytes) -> str:
        """The event lines of every frame `data` completes."""
        buf = self._pending
        buf += data
        pos = 0
        out = []
        while len(buf) - pos >= HEADER.size:
            kind, seconds, size = HEADER.unpack_from(buf, pos)
            start = pos + HEADER.size
            if len(buf) - start < size:
                break
            if kind[0] not in KINDS:
                raise ValueError(f"castwriter: bad frame kind {kind!r}")
            payload = bytes(buf[start : start + size])
            out.append(self._encoder.line(kind, seconds, payload))
            self.due = self.due or due_sync(kind, payload)
            pos = start + size
        del buf[:pos]
        return "".join(out)

    def left(self) -> int:
        """Bytes of a frame not yet complete."""
        return len(self._pending)


def due_sync(kind: bytes, payload: bytes) -> bool:
    """Whether a frame makes the recording due an fsync."""
    return kind == b"m" and payload.startswith(SYNC_MARKER)


def fsync(out: BinaryIO) -> None:
    """fsync the recording; one that is no file (a pipe, a buffer in a test) has nothing
    to sync."""
    try:
        fd = out.fileno()
    except io.UnsupportedOperation:
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise


class Spool:
    """Raw bytes kept on disk until there is time to encode them (an unlinked file)."""

    def __init__(self, directory: str | None) -> None:
        self._file = tempfile.TemporaryFile(dir=directory, prefix=".ptysup-spool-")  # noqa: SIM115
        self._written = 0
        self._read = 0

    def close(self) -> None:
        self._file.close()

    def __len__(self) -> int:
        return self._written - self._read

    def add(self, data: bytes) -> None:
        view = memoryview(data)
        while view:  # a short write (a full disk) must not leave a gap
            sent = os.pwrite(self._file.fileno(), view, self._written)
            self._written += sent
            view = view[sent:]

    def take(self, size: int) -> bytes:
        data = os.pread(self._file.fileno(), min(size, len(self)), self._read)
        self._read += len(data)
        if self._read == self._written:  # all encoded: give the disk space back
            os.ftruncate(self._file.fileno(), 0)
            self._read = self._written = 0
        return data


def convert(source: int, out: BinaryIO, spool: Spool) -> None:
    """Read frames from the fd `source` until EOF, writing event lines to `out`."""
    encoder = CastEncoder()
    frames = FrameStream(encoder)

    def emit(data: bytes) -> None:
        out.write(frames.lines(data).encode("utf-8"))
        out.flush()  # readable as it happens: nothing waits in this process's buffers
        if frames.due:
            frames.due = False
            fsync(out)

    window_start, window_bytes = time.monotonic(), 0  # bytes in the current WINDOW
    flooded = False  # the window before this one held a flood
    while True:
        now = time.monotonic()
        if now - window_start >= WINDOW:
            flooded = window_bytes > FLOOD and now - window_start < 2 * WINDOW
            window_start, window_bytes = now, 0
        flooding = flooded or window_bytes > FLOOD
        timeout: float | None = None  # nothing to do: sleep until input comes
        if flooding:
            timeout = window_start + WINDOW - now  # then see whether the flood goes on
        elif len(spool):
            timeout = 0.0  # catching up: look at the pipe, then encode a piece
        ready, _, _ = select.select([source], [], [], timeout)
        if not ready:
            if not flooding and len(spool):
                emit(spool.take(PIECE))
            continue
        data = os.read(source, READ)
        if not data:
            break
        window_bytes += len(data)
        if len(spool) or window_bytes > FLOOD:
            spool.add(data)  # keep the order: once anything is spooled, everything is
        else:
            emit(data)
    while len(spool):
        emit(spool.take(PIECE))
    if frames.left():
        raise ValueError(f"castwriter: {frames.left()} bytes of a cut frame at the end")
    out.write(encoder.end().encode("utf-8"))
    out.flush()
    fsync(out)


def main(argv: list[str]) -> None:
    # In its own session (no terminal signals); it ends at EOF, however ptysup ended.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Background work: encoding a spooled flood must not take the CPU from the agent,
    # ptysup's relay or the person's terminal on a busy machine (scripts/bench.py, exit).
    with contextlib.suppress(OSError):
        os.nice(NICE)
    spool = Spool(argv[1] if len(argv) > 1 else None)
    try:
        convert(sys.stdin.fileno(), sys.stdout.buffer, spool)
    finally:
        spool.close()


if __name__ == "__main__":
    main(sys.argv)
