"""The final frame: after a turn-end hook, wait for the agent's output to settle.

Claude Code 2.1.197 runs its Stop hook before it draws the end of its turn: while the hook
runs its spinner reads `(running stop hook · 0s …)` under a braille title, and only once
the hook process has exited does it write the ✳ title and the `✻ Worked for 5s` line, in
one write (recorded 40-70 ms after the hook reached ptysup; longer on a loaded machine).
A quiet window alone missed that frame in 11 turns of 33, so the snapshot also waits for
the screen to read as done (`settled`), bounded, so an agent that keeps drawing delays the
decision by `most` at worst.
"""

from __future__ import annotations

from collections.abc import Callable

from ptysup.agents.events import AgentEvent, ScreenUpdate


def settle_output(
    next_event: Callable[[float], AgentEvent | None],
    last_output: Callable[[], float],
    clock: Callable[[], float],
    quiet: float,
    most: float,
    settled: Callable[[], bool] = lambda: True,
) -> list[AgentEvent]:
    """Wait until `quiet` seconds passed since both now and the last screen update and
    `settled()` holds, at most `most` seconds; the events other than screen updates that
    came meanwhile are returned, to be handled later in order."""
    start = clock()
    deadline = start + most
    held: list[AgentEvent] = []
    while (now := clock()) < deadline:
        due = max(start, last_output()) + quiet
        if now >= due and settled():
            break
        # Quiet but not settled: only new output can change that.
        event = next_event(due if now < due else deadline)
        if event is not None and not isinstance(event, ScreenUpdate):
            held.append(event)
    return held
