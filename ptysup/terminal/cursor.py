"""Where the person's cursor was as ptysup started: asked once (DSR 6) and taken from the
person's keys whenever the terminal answers, never waited for.

A terminal that never answers (`script` with no terminal behind it, as CI runners give)
once held the agent's first output back for a second. Now the person gets the agent's
output from the first byte; only the screen model waits for the answer, since it must
start on the row the agent's output does (an agent started below earlier output is then
modelled row for row). It waits until the answer, WAIT_S, HOLD_MAX bytes of output, or
whatever else cannot wait (the agent's end, a resize), and then starts where pyte does,
at the top.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable

QUERY = b"\x1b[6n"  # "where is your cursor?"; the answer is `ESC [ row ; col R`
WAIT_S = 1.0  # how long the screen model waits for the answer
HOLD_MAX = 1 << 20  # bytes of output the screen model may wait with (a flood at start)

_ANSWER = re.compile(rb"\x1b\[(\d+);(\d+)R")
# What a read ends with when the answer is split across two reads (a slow link): it is
# kept for the next read instead of going to the agent, but only while the answer is due.
_BEGUN = re.compile(rb"\x1b(?:\[(?:\d+(?:;\d*)?)?)?\Z")
_LONGEST_BEGUN = 16  # bytes: `ESC [ rows ; cols` of any real terminal


class CursorAnswer:
    """The terminal's answer to QUERY: taken out of the person's keys whenever it comes,
    and the screen model's first output held until then (all but `time_up` in the relay
    thread)."""

    def __init__(
        self,
        place: Callable[[int, int], None],
        feed: Callable[[bytes], object],
        *,
        started: Callable[[], object] = lambda: None,
        hold_max: int = HOLD_MAX,
    ) -> None:
        self._place = place  # (row, col) from 0: where the model starts
        self._feed = feed  # the screen model's input
        self._started = started  # once, as the model starts (whatever started it)
        self._hold_max = hold_max
        self._held: list[bytes] = []
        self._held_size = 0
        self._holding = True  # the model waits for the answer
        self._answered = False
        self._placed = False
        self._due = True  # the answer is expected soon: a read may end with its start
        self._begun = b""  # the start of the answer the last read ended with
        self._late = threading.Event()  # WAIT_S passed (set by a timer thread)

    def output(self, data: bytes) -> None:
        """Agent output for the screen model: fed, or held until the answer."""
        if not self._holding:
            self._feed(data)
            return
        self._held.append(data)
        self._held_size += len(data)
        if self._held_size > self._hold_max:
            self.release()

    def keys(self, data: bytes) -> bytes:
        """The person's keys without the answer (once answered, a plain pass)."""
        if self._answered:
            return data
        if self._begun:
            data, self._begun = self._begun + data, b""
        if b"R" in data and (m := _ANSWER.search(data)) is not None:
            self._answered = True
            if self._holding:
                self._place(int(m[1]) - 1, int(m[2]) - 1)
                self._placed = True
                self.release()
            return data[: m.start()] + data[m.end() :]
        if self._due and (m := _BEGUN.search(data, max(0, len(data) - _LONGEST_BEGUN))):
            self._begun = data[m.start() :]
            return data[: m.start()]
        return data

    @property
    def placed(self) -> bool:
        """Whether the screen model started where the terminal said its cursor was."""
        return self._placed

    def release(self) -> None:
        """Stop holding the model's output: it starts at the top (the answer did not come
        in time, or something cannot wait for it). A later answer is still taken out of the
        person's keys."""
        if self._holding:
            self._holding = False
            held, self._held, self._held_size = self._held, [], 0
            if held:
                self._feed(b"".join(held))
            self._started()

    def unasked(self) -> None:
        """No terminal to ask: no answer comes, and the model starts at the top."""
        self._answered = True
        self._due = False
        self.release()

    def time_up(self) -> None:
        """WAIT_S passed (any thread); `settle` acts on it in the relay thread."""
        self._late.set()

    def settle(self) -> bytes:
        """After `time_up`: release the model, and return the keys kept as a possible
        start of the answer (the person's own Esc, say) for the agent."""
        if not self._late.is_set() or not self._due:
            return b""
        self._due = False
        self.release()
        begun, self._begun = self._begun, b""
        return begun
