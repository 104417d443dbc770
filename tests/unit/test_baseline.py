"""The checks' baseline: every command once before the agent starts, and the gates that
cannot tell done from not done; a stop signal ends it at once."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from ptysup.agents.events import Interrupted
from ptysup.events import EventLog
from ptysup.plan.schema import Plan, Step
from ptysup.run.baseline import Gate, gates, run_baseline
from ptysup.run.startstate import interruptible
from ptysup.run.verify import Verifier, VerifyResult, VerifyStop
from tests.helpers import EventList, wait_for

TESTS = ("pytest", "-q")
LINT = ("ruff", "check")


class Runs:
    """Verifiers that pass the commands in `passing`, and remember what ran."""

    def __init__(self, passing: set[tuple[str, ...]]) -> None:
        self.passing = passing
        self.ran: list[tuple[str, ...]] = []

    def __call__(self, commands: Sequence[tuple[str, ...]]) -> Runs:
        self.commands = list(commands)
        return self

    def run(self, deadline: float | None = None) -> list[VerifyResult]:
        self.ran += self.commands
        return [VerifyResult(c, 0 if c in self.passing else 1, "out", 0.1) for c in self.commands]


def test_the_gates_of_a_run_and_of_a_plan() -> None:
    assert gates([TESTS], None) == [Gate("--verify", (TESTS,))]
    assert gates([], None) == []
    plan = Plan(
        (
            Step("write", "write tests", verify=((LINT,))),
            Step("docs", "write docs"),
            Step("fix", "fix it", verify=(TESTS, LINT)),
        )
    )
    assert gates([TESTS], plan) == [
        Gate("step write", (LINT, TESTS)),
        Gate("step docs", (TESTS,)),
        Gate("step fix", (TESTS, LINT)),
    ]
    assert gates([], plan) == [Gate("step write", (LINT,)), Gate("step fix", (TESTS, LINT))]


def test_each_command_runs_once_and_the_gates_all_of_whose_checks_pass_are_said() -> None:
    runs = Runs(passing={LINT})
    rec = EventList()
    plan = Plan((Step("lint", "lint", verify=(LINT,)), Step("fix", "fix", verify=(TESTS, LINT))))
    baseline = run_baseline(gates([], plan), runs, EventLog([rec]))
    assert runs.ran == [LINT, TESTS]  # LINT once, though two gates have it
    assert baseline.cannot_tell == ("step lint",)
    assert baseline.warning() == (
        "the checks already pass before any change (step lint): they cannot tell done from "
        "not done; the supervisor is told"
    )
    (event,) = rec.events
    assert event.event == "verify_baseline"
    assert [(r["command"], r["passed"]) for r in event.fields["results"]] == [
        (list(LINT), True),
        (list(TESTS), False),
    ]
    assert (event.fields["all_passed"], event.fields["cannot_tell"]) == (False, ["step lint"])
    assert run_baseline(gates([TESTS], None), Runs(set()), EventLog()).warning() is None


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
def test_a_stop_signal_ends_the_baseline_at_once(tmp_path: Path) -> None:
    stop = VerifyStop()
    began = tmp_path / "began"
    script = f"open({str(began)!r}, 'w').close(); import time; time.sleep(60)"
    slow = Verifier(
        [(sys.executable, "-c", script)],
        cwd=str(tmp_path),
        env=dict(os.environ),
        timeout=120,
        stop=stop,
    )

    def signal_once_it_runs() -> None:  # the handlers are in place once the command runs
        wait_for(began.exists, 30, "the check to start")
        os.kill(os.getpid(), signal.SIGTERM)

    killer = threading.Thread(target=signal_once_it_runs)
    started = time.monotonic()
    killer.start()
    try:
        with pytest.raises(Interrupted) as raised:
            interruptible(
                lambda: run_baseline(
                    [Gate("--verify", tuple(slow.commands))], lambda _: slow, EventLog()
                ),
                stop,
            )
    finally:
        killer.join()
    assert raised.value.signum == signal.SIGTERM
    assert time.monotonic() - started < 30  # not the check's 60 s
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is put back


def test_work_a_signal_cannot_end_is_left_behind_after_the_grace() -> None:
    started, never = threading.Event(), threading.Event()

    def hung() -> None:  # a git command no signal handler can end
        started.set()
        never.wait(60)

    def signal_once_it_runs() -> None:
        started.wait(30)
        os.kill(os.getpid(), signal.SIGINT)

    killer = threading.Thread(target=signal_once_it_runs)
    killer.start()
    began = time.monotonic()
    try:
        with pytest.raises(Interrupted) as raised:
            interruptible(hung, lambda _: None, grace=0.5)
    finally:
        killer.join()
        never.set()
    assert raised.value.signum == signal.SIGINT
    assert time.monotonic() - began < 30
