"""A clock for the status line: its elapsed time advances while a person watches.

Only runs with a terminal (there is no status line without one), so a run in CI has no
timer wake-ups at all; with a terminal it costs one wake-up a second.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

TICK_S = 1.0


class Ticker:
    """Calls `tick` every `interval` seconds on its own thread until stopped."""

    def __init__(self, tick: Callable[[], None], interval: float = TICK_S) -> None:
        self._tick = tick
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ptysup-ticker", daemon=True)

    def start(self) -> None:
        """Start ticking."""
        self._thread.start()

    def stop(self) -> None:
        """Stop ticking (returns once the thread is gone)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self._tick()
