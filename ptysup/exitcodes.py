"""Every exit code ptysup can end with, in one place."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class ExitCode(enum.IntEnum):
    """What the process exit status tells a CI job about the run."""

    COMPLETE = 0  # the supervisor said [COMPLETE]
    ABORT = 1  # the supervisor said [ABORT]
    USAGE = 2  # bad option, unreadable config, unwritable log: nothing was started
    BUDGET = 3  # the iteration (or time/cost) budget ran out
    AGENT = 4  # the agent exited on its own or could not start
    SUPERVISOR = 5  # the supervisor failed every retry of one decision, or cannot start
    API_ERROR = 6  # an API error or usage limit that ptysup was not allowed to wait out
    ESCALATED = 7  # the supervisor handed the run to a person, and none was at a terminal
    STOPPED = 8  # the person stopped the run with the escape key
    INTERNAL = 70  # a bug in ptysup (EX_SOFTWARE); the event log has the traceback
    LOG_ERROR = 74  # the event log could not be written (EX_IOERR): the run was ended

    @staticmethod
    def for_signal(signum: int) -> int:
        """128+N, as shells report a death by signal N (130 SIGINT, 143 SIGTERM)."""
        return 128 + signum


class Outcome(str, enum.Enum):
    """How a run ended; `run_end.outcome` in the event log."""

    COMPLETE = "complete"
    ABORT = "abort"
    BUDGET = "budget"  # the iteration budget
    TIME = "time"
    COST = "cost"
    API_ERROR = "api_error"
    AGENT_EXITED = "agent_exited"
    SUPERVISOR_FAILED = "supervisor_failed"
    ESCALATED = "escalated"
    SIGNAL = "signal"
    STOPPED = "stopped"  # the person pressed the escape key's stop command
    USAGE = "usage"
    ERROR = "error"
    LOG_ERROR = "log_error"  # a write to the event log failed: the run was ended at once

    def exit_code(self, signum: int | None = None) -> int:
        """The process exit status for this outcome."""
        if self is Outcome.SIGNAL:
            return ExitCode.for_signal(signum or 15)
        return int(_CODES[self])


_CODES = {
    Outcome.COMPLETE: ExitCode.COMPLETE,
    Outcome.ABORT: ExitCode.ABORT,
    Outcome.BUDGET: ExitCode.BUDGET,
    Outcome.TIME: ExitCode.BUDGET,
    Outcome.COST: ExitCode.BUDGET,
    Outcome.API_ERROR: ExitCode.API_ERROR,
    Outcome.AGENT_EXITED: ExitCode.AGENT,
    Outcome.SUPERVISOR_FAILED: ExitCode.SUPERVISOR,
    Outcome.ESCALATED: ExitCode.ESCALATED,
    Outcome.USAGE: ExitCode.USAGE,
    Outcome.ERROR: ExitCode.INTERNAL,
    Outcome.STOPPED: ExitCode.STOPPED,
    Outcome.LOG_ERROR: ExitCode.LOG_ERROR,
}


@dataclass(frozen=True)
class RunResult:
    """How the run ended."""

    outcome: Outcome
    iterations: int
    reason: str = ""
    signum: int | None = None
    cost_usd: float = 0.0  # the whole run: agent and supervisor
    agent_cost_usd: float = 0.0
    supervisor_cost_usd: float = 0.0

    @property
    def exit_code(self) -> int:
        """The process exit status."""
        return self.outcome.exit_code(self.signum)
