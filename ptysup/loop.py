"""The run: wait until ready → type the task → at each turn end ask the supervisor → act."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ptysup.agents.events import AgentExited, Interrupted, TurnEnd
from ptysup.agents.session import Activity, InjectResult
from ptysup.events import EventLog
from ptysup.exitcodes import Outcome
from ptysup.supervisor.decide import Decided, SupervisorFailed
from ptysup.supervisor.parse import Action
from ptysup.supervisor.prompt import DEFAULT_MAX_BYTES, PromptContext, build_prompt
from ptysup.terminal.screen import ScreenSnapshot

CLEAR = "/clear"
SCREEN_LINES = 60  # lines of the agent's screen shown to the supervisor


class Agent(Protocol):
    """The agent as the loop drives it (AgentSession, or a fake in tests)."""

    activity: Activity

    def wait_ready(self) -> None: ...
    def submit(self, text: str) -> InjectResult: ...
    def wait_turn_end(self) -> TurnEnd: ...
    def command(self, command: str) -> None: ...
    def shutdown(self) -> bool: ...
    def snapshot(self) -> ScreenSnapshot: ...


class Decider(Protocol):
    def decide(self, prompt: str, iteration: int) -> Decided: ...


@dataclass(frozen=True)
class LoopConfig:
    """The run's task and budget."""

    task: str
    max_iter: int = 50
    max_prompt_bytes: int = DEFAULT_MAX_BYTES


@dataclass(frozen=True)
class RunResult:
    """How the run ended."""

    outcome: Outcome
    iterations: int
    reason: str = ""
    signum: int | None = None

    @property
    def exit_code(self) -> int:
        """The process exit status."""
        return self.outcome.exit_code(self.signum)


class RunLoop:
    """The decision loop, driving an Agent with a Decider; knows no terminal details."""

    def __init__(
        self,
        config: LoopConfig,
        agent: Agent,
        supervisor: Decider,
        log: EventLog,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cfg = config
        self._agent = agent
        self._supervisor = supervisor
        self._log = log
        self._clock = clock
        self._start = clock()
        self.iterations = 0

    def run(self) -> RunResult:
        """Run to an outcome; never raises for the agent's or supervisor's failures."""
        try:
            return self._run()
        except AgentExited as exc:
            return RunResult(Outcome.AGENT_EXITED, self.iterations, f"agent exited: {exc}")
        except Interrupted as exc:
            return RunResult(Outcome.SIGNAL, self.iterations, str(exc), exc.signum)
        except SupervisorFailed as exc:
            self._end_agent()
            return RunResult(Outcome.SUPERVISOR_FAILED, self.iterations, str(exc))

    def _run(self) -> RunResult:
        try:
            self._agent.wait_ready()
        except TimeoutError as exc:
            return RunResult(Outcome.AGENT_EXITED, 0, f"agent never became ready: {exc}")
        self._log.emit("agent_ready", elapsed_s=self._elapsed())
        self._inject(self._cfg.task, kind="task")
        while True:
            turn = self._agent.wait_turn_end()
            self._log.emit("turn_end", kind=turn.kind.value, detail=turn.detail[-500:])
            self.iterations += 1
            i = self.iterations
            decided = self._supervisor.decide(self._prompt(turn), i)
            d = decided.decision
            self._log.emit(
                "decision",
                iteration=i,
                max_iter=self._cfg.max_iter,
                action=d.action.value,
                content=d.content,
                duration_s=round(decided.answer.duration_s, 3),
                attempts=decided.attempts,
                cost_usd=decided.answer.cost_usd,
            )
            if d.action is Action.COMPLETE:
                self._end_agent()
                return RunResult(Outcome.COMPLETE, i, d.content)
            if d.action is Action.ABORT:
                self._clear_and_end()
                return RunResult(Outcome.ABORT, i, d.content)
            if i >= self._cfg.max_iter:
                self._log.emit(
                    "warning", message=f"iteration budget of {self._cfg.max_iter} used up"
                )
                self._clear_and_end()
                return RunResult(Outcome.BUDGET, i, f"{i} iterations used")
            self._inject(d.content, kind="instruction")

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
        ctx = PromptContext(
            task=self._cfg.task,
            iteration=self.iterations,
            max_iter=self._cfg.max_iter,
            elapsed_s=self._elapsed(),
            turn_end=turn.kind.value,
            tools=tuple(activity.tools),
            last_message=activity.last_message or turn.detail,
            screen=screen,
        )
        return build_prompt(ctx, self._cfg.max_prompt_bytes)

    def _clear_and_end(self) -> None:
        self._agent.command(CLEAR)
        self._log.emit("inject", kind="command", text=CLEAR, confirmed=True, attempts=1)
        self._end_agent()

    def _end_agent(self) -> None:
        if not self._agent.shutdown():
            self._log.emit("warning", message="the agent did not exit when asked; it was ended")

    def _elapsed(self) -> float:
        return round(self._clock() - self._start, 3)
