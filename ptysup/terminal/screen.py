"""The pyte model of the agent's screen, fed off the hot path, read as snapshots."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass

import pyte


@dataclass(frozen=True)
class ScreenSnapshot:
    """What the agent's terminal shows at one moment."""

    lines: tuple[str, ...]
    title: str
    cursor: tuple[int, int]  # (row, col)

    def text(self) -> str:
        """The screen as text, trailing blanks and blank bottom lines dropped."""
        rows = [line.rstrip() for line in self.lines]
        while rows and not rows[-1]:
            rows.pop()
        return "\n".join(rows)


class _Screen(pyte.Screen):
    """pyte's Screen that hands terminal answerbacks (DA, DSR) to a callback."""

    def __init__(self, columns: int, lines: int, answer: Callable[[bytes], None] | None) -> None:
        super().__init__(columns, lines)
        self._answer = answer

    def write_process_input(self, data: str) -> None:
        if self._answer is not None:
            self._answer(data.encode())


class ScreenModel:
    """A pyte Screen + ByteStream behind a lock: any chunk can be fed, any thread can read."""

    def __init__(self, rows: int, cols: int, answer: Callable[[bytes], None] | None = None) -> None:
        self._screen = _Screen(cols, rows, answer)
        self._stream = pyte.ByteStream(self._screen)
        self._lock = threading.Lock()

    def feed(self, data: bytes) -> None:
        """Apply agent output to the model."""
        with self._lock:
            self._stream.feed(data)

    def resize(self, rows: int, cols: int) -> None:
        """Follow a window-size change (before the agent repaints)."""
        with self._lock:
            self._screen.resize(rows, cols)

    def snapshot(self) -> ScreenSnapshot:
        """A consistent copy of what is on screen now."""
        with self._lock:
            s = self._screen
            return ScreenSnapshot(tuple(s.display), s.title or "", (s.cursor.y, s.cursor.x))


class ScreenFeeder:
    """A thread that feeds the model in batches and calls `on_update` after each batch.

    The relay only appends to a queue, so a slow model never delays the person's view.
    """

    def __init__(self, model: ScreenModel, on_update: Callable[[], None]) -> None:
        self._model = model
        self._on_update = on_update
        self._queue: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="ptysup-screen", daemon=True)
        self._pending = 0
        self._cond = threading.Condition()

    def start(self) -> None:
        """Start the feeding thread."""
        self._thread.start()

    def put(self, data: bytes) -> None:
        """Queue agent output (called by the relay; never blocks)."""
        with self._cond:
            self._pending += 1
        self._queue.put(data)

    def drained(self, timeout: float) -> bool:
        """Wait until every queued byte is in the model."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending == 0, timeout)

    def stop(self) -> None:
        """Feed what is queued, then end the thread."""
        self._queue.put(None)
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            batch: list[bytes] = []
            while item is not None:
                batch.append(item)
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            if batch:
                self._model.feed(b"".join(batch))
                self._on_update()
                with self._cond:
                    self._pending -= len(batch)
                    self._cond.notify_all()
            if item is None:
                return
