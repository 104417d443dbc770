"""The final frame: after a turn-end hook, wait for the agent's output to settle.

Claude Code 2.1.197 runs its Stop hook 10-64 ms before it draws the end of its reply, so
a snapshot taken at the hook shows an older frame (`· Computing…` instead of the reply).
The snapshot waits until no output came for a short quiet window after the hook,
bounded, so an agent that keeps drawing delays the decision by `most` at worst.
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
) -> list[AgentEvent]:
    """Wait until `quiet` seconds passed since both now and the last screen update, at
    most `most` seconds; the events other than screen updates that came meanwhile are
    returned, to be handled later in order."""
    start = clock()
    deadline = start + most
    held: list[AgentEvent] = []
    while (now := clock()) < deadline:
        due = max(start, last_output()) + quiet
        if now >= due:
            break
        event = next_event(min(due, deadline))
        if event is not None and not isinstance(event, ScreenUpdate):
            held.append(event)
    return held
