"""The run's current budgets: what --max-iter, --max-time and --max-cost say now.

They start as the options said and a person may move them while the run goes
(`ptysup budget`, the control page): the run loop reads every limit here, never a copy,
so a raised budget moves every threshold measured against it (the budget stops, the
agent's cost cap, a wind-down). Written from the steering thread, read by the loop.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ptysup.attach.steerproto import Budget, Change, Refused


@dataclass(frozen=True)
class Used:
    """What the run has used of each budget so far."""

    iterations: int
    elapsed_s: float
    cost_usd: float

    def of(self, budget: Budget) -> float:
        """The amount used of `budget`."""
        return {
            Budget.MAX_ITER: float(self.iterations),
            Budget.MAX_TIME: self.elapsed_s,
            Budget.MAX_COST: self.cost_usd,
        }[budget]


class Limits:
    """The budgets as they stand; `change` moves them, never below what is used."""

    def __init__(self, max_iter: int, max_time: float | None, max_cost: float | None) -> None:
        self._lock = threading.Lock()
        self._values: dict[Budget, float | None] = {
            Budget.MAX_ITER: float(max_iter),
            Budget.MAX_TIME: max_time,
            Budget.MAX_COST: max_cost,
        }
        # Called (in the changing thread) with the budgets as they now are (to_json).
        self.on_change: list[Callable[[dict[str, float | int | None]], None]] = []

    @property
    def max_iter(self) -> int:
        """The iteration budget."""
        with self._lock:
            return int(self._values[Budget.MAX_ITER] or 0)

    @property
    def max_time(self) -> float | None:
        """The time budget in seconds, from the run's start; None: none."""
        with self._lock:
            return self._values[Budget.MAX_TIME]

    @property
    def max_cost(self) -> float | None:
        """The cost budget in USD; None: none."""
        with self._lock:
            return self._values[Budget.MAX_COST]

    def change(self, changes: Sequence[Change], used: Used) -> dict[str, float | int | None]:
        """Apply every change or none (Refused: the first that cannot be); the budgets now."""
        with self._lock:
            values = dict(self._values)
            for change in changes:
                values[change.budget] = change.apply(values[change.budget], used.of(change.budget))
            self._values = values
        now = self.to_json()
        for callback in list(self.on_change):
            callback(now)
        return now

    def to_json(self) -> dict[str, float | int | None]:
        """{"max_iter": int, "max_time": seconds or None, "max_cost": USD or None}."""
        with self._lock:
            cost = self._values[Budget.MAX_COST]
            return {
                "max_iter": int(self._values[Budget.MAX_ITER] or 0),
                "max_time": self._values[Budget.MAX_TIME],
                "max_cost": None if cost is None else round(cost, 6),
            }


__all__ = ["Limits", "Refused", "Used"]
