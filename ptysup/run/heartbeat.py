"""A run's pulse while its log is quiet: a "still working" event after every few minutes
(without a terminal, so a CI log of a long turn does not look hung), and the run
directory's `alive` file touched after every quiet minute, so a run killed in a long quiet
spell is still charged the time it lived (ptysup.store.rundir.progress)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ptysup.events import Event, EventLog

DEFAULT_EVERY_S = 180.0
# A killed run's time is counted short by at most this; an idle run wakes once a minute
# for it, not once a second (scripts/bench.py: ~0 wake-ups while the agent idles in CI).
ALIVE_EVERY_S = 60.0


class Heartbeat:
    """A sink that notices when the log went quiet, and a thread that then says so (`say`)
    and marks the run alive (`alive`, e.g. RunDir.mark_alive)."""

    def __init__(
        self,
        log: EventLog,
        tools: Callable[[], int],
        every: float = DEFAULT_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
        *,
        say: bool = True,
        alive: Callable[[], None] | None = None,
        alive_every: float = ALIVE_EVERY_S,
    ) -> None:
        self._log = log
        self._tools = tools
        self._every = every
        self._clock = clock
        self._say = say
        self._alive = alive
        self._alive_every = alive_every
        self._last = clock()  # the last event, of any kind
        self._turn = clock()  # the last text typed into the agent
        self._marked = clock()  # the last mark: an event is as good as one
        self._warned = False
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
        while not self._stop.wait(self._wait_s()):
            now = self._clock()
            if self._say and now - self._last >= self._every:
                self._log.emit(
                    "still_working",
                    elapsed_s=round(now - self._turn, 1),
                    tools=self._tools(),
                )
            alive = self._alive
            if alive is not None and now - max(self._last, self._marked) >= self._alive_every:
                self._mark(alive, now)

    def _wait_s(self) -> float | None:
        """Until the next line or mark is due (None: neither ever is)."""
        due = [self._last + self._every] if self._say else []
        if self._alive is not None:
            due.append(max(self._last, self._marked) + self._alive_every)
        return max(0.0, min(due) - self._clock()) if due else None

    def _mark(self, alive: Callable[[], None], now: float) -> None:
        self._marked = now
        try:
            alive()
        except OSError as exc:  # the run goes on; a kill would be charged less time
            if not self._warned:
                self._warned = True
                self._log.emit("warning", message=f"cannot mark the run alive: {exc}")
