"""A run's recording tailed as server-sent events, in asciinema-player's `eventsource` form.

The recording (asciicast v2) is appended to and flushed as the agent works (see
terminal/castwriter.py), so reading it is enough to watch a run live; nothing in the run
knows it is watched. The first message is the terminal so far: its size, the stream time
and every output until now as `init` (the player replays it into a fresh terminal at
once); then each new output or resize as `[time, code, data]`; `event: done` once the run
has ended and every line of the recording was sent.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ptysup.serve import files
from ptysup.serve.joined import decode
from ptysup.terminal.castread import cast_event, header_of

KEEPALIVE_S = 15.0  # an SSE comment this often: a closed page is noticed by the failed write
POLL_S = 0.1  # how often the recording is looked at while the run lives
CODES = frozenset({"o", "r"})  # what the player's terminal needs (markers and input are not)
_READ = 1 << 20


def sse(data: Any, event: str | None = None) -> bytes:
    """One server-sent event carrying `data` as one line of JSON."""
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


class CastTail:
    """Reads a growing asciicast v2 file line by line (a line still being written waits)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._partial = b""
        self.header: dict[str, Any] | None = None
        self.broken = False  # its first whole line is no header: it never will have one

    def events(self) -> list[list[Any]]:
        """The events appended since the last call (the header is kept in `header`)."""
        try:
            # Only a regular file: one swapped for a FIFO (or a link to /dev/zero) while
            # watched is never read.
            with files.open_regular(self.path, sys.maxsize) as f:
                f.seek(self._offset)
                data = f.read(_READ)
        except (OSError, files.Damaged):
            return []
        self._offset += len(data)
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        out = []
        for line in lines:
            item = decode(line)
            if item is None and self.header is not None:
                continue  # a garbled line: skipped, as replay does
            if self.header is None:
                self.header = header_of(item)
                self.broken = self.header is None
                if self.broken:
                    return []
            else:
                event = cast_event(item)  # a garbled line is skipped, as replay does
                if event is not None:
                    out.append(list(event))
        return out

    def more(self) -> bool:
        """Whether the last read stopped short of the end of the file."""
        try:
            return self.path.stat().st_size > self._offset
        except OSError:
            return False


def snapshot(header: dict[str, Any], events: list[list[Any]]) -> dict[str, Any]:
    """The player's reset message: the terminal's size and time now and its output so far."""
    cols, rows = int(header.get("width", 80)), int(header.get("height", 24))
    for _, code, data in events:
        if code == "r":
            cols, rows = _size(str(data), cols, rows)
    return {
        "cols": cols,
        "rows": rows,
        "time": float(events[-1][0]) if events else 0.0,
        "init": "".join(str(data) for _, code, data in events if code == "o"),
    }


def _size(text: str, cols: int, rows: int) -> tuple[int, int]:
    c, _, r = text.partition("x")
    return (int(c), int(r)) if c.isdigit() and r.isdigit() else (cols, rows)


def live(
    path: Path,
    alive: Callable[[], bool],
    wait: Callable[[float], bool],
    clock: Callable[[], float],
) -> Iterator[bytes]:
    """The SSE stream of the recording at `path` while `alive()`; `wait(s)` sleeps up to s
    seconds and says True when the server is shutting down."""
    tail = CastTail(path)
    backlog: list[list[Any]] = []
    while tail.header is None or tail.more():  # the terminal so far, in one message
        running = alive()
        backlog += tail.events()
        if tail.broken or (tail.header is None and not running):
            yield sse({"state": "offline"})
            yield sse({}, event="done")
            return
        if tail.header is None and wait(POLL_S):
            return
    yield sse(snapshot(tail.header, backlog))
    last_sent = clock()
    while True:
        running = alive()  # asked before reading: output written before the end is sent
        sent = False
        for event in tail.events():
            if event[1] in CODES:
                yield sse(event)
                sent = True
        if tail.more():
            continue
        if not running:
            yield sse({}, event="done")
            return
        if sent:
            last_sent = clock()
        elif clock() - last_sent >= KEEPALIVE_S:
            yield b": keepalive\n\n"
            last_sent = clock()
        if wait(POLL_S):
            return
