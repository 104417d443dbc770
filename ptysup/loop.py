"""The run: wait until ready → type the task → at each turn end ask the supervisor → act."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ptysup.agents.events import (
    AgentExited,
    Interrupted,
    TimeUp,
    TurnEnd,
    TurnEndKind,
    time_left,
)
from ptysup.agents.session import Activity, InjectResult
from ptysup.events import EventLog
from ptysup.exitcodes import Outcome
from ptysup.supervisor.decide import ApiErrorNotWaited, Decided, SupervisorFailed
from ptysup.supervisor.parse import Action
from ptysup.supervisor.prompt import DEFAULT_MAX_BYTES, PromptContext, build_prompt
from ptysup.terminal.screen import ScreenSnapshot
from ptysup.verify import VerifyResult
from ptysup.waits import WaitPolicy, is_fatal_error

CLEAR = "/clear"
CONTINUE_AFTER_WAIT = "continue"
SCREEN_LINES = 60  # lines of the agent's screen shown to the supervisor


class Agent(Protocol):
    """The agent as the loop drives it (AgentSession, or a fake in tests)."""

    activity: Activity

    def wait_ready(self) -> None: ...
    def submit(self, text: str) -> InjectResult: ...
    def wait_turn_end(self, deadline: float | None = None) -> TurnEnd: ...
    def command(self, command: str) -> bool: ...
    def shutdown(self) -> bool: ...
    def snapshot(self) -> ScreenSnapshot: ...
    def pause(self, seconds: float) -> None: ...


class Decider(Protocol):
    def decide(self, prompt: str, iteration: int, timeout: float | None = None) -> Decided: ...


class Verify(Protocol):
    commands: list[tuple[str, ...]]

    def run(self) -> list[VerifyResult]: ...


@dataclass(frozen=True)
class LoopConfig:
    """The run's task and budgets."""

    task: str
    max_iter: int = 50
    max_prompt_bytes: int = DEFAULT_MAX_BYTES
    max_time: float | None = None  # seconds
    max_cost: float | None = None  # USD, the supervisor's summed total_cost_usd
    prompt_template: str | None = None


@dataclass(frozen=True)
class RunResult:
    """How the run ended."""

    outcome: Outcome
    iterations: int
    reason: str = ""
    signum: int | None = None
    cost_usd: float = 0.0

    @property
    def exit_code(self) -> int:
        """The process exit status."""
        return self.outcome.exit_code(self.signum)


class _Stop(Exception):
    """Ends the run with a result (budget, API error)."""

    def __init__(self, outcome: Outcome, reason: str) -> None:
        super().__init__(reason)
        self.outcome = outcome
        self.reason = reason


class RunLoop:
    """The decision loop, driving an Agent with a Decider; knows no terminal details."""

    def __init__(
        self,
        config: LoopConfig,
        agent: Agent,
        supervisor: Decider,
        log: EventLog,
        clock: Callable[[], float] = time.monotonic,
        verifier: Verify | None = None,
        waits: WaitPolicy | None = None,
        wall_clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc),
        redact: Callable[[str], str] = lambda text: text,
    ) -> None:
        self._cfg = config
        self._redact = redact
        self._agent = agent
        self._supervisor = supervisor
        self._log = log
        self._clock = clock
        self._verifier = verifier
        self._waits = waits or WaitPolicy(enabled=False)
        self._now = wall_clock
        self._start = clock()
        self._deadline = None if config.max_time is None else self._start + config.max_time
        self._notes: tuple[str, ...] = ()
        self.iterations = 0
        self.cost_usd = 0.0

    def run(self) -> RunResult:
        """Run to an outcome; never raises for the agent's or supervisor's failures."""
        try:
            outcome, reason = self._run()
        except AgentExited as exc:
            outcome, reason = Outcome.AGENT_EXITED, f"agent exited: {exc}"
        except Interrupted as exc:
            return RunResult(Outcome.SIGNAL, self.iterations, str(exc), exc.signum, self.cost)
        except SupervisorFailed as exc:
            self._end_agent()
            outcome, reason = Outcome.SUPERVISOR_FAILED, str(exc)
        except ApiErrorNotWaited as exc:
            self._end_agent()
            outcome, reason = Outcome.API_ERROR, str(exc)
        except TimeUp:
            outcome, reason = self._budget_stop(Outcome.TIME, "time budget used up")
        except _Stop as stop:
            outcome, reason = stop.outcome, stop.reason
        return RunResult(outcome, self.iterations, reason, None, self.cost)

    @property
    def max_iter(self) -> int:
        """The iteration budget."""
        return self._cfg.max_iter

    @property
    def cost(self) -> float:
        """The supervisor's cost so far (USD), rounded for the log."""
        return round(self.cost_usd, 6)

    def _run(self) -> tuple[Outcome, str]:
        try:
            self._agent.wait_ready()
        except TimeoutError as exc:
            reason = f"agent never became ready: {exc}"
            self._log.emit("error", message=reason)
            return Outcome.AGENT_EXITED, reason
        self._log.emit("agent_ready", elapsed_s=self._elapsed())
        self._inject(self._cfg.task, kind="task")
        while True:
            turn = self._agent.wait_turn_end(self._deadline)
            self._log.emit("turn_end", kind=turn.kind.value, detail=turn.detail[-500:])
            if turn.kind is TurnEndKind.API_ERROR:
                self._wait_out_api_error(turn.detail)
                continue  # an API error costs no iteration
            self.iterations += 1
            decided = self._decide(turn)
            d = decided.decision
            if d.action is Action.COMPLETE:
                failed = self._verify()
                if failed is None:
                    self._end_agent()
                    return Outcome.COMPLETE, d.content
                self._check_budgets()
                self._inject(failed.instruction(), kind="verify")
                continue
            if d.action is Action.ABORT:
                self._clear_and_end()
                return Outcome.ABORT, d.content
            self._check_budgets()
            self._inject(d.content, kind="instruction")

    def _decide(self, turn: TurnEnd) -> Decided:
        i = self.iterations
        decided = self._supervisor.decide(self._prompt(turn), i, self._remaining())
        d = decided.decision
        self.cost_usd += decided.answer.cost_usd or 0.0
        self._log.emit(
            "decision",
            iteration=i,
            max_iter=self._cfg.max_iter,
            action=d.action.value,
            content=d.content,
            duration_s=round(decided.answer.duration_s, 3),
            attempts=decided.attempts,
            cost_usd=decided.answer.cost_usd,
            total_cost_usd=self.cost,
            elapsed_s=self._elapsed(),
        )
        return decided

    def _verify(self) -> VerifyResult | None:
        """The first failing --verify command, or None when all pass (or there are none)."""
        if self._verifier is None or not self._verifier.commands:
            return None
        for result in self._verifier.run():
            self._log.emit(
                "verify",
                iteration=self.iterations,
                command=list(result.command),
                exit_code=result.exit_code,
                passed=result.passed,
                duration_s=result.duration_s,
                output_tail=result.output_tail[-1000:],
            )
            if not result.passed:
                self._notes = (
                    f"Last verification (after iteration {self.iterations}'s [COMPLETE]): "
                    f"{result.describe()}; its output ends:\n{result.output_tail[-800:]}",
                )
                return result
        self._notes = ()
        return None

    def _check_budgets(self) -> None:
        """Raise _Stop once the iteration or cost budget is used up."""
        if self._cfg.max_cost is not None and self.cost_usd >= self._cfg.max_cost:
            raise _Stop(
                *self._budget_stop(
                    Outcome.COST, f"cost budget of ${self._cfg.max_cost} used up (${self.cost:.4f})"
                )
            )
        if self.iterations >= self._cfg.max_iter:
            raise _Stop(
                *self._budget_stop(
                    Outcome.BUDGET, f"iteration budget of {self._cfg.max_iter} used up"
                )
            )

    def _budget_stop(self, outcome: Outcome, reason: str) -> tuple[Outcome, str]:
        self._log.emit("warning", message=reason)
        self._clear_and_end()
        return outcome, reason

    def _wait_out_api_error(self, detail: str) -> None:
        """Wait (a shown reset time, else backoff), then tell the agent to go on.

        The failed prompt stays in Claude Code's conversation, so only a short 'continue'
        is typed, never the prompt again.
        """
        if is_fatal_error(detail):
            raise ApiErrorNotWaited(
                f"the agent hit an error that waiting cannot fix (authentication or "
                f"configuration): {detail}"
            )
        delay = self._waits.next_wait(detail, self._now())
        if delay is None:
            raise ApiErrorNotWaited(f"the agent hit an API error and ptysup may not wait: {detail}")
        remaining = self._remaining()
        if remaining is not None and delay >= remaining:
            raise TimeUp()
        self._log.emit(
            "wait",
            reason=detail[:300],
            seconds=round(delay, 1),
            waits_used=self._waits.used,
            max_waits=self._waits.max_waits,
        )
        self._agent.pause(delay)
        self._inject(CONTINUE_AFTER_WAIT, kind="continue")

    def _inject(self, text: str, kind: str) -> None:
        result = self._agent.submit(text)
        self._log.emit(
            "inject",
            kind=kind,
            text=result.text,
            confirmed=result.confirmed,
            attempts=result.attempts,
        )
        if not result.confirmed:
            self._log.emit("warning", message="the agent did not start a turn on the injection")

    def _prompt(self, turn: TurnEnd) -> str:
        activity = self._agent.activity
        screen = "\n".join(self._agent.snapshot().text().splitlines()[-SCREEN_LINES:])
        # Secrets never reach the supervisor (nor its model provider); redacting the parts
        # before building keeps the prompt within its bound.
        r = self._redact
        ctx = PromptContext(
            task=r(self._cfg.task),
            iteration=self.iterations,
            max_iter=self._cfg.max_iter,
            elapsed_s=self._elapsed(),
            turn_end=turn.kind.value,
            tools=tuple(r(t) for t in activity.tools),
            last_message=r(activity.last_message or turn.detail),
            screen=r(screen),
            notes=tuple(r(n) for n in self._notes),
        )
        return build_prompt(ctx, self._cfg.max_prompt_bytes, self._cfg.prompt_template)

    def _clear_and_end(self) -> None:
        confirmed = self._agent.command(CLEAR)
        self._log.emit("inject", kind="command", text=CLEAR, confirmed=confirmed, attempts=1)
        self._end_agent()

    def _end_agent(self) -> None:
        if not self._agent.shutdown():
            self._log.emit("warning", message="the agent did not exit when asked; it was ended")

    def _remaining(self) -> float | None:
        return time_left(self._deadline, self._clock())

    def _elapsed(self) -> float:
        return round(self._clock() - self._start, 3)
