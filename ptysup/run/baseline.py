"""The checks run once on the untouched project, before the agent starts: a check that
already passes cannot tell done from not done, and the supervisor must know it.

Every --verify command and every command of a plan step's verify runs once (each on its
own, in order, a command named twice only once); the `verify_baseline` event holds each
result. A gate — what must pass for the run, or a plan step, to be done — whose commands
all passed already is said once on stderr and to the supervisor in every prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ptysup.events import EventLog
from ptysup.plan.schema import Plan
from ptysup.run.verify import Verify, VerifyResult

Command = tuple[str, ...]
MakeVerifier = Callable[[Sequence[Command]], Verify]
TAIL = 500  # characters of a command's output kept in the event


@dataclass(frozen=True)
class Gate:
    """What must pass for something to be done: the run (`--verify`) or a plan step."""

    name: str  # "--verify" or "step ID"
    commands: tuple[Command, ...]


def gates(verify: Sequence[Command], plan: Plan | None) -> list[Gate]:
    """The run's gates: --verify alone, or for a plan each step's verify with --verify
    (a step is done when both pass); a gate without a command is left out."""
    if plan is None:
        return [Gate("--verify", tuple(verify))] if verify else []
    out = []
    for step in plan.steps:
        commands = (*step.verify, *verify)
        if commands:
            out.append(Gate(f"step {step.id}", tuple(dict.fromkeys(commands))))
    return out


@dataclass(frozen=True)
class Baseline:
    """Each command's result before any change, and the gates it cannot tell with."""

    results: tuple[VerifyResult, ...]
    cannot_tell: tuple[str, ...]  # gates whose commands all passed already

    def warning(self) -> str | None:
        """The one line said on stderr, or None when every gate can tell."""
        if not self.cannot_tell:
            return None
        return (
            f"the checks already pass before any change ({', '.join(self.cannot_tell)}): "
            "they cannot tell done from not done; the supervisor is told"
        )


def run_baseline(
    the_gates: Sequence[Gate], make: MakeVerifier, log: EventLog, deadline: float | None = None
) -> Baseline:
    """Run every command of `the_gates` once (a stop signal raises Interrupted, the time
    budget TimeUp) and log `verify_baseline`."""
    commands = list(dict.fromkeys(c for g in the_gates for c in g.commands))
    results = tuple(r for c in commands for r in make([c]).run(deadline))
    passed = {r.command for r in results if r.passed}
    cannot = tuple(g.name for g in the_gates if all(c in passed for c in g.commands))
    log.emit(
        "verify_baseline",
        results=[
            {
                "command": list(r.command),
                "exit_code": r.exit_code,
                "passed": r.passed,
                "duration_s": r.duration_s,
                "output_tail": r.output_tail[-TAIL:],
            }
            for r in results
        ],
        all_passed=len(passed) == len(commands),
        cannot_tell=list(cannot),
    )
    return Baseline(results, cannot)


def skipped(log: EventLog) -> None:
    """--no-verify-baseline: the event says the checks were not run before the agent."""
    log.emit("verify_baseline", skipped=True, results=[], all_passed=None, cannot_tell=[])
