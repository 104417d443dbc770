"""One decision: run the supervisor, retry failures with backoff, parse the answer."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ptysup.events import EventLog
from ptysup.supervisor.parse import Decision, parse
from ptysup.supervisor.runner import Answer, SupervisorError

DEFAULT_BACKOFF = (2.0, 8.0)  # seconds before the 2nd and 3rd attempt


class SupervisorFailed(Exception):
    """Every attempt at one decision failed."""


class Runner(Protocol):
    def run(self, prompt: str) -> Answer: ...

    @property
    def cancelled(self) -> threading.Event: ...


@dataclass(frozen=True)
class Decided:
    """A parsed decision and the answer it came from."""

    decision: Decision
    answer: Answer
    attempts: int


class Supervisor:
    """Asks a fresh supervisor process; on failure retries the same decision at once."""

    def __init__(
        self, runner: Runner, log: EventLog, backoff: Sequence[float] = DEFAULT_BACKOFF
    ) -> None:
        self._runner = runner
        self._log = log
        self._backoff = tuple(backoff)

    def decide(self, prompt: str, iteration: int) -> Decided:
        """The supervisor's decision, after up to len(backoff)+1 attempts."""
        delays = (*self._backoff, None)
        for attempt, delay in enumerate(delays, start=1):
            try:
                answer = self._runner.run(prompt)
            except SupervisorError as exc:
                self._log.emit(
                    "supervisor_error",
                    iteration=iteration,
                    attempt=attempt,
                    error=str(exc),
                    retry_in_s=delay,
                )
                # Waiting on the cancel event, not sleeping: a signal ends the wait at once.
                if delay is None or self._runner.cancelled.wait(delay):
                    break
                continue
            decision = parse(answer.text)
            if not decision.marker:
                self._log.emit(
                    "warning",
                    iteration=iteration,
                    message="supervisor answer has no marker; treating it as [CONTINUE]",
                )
            return Decided(decision, answer, attempt)
        raise SupervisorFailed(f"supervisor failed {len(delays)} attempts at decision {iteration}")
