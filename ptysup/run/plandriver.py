"""Feeds a plan's steps to the run loop one at a time; the loop stays the only loop."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ptysup.events import EventLog
from ptysup.plan.schema import Plan, Step
from ptysup.run.loop import StepText
from ptysup.run.verify import Verify, VerifyResult

MakeVerifier = Callable[[Sequence[tuple[str, ...]]], Verify]


class _Gate:
    """A step's verifier that remembers its last results for the supervisor's prompt."""

    def __init__(self, inner: Verify, seen: Callable[[list[VerifyResult]], None]) -> None:
        self._inner = inner
        self._seen = seen
        self.commands = inner.commands

    def run(self, deadline: float | None = None) -> list[VerifyResult]:
        results = self._inner.run(deadline)
        self._seen(results)
        return results


class PlanDriver:
    """The steps of a plan as the loop consults them (`ptysup.run.loop.Steps`).

    `done` steps are skipped (a resumed run); when `started` the first remaining step is
    already under way, with `used` of its decisions spent.
    """

    def __init__(
        self,
        plan: Plan,
        log: EventLog,
        make_verifier: MakeVerifier,
        *,
        task: str = "",
        done: Sequence[str] = (),
        started: bool = False,
        used: int = 0,
    ) -> None:
        self._plan = plan
        self._log = log
        self._make_verifier = make_verifier
        self._goal = plan.goal or task
        self._index = next((i for i, s in enumerate(plan.steps) if s.id not in done), None)
        self._started = started and self._index is not None
        self._used = used
        self._from = 0  # the run's iteration count when the current step started
        self._last: dict[str, str] = {}  # step id → its last verification, in words

    @property
    def current(self) -> Step | None:
        """The step under way (None once the plan is done)."""
        return None if self._index is None else self._plan.steps[self._index]

    def opening(self, iterations: int) -> StepText | None:
        """The current step to start, or None when it is already under way (since an
        earlier part of a resumed run) or the plan is done."""
        if self._index is None:
            return None
        if self._started:
            self._from = iterations - self._used
            return None
        return self._begin(iterations)

    def pending(self) -> bool:
        """Whether a step waits to begin: `opening` would start it."""
        return self._index is not None and not self._started

    def gate(self) -> Verify | None:
        """The current step's verify commands."""
        step = self.current
        if step is None or not step.verify:
            return None
        return _Gate(self._make_verifier(step.verify), lambda rs: self._remember(step, rs))

    def advance(self, iterations: int) -> bool:
        """End the current step as complete; whether another step follows (not yet begun:
        `opening` begins it, so a budget that stops the run first leaves it pending)."""
        step = self.current
        if step is None or self._index is None:
            return False  # every step was done before (a run killed just before its end)
        self._log.emit(
            "step_end", id=step.id, outcome="complete", iterations=iterations - self._from
        )
        self._index = self._index + 1 if self._index + 1 < len(self._plan.steps) else None
        self._started = False
        return self._index is not None

    def exhausted(self, iterations: int) -> str | None:
        """Why the current step may not have another decision (its max_iter), if so."""
        step = self.current
        if step is None or not self._started or step.max_iter is None:
            return None
        if iterations - self._from < step.max_iter:
            return None
        return f"step {step.id!r} used its {step.max_iter} iteration(s)"

    def end(self, outcome: str, iterations: int) -> None:
        """The run ended inside a step: close it with the run's outcome."""
        step = self.current
        if step is not None and self._started:
            self._log.emit(
                "step_end", id=step.id, outcome=outcome, iterations=iterations - self._from
            )

    def notes(self) -> tuple[str, ...]:
        """The plan for the supervisor: every step done, current or pending."""
        lines = [
            "The run follows a plan; [COMPLETE] means the CURRENT step is done and "
            "verified (then ptysup starts the next step)."
        ]
        if self._plan.goal:
            lines.append(f"Goal: {self._plan.goal}")
        n = len(self._plan.steps)
        for i, step in enumerate(self._plan.steps):
            lines.append(f"- step {i + 1}/{n} {step.id}: {self._state(i)}")
        current = self.current
        if current is not None:
            lines.append(f"Current step ({current.id}): {current.do}")
            if current.id in self._last:
                lines.append(f"Its last verification: {self._last[current.id]}")
        return ("\n".join(lines),)

    def _state(self, i: int) -> str:
        if self._index is None or i < self._index:
            return "done"
        return "current" if i == self._index else "pending"

    def _begin(self, iterations: int) -> StepText:
        step = self.current
        assert step is not None and self._index is not None
        self._from = iterations
        self._started = True
        n = len(self._plan.steps)
        self._log.emit("step_start", id=step.id, index=self._index + 1, of=n, do=step.do)
        head = f"{self._goal}\n\n" if self._goal else ""
        text = f"{head}Step {self._index + 1}/{n} ({step.id}): {step.do}"
        # The very first step of a fresh conversation is already a clean context.
        return StepText(text, clear=step.clear and self._index > 0)

    def _remember(self, step: Step, results: list[VerifyResult]) -> None:
        failed = [r for r in results if not r.passed]
        self._last[step.id] = failed[0].describe() if failed else "passed"
