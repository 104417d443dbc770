"""A "still working" event after every few minutes of a quiet log, so a CI log of a long
turn does not look hung."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ptysup.events import Event, EventLog

DEFAULT_EVERY_S = 180.0


class Heartbeat:
    """A sink that notices when the log went quiet, and a thread that then says so."""

    def __init__(
        self,
        log: EventLog,
        tools: Callable[[], int],
        every: float = DEFAULT_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._log = log
        self._tools = tools
        self._every = every
        self._clock = clock
        self._last = clock()  # the last event, of any kind
        self._turn = clock()  # the last text typed into the agent
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ptysup-heartbeat", daemon=True)

    def write(self, event: Event) -> None:
        """Called by the log for every event: the log is not quiet."""
        now = self._clock()
        self._last = now
        if event.event == "inject":
            self._turn = now

    def close(self) -> None:
        """Stop with the log."""
        self._stop.set()

    def start(self) -> None:
        """Start watching."""
        self._thread.start()

    def stop(self) -> None:
        """Stop watching (idempotent)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=1.0)

    def _run(self) -> None:
        while not self._stop.wait(max(0.0, self._last + self._every - self._clock())):
            if self._clock() - self._last >= self._every:
                self._log.emit(
                    "still_working",
                    elapsed_s=round(self._clock() - self._turn, 1),
                    tools=self._tools(),
                )
