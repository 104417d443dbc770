"""The agent's terminal as an asciicast v2 recording (`asciinema play` shows it).

Output comes from the relay (after the person's terminal got it); decisions and typed
text arrive as events, so the recording is also an event sink: a marker (`m`) at each
turn end and decision, an input (`i`) event for each injection.
"""

from __future__ import annotations

import codecs
import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ptysup.events import Event


class Recording:
    """Appends asciicast v2 events to a 0600 file; safe from any thread."""

    def __init__(
        self,
        path: Path,
        rows: int,
        cols: int,
        clock: Callable[[], float] = time.monotonic,
        env: dict[str, str] | None = None,
    ) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        self._file = os.fdopen(fd, "w", encoding="utf-8")
        self.path = path
        self._clock = clock
        self._start = clock()
        self._lock = threading.Lock()
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        header: dict[str, Any] = {
            "version": 2,
            "width": cols,
            "height": rows,
            "timestamp": int(time.time()),
        }
        if env:
            header["env"] = env
        self._file.write(json.dumps(header) + "\n")
        self._file.flush()

    def output(self, data: bytes) -> None:
        """Agent output (split UTF-8 sequences are joined across calls)."""
        text = self._decoder.decode(data)
        if text:
            self._event("o", text, flush=False)

    def resize(self, rows: int, cols: int) -> None:
        """The window changed size."""
        self._event("r", f"{cols}x{rows}")

    def marker(self, label: str) -> None:
        """A named point in time (shown by asciinema as a marker)."""
        self._event("m", label)

    def typed(self, text: str) -> None:
        """Text ptysup typed into the agent."""
        self._event("i", text)

    def write(self, event: Event) -> None:
        """As an event sink: turn ends and decisions become markers, injections inputs."""
        f = event.fields
        if event.event == "turn_end":
            self.marker(f"turn_end:{f.get('kind')}")
        elif event.event == "decision":
            self.marker(f"decision:{f.get('iteration')}:{f.get('action')}")
        elif event.event == "inject":
            self.typed(str(f.get("text", "")))

    def close(self) -> None:
        """Flush and close the file."""
        with self._lock:
            if not self._file.closed:
                self._file.close()

    def _event(self, kind: str, data: str, flush: bool = True) -> None:
        # ASCII escapes: measured 1.8x faster to encode than raw UTF-8 under output floods.
        line = json.dumps([round(self._clock() - self._start, 6), kind, data])
        with self._lock:
            if self._file.closed:
                return
            self._file.write(line + "\n")
            if flush:
                self._file.flush()


def read_cast(path: Path) -> tuple[dict[str, Any], list[tuple[float, str, str]]]:
    """An asciicast v2 file: its header and its events."""
    with path.open(encoding="utf-8") as f:
        header = json.loads(f.readline())
        events = []
        for line in f:
            if line.strip():
                t, kind, data = json.loads(line)
                events.append((float(t), str(kind), str(data)))
    return header, events


def output_bytes(path: Path) -> bytes:
    """Everything the agent printed in a recording, as the bytes a terminal got."""
    _, events = read_cast(path)
    return b"".join(d.encode("utf-8", "surrogateescape") for _, kind, d in events if kind == "o")
