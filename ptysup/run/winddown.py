"""Winding down before a budget's wall (--wind-down): once a fraction of any budget is
used, the agent is told once what is left and to leave its work clean, and the supervisor
that it is the last stretch, so a budget stop finds committed work and a note of what
remains rather than a half-made change.

The point is a pure function of what is used and the limits as the loop reads them at
that moment (a budget raised while the run goes moves it); WindDown only remembers
whether the agent was told. The loop types and logs what this says.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ptysup.supervisor.prompt import format_elapsed

ITERATIONS, TIME, COST = "iterations", "time", "cost"


@dataclass(frozen=True)
class Limits:
    """The run's budgets as the loop reads them now (None: no such budget)."""

    max_iter: int
    max_time_s: float | None = None
    max_cost_usd: float | None = None

    def fields(self) -> dict[str, Any]:
        """The limits as an event's fields."""
        return {
            "max_iter": self.max_iter,
            "max_time_s": self.max_time_s,
            "max_cost_usd": self.max_cost_usd,
        }


@dataclass(frozen=True)
class Usage:
    """What the run has used at a decision: `iteration` is that decision's number."""

    iteration: int
    elapsed_s: float
    cost_usd: float


@dataclass(frozen=True)
class Stretch:
    """The run is in its last stretch: the budget that says so and what is left of each."""

    budget: str  # ITERATIONS, TIME or COST: the one most used
    used: float
    limit: float
    turns_left: int  # the agent's turns the iteration budget still allows, the next one included
    time_left_s: float | None
    cost_left_usd: float | None

    def left(self, turn: str = "this one") -> str:
        """What is left of every budget, in words: '3 turns (this one included), about
        4m05s and $0.31' for the agent, which reads it at the start of its turn; the
        supervisor's `turn` is the next one."""
        n = self.turns_left
        turns = f"{n} turn{'s' * (n != 1)} ({turn} included)"
        parts = [turns if n else "no turn (this decision is the last: a [CONTINUE] is not typed)"]
        if self.time_left_s is not None:
            parts.append(f"about {format_elapsed(self.time_left_s)}")
        if self.cost_left_usd is not None:
            parts.append(f"${self.cost_left_usd:.2f}")
        return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]

    def said(self) -> str:
        """The budget and how much of it is used, in words."""
        if self.budget == ITERATIONS:
            return f"the iteration budget (decision {self.used:g} of {self.limit:g})"
        if self.budget == TIME:
            used, limit = format_elapsed(self.used), format_elapsed(self.limit)
            return f"the time budget ({used} of {limit})"
        return f"the cost budget (${self.used:.2f} of ${self.limit:.2f})"

    def fields(self) -> dict[str, Any]:
        """The stretch as a `wind_down` event's fields."""
        return {
            "budget": self.budget,
            "used": round(self.used, 6),
            "limit": self.limit,
            "turns_left": self.turns_left,
            "time_left_s": None if self.time_left_s is None else round(self.time_left_s, 1),
            "cost_left_usd": None if self.cost_left_usd is None else round(self.cost_left_usd, 6),
            "left": self.left(),
        }


def last_stretch(fraction: float | None, used: Usage, limits: Limits) -> Stretch | None:
    """The stretch the run is in at decision `used.iteration`, or None before it (or with
    --wind-down off).

    Iterations count the agent's turns: the task's, then one per instruction, the N-th
    decision's being none (it can only end the run). The instruction of decision i starts
    turn i + 1 of N, so with 50 the point is decision 42, leaving 8 turns; with a budget
    of 2 to 6 it is the last instruction the budget allows.
    """
    if fraction is None:
        return None
    shares: dict[str, tuple[float, float, float]] = {
        ITERATIONS: ((used.iteration + 1) / limits.max_iter, used.iteration, limits.max_iter)
    }
    if limits.max_time_s is not None:
        shares[TIME] = (used.elapsed_s / limits.max_time_s, used.elapsed_s, limits.max_time_s)
    if limits.max_cost_usd is not None:
        shares[COST] = (used.cost_usd / limits.max_cost_usd, used.cost_usd, limits.max_cost_usd)
    budget, (share, spent, limit) = max(shares.items(), key=lambda kv: kv[1][0])
    if share < fraction:
        return None
    return Stretch(
        budget,
        spent,
        limit,
        max(limits.max_iter - used.iteration, 0),
        None if limits.max_time_s is None else max(limits.max_time_s - used.elapsed_s, 0.0),
        None if limits.max_cost_usd is None else max(limits.max_cost_usd - used.cost_usd, 0.0),
    )


def agent_message(stretch: Stretch) -> str:
    """What the agent is told, once, after the supervisor's instruction."""
    return (
        f"(ptysup: this run is near the end of its budget: {stretch.left()} left. Wind down "
        "now: finish or set aside what is in progress, leave the work clean with everything "
        "that works committed, and write down what remains to be done (a short note in the "
        "repository or in the commit message), so the work can be picked up from there.)"
    )


def supervisor_note(stretch: Stretch, told: bool) -> str:
    """What the supervisor is told at every decision of the last stretch."""
    how = (
        "The agent has been told to wind down: leave its work clean and committed, and note "
        "what remains."
        if told
        else "ptysup adds to the next instruction typed into the agent that it must wind "
        "down: leave its work clean and committed, and note what remains."
    )
    return (
        f"Last stretch: {stretch.said()} is nearly used up; left: {stretch.left('the next one')}."
        f" {how} "
        "Prefer finishing and securing the work to starting anything new."
    )


LIFTED_NOTE = (
    "The budgets were raised after the agent was told to wind down: the run is out of its "
    "last stretch, and the agent may go on with the work."
)


@dataclass(frozen=True)
class Reading:
    """The wind-down at one decision: the stretch (if any), the supervisor's notes, and
    whether a raised budget just lifted an earlier wind-down."""

    stretch: Stretch | None
    notes: tuple[str, ...]
    lifted: bool = False


class WindDown:
    """Tells the agent once per approach to the wall: armed, then told; a budget raised
    below the point arms it again (said once to the supervisor, logged by the loop)."""

    def __init__(self, fraction: float | None, told: bool = False) -> None:
        self.fraction = fraction
        self.told = told  # a resumed run's earlier part may have told the agent already

    def read(self, used: Usage, limits: Limits) -> Reading:
        """At a decision: the notes for the supervisor's prompt."""
        if self.fraction is None:
            return Reading(None, ())
        stretch = last_stretch(self.fraction, used, limits)
        if stretch is not None:
            return Reading(stretch, (supervisor_note(stretch, self.told),))
        if self.told:
            self.told = False
            return Reading(None, (LIFTED_NOTE,), lifted=True)
        return Reading(None, ())

    def due(self, used: Usage, limits: Limits) -> Stretch | None:
        """The stretch to tell the agent of with the instruction about to be typed, if it
        was not told already."""
        return None if self.told else last_stretch(self.fraction, used, limits)
