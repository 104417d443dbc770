"""The judges a case is replayed with: supervisor commands, run as a run runs them (one
fresh, lean, read-only process per decision, in the case's project), or, to learn what the
checks alone make of a turn end, a judge in this process that always says [COMPLETE].
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ptysup.agents.waits import WaitPolicy
from ptysup.config import (
    DEFAULT_SUPERVISOR_BACKOFF,
    DEFAULT_SUPERVISOR_RETRIES,
    DEFAULT_SUPERVISOR_TIMEOUT,
    DEFAULT_SUPERVISOR_TOOLS,
    backoff_schedule,
)
from ptysup.events import EventLog
from ptysup.judgebench.replay import Panel, Panels
from ptysup.run.decision import Judge, SecondOpinion
from ptysup.run.second import AUTO, SecondJudge
from ptysup.supervisor.decide import Decided, Supervisor
from ptysup.supervisor.judge import (
    JudgeOptions,
    lean_argv,
    lean_env,
    other_judge,
    takes_system_prompt,
    vendor,
)
from ptysup.supervisor.parse import parse
from ptysup.supervisor.prompt import SUPERVISOR_MARKER
from ptysup.supervisor.runner import Answer, SupervisorRunner


@dataclass
class _Panel:
    judge: Judge
    second: SecondOpinion | None
    split: bool
    runners: list[SupervisorRunner] = field(default_factory=list)

    def close(self) -> None:
        for runner in self.runners:
            runner.close()


@dataclass(frozen=True)
class Commands:
    """The supervisor commands under test, and how they run."""

    judge: tuple[str, ...]
    second: tuple[str, ...] | None = None
    tools: str = DEFAULT_SUPERVISOR_TOOLS
    timeout: float = DEFAULT_SUPERVISOR_TIMEOUT


def second_opinion(
    given: Sequence[str] | None, judge: Sequence[str], path: str | None
) -> tuple[str, ...] | None:
    """The second opinion's command: as given, or for `auto` an installed CLI of another
    vendor than the judge's (there is no agent to exclude); None for `auto` without one."""
    if given is None or tuple(given) != (AUTO,):
        return None if given is None else tuple(given)
    return other_judge({vendor(judge)}, lambda p: shutil.which(p, path=path) is not None)


def command_panels(commands: Commands, env: Mapping[str, str]) -> Panels:
    """Panels of supervisor processes, each case's in its project."""

    def runner(argv: Sequence[str], project: Path) -> SupervisorRunner:
        return SupervisorRunner(
            lean_argv(argv, JudgeOptions(commands.tools)),
            timeout=commands.timeout,
            cwd=str(project),
            env=lean_env(argv, env),
            prelude=SUPERVISOR_MARKER + "\n",
        )

    def supervisor(run: SupervisorRunner, log: EventLog) -> Supervisor:
        backoff = backoff_schedule(DEFAULT_SUPERVISOR_BACKOFF, DEFAULT_SUPERVISOR_RETRIES)
        return Supervisor(run, log, backoff, WaitPolicy(enabled=False))

    def make(project: Path, log: EventLog) -> Panel:
        first = runner(commands.judge, project)
        panel = _Panel(supervisor(first, log), None, takes_system_prompt(commands.judge), [first])
        if commands.second is not None:
            other = runner(commands.second, project)
            panel.runners.append(other)
            panel.second = SecondJudge(commands.second, supervisor(other, log))
        return panel

    return make


class _Complete:
    """A judge that says [COMPLETE] to anything, at once and for nothing."""

    def prepare(self, system: str | None = None) -> None:
        pass

    def decide(
        self, prompt: str, iteration: int, timeout: float | None = None, system: str | None = None
    ) -> Decided:
        text = "[COMPLETE] what do the checks say?"
        return Decided(parse(text), Answer(text, 0.0, 0.0), 1)


def complete_panels(project: Path, log: EventLog) -> Panel:
    """A panel whose judge always says [COMPLETE]: the verdict is then the checks' and the
    tamper guard's alone."""
    return _Panel(_Complete(), None, False)
