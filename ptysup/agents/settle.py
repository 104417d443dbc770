"""The final frame: after a turn-end hook, wait for the agent's output to settle.

Claude Code 2.1.197 runs its Stop hook before it draws the end of its turn: while the hook
runs its spinner reads `(running stop hook · 0s …)` under a braille title, and only once
the hook process has exited does it write the ✳ title and the `✻ Worked for 5s` line
(recorded 40-70 ms after the hook reached ptysup; on a loaded machine the title comes in
a write of its own, up to 0.3 s before the rest, and the whole frame more than 1 s after
the hook). A quiet window alone missed that frame in 11 turns of 33, so the snapshot also
waits for the screen to read as done (`settled`), bounded, so an agent that keeps drawing
delays the decision by `most` at worst.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ptysup.agents.events import AgentEvent, ScreenUpdate


@dataclass(frozen=True)
class Settled:
    """How a settle ended."""

    held: list[AgentEvent]  # events other than screen updates that came meanwhile, in order
    done: bool  # the screen reads as done (False: `most` ran out before it did)


def settle_output(
    next_event: Callable[[float], AgentEvent | None],
    last_output: Callable[[], float],
    clock: Callable[[], float],
    quiet: float,
    most: float,
    settled: Callable[[], bool] = lambda: True,
) -> Settled:
    """Wait until `quiet` seconds passed since both now and the last output and
    `settled()` holds, at most `most` seconds; the events other than screen updates that
    came meanwhile are kept, to be handled later in order."""
    start = clock()
    deadline = start + most
    held: list[AgentEvent] = []
    while (now := clock()) < deadline:
        due = max(start, last_output()) + quiet
        if now >= due and settled():
            return Settled(held, True)
        # Quiet but not settled: only new output (or the model catching up) changes that.
        event = next_event(due if now < due else deadline)
        if event is not None and not isinstance(event, ScreenUpdate):
            held.append(event)
    return Settled(held, settled())  # still drawing: done if what it draws reads so
