"""One decision: run the supervisor, retry failures with backoff, parse the answer."""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ptysup.agents.events import TimeUp, time_left
from ptysup.agents.waits import WaitPolicy, is_api_error
from ptysup.events import EventLog
from ptysup.supervisor.parse import Decision, parse
from ptysup.supervisor.runner import MAX_OUTPUT, Answer, SupervisorError

DEFAULT_BACKOFF = (2.0, 8.0)  # seconds before the 2nd and 3rd attempt


class SupervisorFailed(Exception):
    """Every attempt at one decision failed."""


class ApiErrorNotWaited(Exception):
    """An API error or usage limit that the wait policy does not allow waiting out."""


class DecisionCancelled(Exception):
    """The decision was abandoned (the person took over, the agent exited): its supervisor
    was ended. Its text says by what."""


class Runner(Protocol):
    def run(
        self, prompt: str, timeout: float | None = None, system: str | None = None
    ) -> Answer: ...

    def prepare(self, system: str | None = None) -> None: ...

    def end_current(self) -> None: ...

    @property
    def cancelled(self) -> threading.Event: ...


@dataclass(frozen=True)
class Decided:
    """A parsed decision and the answer it came from."""

    decision: Decision
    answer: Answer
    attempts: int


class Supervisor:
    """Asks a fresh supervisor process; on failure retries the same decision at once.

    When every retry failed with an API error (overload, rate or usage limit), the wait
    policy decides whether to wait and try again, or to give up (ApiErrorNotWaited).
    """

    def __init__(
        self,
        runner: Runner,
        log: EventLog,
        backoff: Sequence[float] = DEFAULT_BACKOFF,
        waits: WaitPolicy | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc),
    ) -> None:
        self._runner = runner
        self._log = log
        self._backoff = tuple(backoff)
        self._waits = waits or WaitPolicy(enabled=False)
        self._clock = clock
        self._now = wall_clock
        self._abandoned = threading.Event()
        self._abandoned_by = ""
        self._ended_by = ""  # every decision from now on is dropped (the agent is gone)

    def abandon(self, by: str = "the person") -> None:
        """Drop the decision being made (any thread) because of `by`: its supervisor
        process is ended and decide() raises DecisionCancelled; the next decision is not
        affected."""
        self._abandoned_by = by
        self._abandoned.set()
        self._runner.end_current()

    def end(self, by: str) -> None:
        """Drop the decision being made and every later one (any thread): the run is
        ending because of `by`, and no decision may start after it either."""
        self._ended_by = by
        self.abandon(by)

    def prepare(self, system: str | None = None) -> None:
        """Get the next decision's supervisor ready ahead of time (a warm spare)."""
        self._runner.prepare(system)

    def decide(
        self,
        prompt: str,
        iteration: int,
        timeout: float | None = None,
        system: str | None = None,
    ) -> Decided:
        """The supervisor's decision; `timeout` caps the time it may take (time budget),
        `system` is the unchanging part of the prompt for a supervisor that takes one."""
        deadline = None if timeout is None else self._clock() + timeout
        self._abandoned.clear()  # an abandon() between decisions concerned none of them
        if self._ended_by:
            raise DecisionCancelled(self._ended_by)
        attempt = 0
        while True:
            error: SupervisorError | None = None
            for delay in (*self._backoff, None):
                attempt += 1
                try:
                    if self._abandoned.is_set():
                        raise DecisionCancelled(self._abandoned_by)
                    answer = self._runner.run(prompt, time_left(deadline, self._clock()), system)
                except SupervisorError as exc:
                    if self._abandoned.is_set():
                        raise DecisionCancelled(self._abandoned_by) from None
                    if self._runner.cancelled.is_set():  # the run is ending: no retry
                        raise SupervisorFailed("cancelled") from None
                    time_left(deadline, self._clock())  # the time budget is over: no retry
                    error = exc
                    self._log.emit(
                        "supervisor_error",
                        iteration=iteration,
                        attempt=attempt,
                        error=str(exc),
                        retry_in_s=None if exc.fatal else delay,
                    )
                    if exc.fatal:  # authentication or configuration: retries fail alike
                        raise SupervisorFailed(f"the supervisor cannot work: {exc}") from exc
                    # Waiting on the cancel event, not sleeping: a signal ends it at once.
                    if delay is None or self._runner.cancelled.wait(self._capped(delay, deadline)):
                        break
                    continue
                return Decided(self._parse(answer, iteration), answer, attempt)
            if self._runner.cancelled.is_set() or error is None or not is_api_error(str(error)):
                raise SupervisorFailed(
                    f"supervisor failed {attempt} attempt{'s' if attempt > 1 else ''} "
                    f"at decision {iteration}: {error}"
                )
            self._wait_api(str(error), deadline)

    def _capped(self, delay: float, deadline: float | None) -> float:
        """`delay`, but no later than the time budget's end (the next attempt then stops)."""
        return delay if deadline is None else max(0.0, min(delay, deadline - self._clock()))

    def _wait_api(self, message: str, deadline: float | None) -> None:
        wait = self._waits.next_wait(message, self._now())
        if wait is None:
            raise ApiErrorNotWaited(f"the supervisor hit an API error: {message}")
        left = time_left(deadline, self._clock())
        if left is not None and wait >= left:
            raise TimeUp()
        self._log.emit(
            "wait",
            reason=message[:300],
            seconds=round(wait, 1),
            waits_used=self._waits.used,
            max_waits=self._waits.max_waits,
        )
        if self._runner.cancelled.wait(wait):
            raise SupervisorFailed("cancelled")

    def _parse(self, answer: Answer, iteration: int) -> Decision:
        if answer.truncated:
            self._log.emit(
                "warning",
                iteration=iteration,
                message=f"supervisor printed {answer.out_bytes} bytes; only the first "
                f"{MAX_OUTPUT} were read",
            )
        decision = parse(answer.text)
        if not decision.marker:
            self._log.emit(
                "warning",
                iteration=iteration,
                message="supervisor answer has no marker; treating it as [CONTINUE]",
            )
        return decision
