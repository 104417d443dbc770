"""A second opinion before "done" (`--second-opinion CMD`): once the judge said [COMPLETE]
and every check and the tamper guard passed, the same prompt goes to another supervisor
command, whose answer decides (`ptysup.run.decision.DecisionPath.settle`).

`auto` picks, at the start, an installed supervisor CLI of another vendor than the
agent's and the judge's (`ptysup.supervisor.judge.JUDGES`): a judge of the same vendor
tends to make the same mistakes.
"""

from __future__ import annotations

import shlex
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ptysup.agents import registry
from ptysup.agents.events import time_left
from ptysup.config import RunConfig
from ptysup.run.decision import Asked, Judge
from ptysup.supervisor.decide import ApiErrorNotWaited, Decided, SupervisorFailed
from ptysup.supervisor.judge import VENDORS, other_judge, takes_system_prompt, vendor

AUTO = "auto"


class SecondJudge:
    """Another supervisor asked the judge's own prompt (`ptysup.run.decision.SecondOpinion`).

    A Claude Code second opinion gets the prompt as the judge had it (the unchanging part
    as its system prompt); any other the whole prompt, the instructions and task in it."""

    def __init__(
        self,
        argv: Sequence[str],
        judge: Judge,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = shlex.join(argv)  # how events, escalations and failures name it
        self._judge = judge
        self._system = takes_system_prompt(argv)
        self._clock = clock

    def review(self, asked: Asked, deadline: float | None = None) -> Decided:
        """Its answer to `asked`. Raises what its supervisor raises, a failure naming it
        (SupervisorFailed, ApiErrorNotWaited), TimeUp at the time budget's end."""
        split = asked.system is not None
        prompt = asked.prompt if self._system or not split else asked.whole
        system = asked.system if self._system else None
        try:
            return self._judge.decide(
                prompt,
                asked.moment.iteration,
                time_left(deadline, self._clock()),
                system=system,
            )
        except SupervisorFailed as exc:
            raise SupervisorFailed(f"the second opinion ({self.name}) failed: {exc}") from exc
        except ApiErrorNotWaited as exc:
            raise ApiErrorNotWaited(f"the second opinion ({self.name}): {exc}") from exc


@dataclass(frozen=True)
class Choice:
    """The second opinion a run starts with, and for `auto` how it was picked."""

    argv: tuple[str, ...] | None  # None: none (or `auto` found none: `refusal`)
    auto: bool = False
    agent: str | None = None  # the agent's vendor (None: not one of VENDORS)
    judge: str | None = None  # the judge's

    def said(self) -> str:
        """The one line that says which `auto` picked."""
        argv = self.argv or ()
        return f"second opinion: {shlex.join(argv)} (auto: another vendor than {self._whose()})"

    def refusal(self) -> str:
        """Why `auto` found none, and what to do."""
        others = [v for v in VENDORS if v not in (self.agent, self.judge)]
        return (
            f"--second-opinion auto: no supervisor CLI of another vendor than "
            f"{self._whose()} is installed: install one of {', '.join(others)}, "
            "or name a command"
        )

    def _whose(self) -> str:
        return (
            f"the agent's ({self.agent or 'unknown'}) and the judge's ({self.judge or 'unknown'})"
        )


def choose(config: RunConfig, path: str | None = None) -> Choice:
    """The run's second opinion: `--second-opinion` as given, or for `auto` the first
    installed judge CLI (on `path`, else $PATH) of a vendor that neither the agent nor
    the judge is; `argv` None then when there is none."""
    given = config.second_opinion
    if given != (AUTO,):
        return Choice(given)
    kind = registry.find(config.agent_cmd, config.agent).name
    agent = kind if kind in VENDORS else vendor(config.agent_cmd)
    judge = vendor(config.supervisor_cmd)
    argv = other_judge((agent, judge), lambda program: shutil.which(program, path=path) is not None)
    return Choice(argv, auto=True, agent=agent, judge=judge)
