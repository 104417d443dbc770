"""What a batch shows while it runs: a live table in a terminal, otherwise one line per
change of a task's state (a CI log reads top to bottom)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TextIO

from ptysup.batch.result import TaskResult


class Display(Protocol):
    """Shown each time the batch looks at its tasks (twice a second), closed at the end."""

    def update(self, rows: Sequence[TaskResult]) -> None: ...

    def close(self) -> None: ...


def _progress(r: TaskResult) -> str:
    its, cost = r.extra.get("iterations"), r.extra.get("cost_usd")
    parts = []
    if its:
        parts.append(f"iter {its}")
    if cost:
        parts.append(f"${float(cost):.4f}")
    return ", ".join(parts)


class Lines:
    """One line per state change: `HH:MM:SS batch  cache  working  (run ID, iter 2)`."""

    def __init__(self, out: TextIO, clock: Callable[[], float] = time.time) -> None:
        self._out = out
        self._clock = clock
        self._seen: dict[str, str] = {}

    def update(self, rows: Sequence[TaskResult]) -> None:
        """Print the tasks whose state changed since the last call."""
        width = max((len(r.id) for r in rows), default=0)
        for r in rows:
            state = r.outcome or r.state
            if self._seen.get(r.id) == state:
                continue
            self._seen[r.id] = state
            stamp = time.strftime("%H:%M:%S", time.localtime(self._clock()))
            run = f"run {r.run_id}" if r.run_id else ""  # a queued task has none yet
            detail = ", ".join(x for x in (run, _progress(r)) if x)
            self._out.write(f"{stamp} batch  {r.id.ljust(width)}  {state}  ({detail})\n")
        self._out.flush()

    def close(self) -> None:
        """Nothing to tear down."""


class LiveTable:
    """A rich Live table, redrawn in place: task, state, iterations, cost, branch."""

    def __init__(self, out: TextIO) -> None:
        from rich.console import Console
        from rich.live import Live

        self._live = Live(console=Console(file=out), auto_refresh=False, transient=False)
        self._live.start()

    def update(self, rows: Sequence[TaskResult]) -> None:
        """Redraw the table."""
        self._live.update(_table(rows), refresh=True)

    def close(self) -> None:
        """Leave the last table on the screen."""
        self._live.stop()


def _table(rows: Sequence[TaskResult]) -> Any:
    from rich.table import Table

    table = Table(title="ptysup batch", title_justify="left")
    for name in ("task", "state", "iter", "cost", "branch", "run"):
        table.add_column(name)
    for r in rows:
        cost = r.extra.get("cost_usd")
        table.add_row(
            r.id,
            r.outcome or r.state,
            str(r.extra.get("iterations") or 0),
            "" if cost is None else f"${float(cost):.4f}",
            r.branch or "",
            r.run_id,
        )
    return table


def for_stream(out: TextIO) -> Display:
    """A live table when `out` is a terminal, else lines."""
    return LiveTable(out) if out.isatty() else Lines(out)
